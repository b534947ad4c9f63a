import { env } from "cloudflare:test";
import { decodePaymentSignatureHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  PARTNER_TX,
  paidCall,
  payoutRows,
  receipt,
  send,
  stubNetwork,
  tryEnv,
  upstreamRows,
  x402Partner,
} from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("try: money paid upstream from the operating wallet is always recorded", () => {
  it("a paid 2xx without a receipt header still counts as paid upstream; the caller's row is not owed", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ prices: { btc: 1 } })));
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, upstream_status: 200 });
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([
      expect.objectContaining({
        partner_id: "pricefeed",
        service_id: "price",
        amount_micro: 10000,
        tx_hash: null,
        upstream_status: 200,
      }),
    ]);
    expect(await payoutRows(id)).toEqual([
      expect.objectContaining({ partner_share_micro: 10000, paid_upstream: 1, batch_id: null }),
    ]);
  });

  it("a partner receipt whose transaction is no 32-byte hash records none (reconciliation fills it in from the chain)", async () => {
    for (const transaction of ["", "0x1234"]) {
      const bogus = {
        "payment-response": encodePaymentResponseHeader({
          success: true,
          transaction,
          network: env.X402_NETWORK as `${string}:${string}`,
          amount: "10000",
        }),
      };
      stubNetwork(x402Partner("10000", () => Response.json({ prices: { btc: 1 } }, { headers: bogus })));
      const res = await paidCall("/api/partners/pricefeed/try/price");
      expect(res.status).toBe(200);
      expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
        expect.objectContaining({ amount_micro: 10000, tx_hash: null }),
      ]);
      vi.restoreAllMocks();
    }
  });

  it("a partner paid less than its listed price: the payout row records what it was paid, the rest is our fee", async () => {
    stubNetwork(x402Partner("1", () => Response.json({ eth: 1 }, { headers: receipt("1") })));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(200);
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([expect.objectContaining({ amount_micro: 1 })]);
    expect(await payoutRows(id)).toEqual([
      expect.objectContaining({ partner_share_micro: 1, marketplace_fee_micro: 59999, paid_upstream: 1 }),
    ]);
  });

  it("an operating key that is not a 0x private key counts as unset: refused before the caller is charged", async () => {
    const { settled, partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: {} }, { headers: receipt("10000") })),
    );
    // No 0x; and 0x + 64 hex that is no secp256k1 key (zero).
    for (const key of [tryEnv.PARTNER_PAYER_KEY.slice(2), `0x${"0".repeat(64)}`]) {
      const res = await paidCall(
        "/api/partners/pricefeed/try/price",
        {},
        { ...tryEnv, PARTNER_PAYER_KEY: key },
      );
      expect(res.status).toBe(502);
      expect(await res.json()).toMatchObject({ charged: false });
    }
    expect(settled).toHaveLength(0);
    // The partner saw only unpaid requests, and was never paid.
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null, null]);
  });

  it("a caller whose payment does not settle never costs us the partner's price (issue 19.1)", async () => {
    const { settled, partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: {} }, { headers: receipt("10000") })),
      { settles: false },
    );
    const rows = () => env.DB.prepare("SELECT count(*) AS n FROM upstream_payments").first<number>("n");
    const before = await rows();
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(402);
    expect((await res.json<{ reason: string }>()).reason).toBe("insufficient_funds");
    // The caller was settled first and that failed: the partner saw only the unpaid request.
    expect(settled).toHaveLength(1);
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    expect(await rows()).toBe(before);
  });

  it("a caller settlement that may have landed (nonce already spent) is 502 settlement_unconfirmed, kept for reconciliation, and the partner is not paid", async () => {
    const { settled, partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: {} }, { headers: receipt("10000") })),
      { settles: "nonce spent" },
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ reason: "settlement_unconfirmed" });
    expect(settled).toHaveLength(1);
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    const claim = await env.DB.prepare("SELECT status FROM payment_nonces WHERE request_id = ?1")
      .bind(res.headers.get("x-request-id"))
      .first<{ status: string }>();
    expect(claim).toEqual({ status: "failed" });
  });

  it("the partner took our payment but answered non-2xx: the caller, settled first, gets back what we kept", async () => {
    const { settled } = stubNetwork(
      x402Partner("20000", () =>
        Response.json({ error: "boom" }, { status: 500, headers: receipt("20000") }),
      ),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      paid_upstream: true,
      upstream_status: 500,
      refund: { status: "refunded", amount_usd: 0.04 },
    });
    // The caller's settlement, then the refund from the operating wallet to the caller.
    expect(settled).toHaveLength(2);
    const [callerSettle, refundSettle] = settled as [PaymentPayload, PaymentPayload];
    const refundAuth = (refundSettle.payload as { authorization: { to: string; value: string } })
      .authorization;
    const callerAuth = (callerSettle.payload as { authorization: { from: string } }).authorization;
    expect(refundAuth).toMatchObject({ to: callerAuth.from, value: "40000" });
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([
      expect.objectContaining({ amount_micro: 20000, tx_hash: PARTNER_TX, upstream_status: 500 }),
    ]);
    expect(await payoutRows(id)).toEqual([]);
    const report = await (
      await send("/api/admin/payouts", { headers: { authorization: "Bearer t0ken-0123456789abcdefghij" } })
    ).json<{ refunds: Record<string, unknown>[] }>();
    expect(report.refunds.find((r) => r.request_id === id)).toMatchObject({
      amount_micro: 40000,
      withheld_micro: 20000,
      status: "refunded",
    });
  });
});

describe("try: an authorization handed to a partner is recorded even without an answer", () => {
  it("the paid request fails in transit: 502, the signed amount recorded and withheld from the refund", async () => {
    const { settled } = stubNetwork(
      x402Partner("20000", () => {
        throw new TypeError("Network connection lost.");
      }),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.04 },
    });
    expect(settled).toHaveLength(2);
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
      expect.objectContaining({ amount_micro: 20000, tx_hash: null, upstream_status: 0 }),
    ]);
  });
});

describe("try: one authorization per call, however the partner redirects", () => {
  it("a partner that answers each paid hop with a same-host redirect to another 402 is paid once", async () => {
    // The attack: 402 when unpaid, 302 to /h1, /h2, /h3 once paid (each 402 again), 500 at the end.
    // Paying every hop handed the partner four authorizations for one call sold at 3x one price.
    const handed: string[] = [];
    const partner = x402Partner("20000", () => new Response());
    stubNetwork((req) => {
      const hop = Number(/h(\d)$/.exec(new URL(req.url).pathname)?.[1] ?? 0);
      const signature = req.headers.get("payment-signature");
      if (!signature) return partner(req);
      const paid = decodePaymentSignatureHeader(signature);
      handed.push((paid.payload as { authorization: { nonce: string } }).authorization.nonce);
      if (hop < 3) return new Response(null, { status: 302, headers: { location: `/api/h${hop + 1}` } });
      return Response.json({ error: "boom" }, { status: 500 });
    });
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(handed).toHaveLength(1);
    expect(res.status).toBe(502);
    const body = await res.json<{ charged: boolean; refund: { amount_usd: number } }>();
    // The caller paid 0.06 and gets back what we did not hand over: at most one partner price left us.
    expect(body).toMatchObject({ charged: true, refund: { status: "refunded", amount_usd: 0.04 } });
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
      expect.objectContaining({ amount_micro: 20000 }),
    ]);
  });
});
