import { env } from "cloudflare:test";
import type { PaymentRequirements } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  PRICEFEED_WALLET,
  paidCall,
  payoutRows,
  send,
  stubNetwork,
  tryEnv,
  upstreamRows,
  x402Partner,
} from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

const TEXTKIT_WALLET = "0x2222222222222222222222222222222222222222";
const served = () => Response.json({ ok: true });
const signatures = (calls: { req: Request }[]) => calls.map((c) => c.req.headers.get("payment-signature"));

describe("try: the operating wallet signs only the listed terms (payee, asset, network, EIP-3009, price)", () => {
  it.each<[string, string, string, Partial<PaymentRequirements>, RegExp]>([
    // textkit listed at 0.003 with its own wallet; the 402 names pricefeed's wallet.
    [
      "another partner's payee",
      "textkit",
      "base64",
      { payTo: PRICEFEED_WALLET },
      /pays 0x1111.* not .*0x2222/,
    ],
    [
      "a permit2 transfer",
      "pricefeed",
      "price",
      { extra: { name: "USD Coin", version: "2", assetTransferMethod: "permit2" } },
      /permit2/,
    ],
    ["another asset", "pricefeed", "price", { asset: `0x${"ab".repeat(20)}` }, /asset 0xabab/],
    ["another network", "pricefeed", "price", { network: "eip155:1" }, /network eip155:1/],
  ])(
    "a 402 asking for %s: 502 before the caller is charged, nothing signed",
    async (_n, partner, service, terms, why) => {
      const amount = partner === "textkit" ? "3000" : "10000";
      const { partnerCalls, settled } = stubNetwork(x402Partner(amount, served, terms));
      const res = await paidCall(`/api/partners/${partner}/try/${service}`, {
        method: partner === "textkit" ? "POST" : "GET",
      });
      expect(res.status).toBe(502);
      const body = await res.json<{ detail: string }>();
      expect(body).toMatchObject({ charged: false, upstream_status: 402, partner_id: partner });
      expect(body.detail).toMatch(why);
      expect(res.headers.get("payment-response")).toBeNull();
      expect(settled).toHaveLength(0);
      expect(signatures(partnerCalls)).toEqual([null]);
      expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([]);
    },
  );

  it("PARTNER_WALLETS names a partner's real wallet: the listing shows it, the operating wallet pays it and no other", async () => {
    const real = "0x00000000000000000000000000000000000c0ffe";
    const e = { ...tryEnv, PARTNER_WALLETS: JSON.stringify({ pricefeed: real }) };
    const listed = await (await send("/api/partners/pricefeed", {}, e)).json<{ ownership_wallet: string }>();
    expect(listed.ownership_wallet).toBe(real);
    // Paid to the configured wallet...
    const paid = stubNetwork(x402Partner("10000", served, { payTo: real }));
    const ok = await paidCall("/api/partners/pricefeed/try/price", {}, e);
    expect(ok.status).toBe(200);
    expect(signatures(paid.partnerCalls).filter(Boolean)).toHaveLength(1);
    vi.restoreAllMocks();
    // ...and the listing's placeholder is now refused like any other payee.
    const placeholder = stubNetwork(x402Partner("10000", served, { payTo: PRICEFEED_WALLET }));
    const refused = await paidCall("/api/partners/pricefeed/try/price", {}, e);
    expect(refused.status).toBe(502);
    expect(await refused.json()).toMatchObject({ charged: false, upstream_status: 402 });
    expect(placeholder.settled).toHaveLength(0);
  });

  it.each([
    ['{"pricefeed":"0x123"}', /\["pricefeed"\] is not a 0x wallet address/],
    ["[]", /not a JSON object/],
    ["{nope", /not valid JSON/],
  ])("PARTNER_WALLETS=%s is the documented 503, not a crash", async (value, message) => {
    const res = await send("/api/partners", {}, { ...tryEnv, PARTNER_WALLETS: value });
    expect(res.status).toBe(503);
    expect((await res.json<{ detail: string }>()).detail).toMatch(message);
  });

  it("a price above the listing (0.020001 for price_coin at 0.02): 502 that says so, caller never settled", async () => {
    const { partnerCalls, settled } = stubNetwork(x402Partner("20001", served));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    const body = await res.json<{ detail: string }>();
    expect(body).toMatchObject({ charged: false, upstream_status: 402 });
    expect(body.detail).toMatch(/20001 .*above the listed 20000/);
    expect(settled).toHaveLength(0);
    expect(signatures(partnerCalls)).toEqual([null]);
  });

  it("an x402 v1 offer (in the body): 502 that says so, caller never settled", async () => {
    const { settled } = stubNetwork(() =>
      Response.json(
        {
          x402Version: 1,
          error: "payment required",
          accepts: [
            {
              scheme: "exact",
              network: "base",
              maxAmountRequired: "10000",
              resource: "https://pricefeed.test/price",
              description: "",
              mimeType: "application/json",
              payTo: PRICEFEED_WALLET,
              maxTimeoutSeconds: 300,
              asset: env.USDC_ADDRESS,
              extra: { name: "USD Coin", version: "2" },
            },
          ],
        },
        { status: 402 },
      ),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    const body = await res.json<{ detail: string }>();
    expect(body).toMatchObject({ charged: false, upstream_status: 402 });
    expect(body.detail).toMatch(/v1/);
    expect(settled).toHaveLength(0);
  });

  it("a 402 with no offer at all: 502, caller never settled", async () => {
    const { settled } = stubNetwork(() => Response.json({}, { status: 402 }));
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: false, upstream_status: 402 });
    expect(settled).toHaveLength(0);
  });

  it("the listed terms with the asset and payee in other letter cases are paid", async () => {
    const { settled } = stubNetwork(
      x402Partner("3000", served, {
        payTo: TEXTKIT_WALLET,
        asset: env.USDC_ADDRESS.toUpperCase().replace("0X", "0x"),
      }),
    );
    const res = await paidCall("/api/partners/textkit/try/base64", { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true });
    expect(settled).toHaveLength(1);
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
      expect.objectContaining({ partner_id: "textkit", pay_to: TEXTKIT_WALLET, amount_micro: 3000 }),
    ]);
  });

  it("a partner that changes its terms once the caller paid is still not paid: the caller is refunded in full", async () => {
    // First 402: textkit's own wallet (passes the check before the charge); the paying retry's
    // 402 names another wallet, which the operating wallet refuses to sign.
    let asked = 0;
    const { partnerCalls, settled } = stubNetwork((req) =>
      x402Partner("3000", served, { payTo: asked++ === 0 ? TEXTKIT_WALLET : PRICEFEED_WALLET })(req),
    );
    const res = await paidCall("/api/partners/textkit/try/base64", { method: "POST" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      upstream_status: 402,
      refund: { status: "refunded", amount_usd: 0.009 },
    });
    expect(signatures(partnerCalls)).toEqual([null, null]);
    // The caller's settlement, then its full refund.
    expect(settled).toHaveLength(2);
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([]);
    expect(await payoutRows(id)).toEqual([]);
  });
});

describe("try: a garbled partner 402 is refused before the caller is charged, never a 500", () => {
  it.each([
    ["an undecodable PAYMENT-REQUIRED", { "payment-required": "%%%not base64%%%" }],
    [
      "offers that are not objects",
      { "payment-required": btoa(JSON.stringify({ x402Version: 2, accepts: [null, 7, "x"] })) },
    ],
  ])("%s: 502, charged false", async (_name, headers) => {
    const { settled } = stubNetwork(() => Response.json({}, { status: 402, headers }));
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: false, upstream_status: 402 });
    expect(settled).toHaveLength(0);
  });
});
