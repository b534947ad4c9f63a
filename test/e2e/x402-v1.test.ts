import { wrapAxiosWithPaymentFromConfig } from "@x402/axios";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import axios from "axios";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, inject, it } from "vitest";
import { withPaymentInterceptor } from "x402-axios";
import { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
// @ts-expect-error plain JS helpers shared with the scripts
import { usdcBalance } from "../../scripts/lib/chain.mjs";

// The unmodified x402 v1 clients (x402-fetch 1.2.0, x402-axios 0.7.2: the newest on the registry)
// against the local chain with Circle's real USDC and the real facilitator. They read the 402's
// JSON body (v1 form), sign the same EIP-3009 authorization as v2 clients and retry with X-PAYMENT.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  admin_token: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const buyer = (i: number) => {
  const b = stack.buyers[i];
  if (!b) throw new Error(`the stack has no buyer ${i}`);
  return b;
};
const balance = (who: string): Promise<bigint> => usdcBalance(stack.rpc_url, who);
const ledgerRow = async (requestId: string) =>
  (
    (await (
      await fetch(`${stack.base_url}/api/admin/payments?request_id=${requestId}`, {
        headers: { authorization: `Bearer ${stack.admin_token}` },
      })
    ).json()) as { payments: Record<string, string | number>[] }
  ).payments;

describe("x402 v1 clients pay on the local chain", () => {
  it("x402-fetch: one paid call, the buyer's balance drops by the price, one ledger row; a replay is refused", async () => {
    const b = buyer(4);
    const sent: string[] = [];
    // Records the X-PAYMENT header the client sends, to replay it by hand afterwards.
    const recording: typeof fetch = async (input, init) => {
      const h = new Headers(init?.headers);
      const x = h.get("x-payment");
      if (x) sent.push(x);
      return fetch(input, init);
    };
    const pay = wrapFetchWithPayment(recording, await createSigner("base", b.privateKey));
    const [buyerBefore, payToBefore] = await Promise.all([balance(b.address), balance(stack.pay_to)]);
    const res = await pay(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "abc" }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { hex: string }).hex).toMatch(/^ba7816bf/);
    const receipt = decodeXPaymentResponse(res.headers.get("x-payment-response") ?? "");
    expect(receipt).toMatchObject({ success: true, network: "base", payer: b.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(buyerBefore - (await balance(b.address))).toBe(3000n);
    expect((await balance(stack.pay_to)) - payToBefore).toBe(3000n);
    const rows = await ledgerRow(res.headers.get("x-request-id") ?? "");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ resource: "sha256", amount_atomic: 3000, tx_hash: receipt.transaction });

    expect(sent).toHaveLength(1);
    const replay = await fetch(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-payment": sent[0] as string },
      body: JSON.stringify({ text: "abc" }),
    });
    expect(replay.status).toBe(402);
    // Refused by the D1 claim, or already by the facilitator's verify (the nonce is spent on chain).
    expect(((await replay.json()) as { reason: string }).reason).toMatch(
      /^(payment_authorization_reused|invalid_exact_evm_.*)$/,
    );
    expect(buyerBefore - (await balance(b.address))).toBe(3000n);
  });

  it("x402-axios: one paid call through the interceptor, the same rules", async () => {
    const b = buyer(5);
    const client = withPaymentInterceptor(
      axios.create({ baseURL: stack.base_url }),
      await createSigner("base", b.privateKey),
    );
    const before = await balance(b.address);
    const res = await client.post("/api/skills/slugify", { text: "Crème Brûlée" });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ slug: "creme-brulee" });
    const receipt = decodeXPaymentResponse(String(res.headers["x-payment-response"]));
    expect(receipt).toMatchObject({ success: true, network: "base" });
    expect(before - (await balance(b.address))).toBe(3000n);
    expect(await ledgerRow(String(res.headers["x-request-id"]))).toHaveLength(1);
  });

  it("a v1 payment with a bad body is a 422 and moves nothing", async () => {
    const b = buyer(4);
    const pay = wrapFetchWithPayment(fetch, await createSigner("base", b.privateKey));
    const before = await balance(b.address);
    const res = await pay(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: 5 }),
    });
    expect(res.status).toBe(422);
    expect(await balance(b.address)).toBe(before);
  });

  it("x402-fetch pays a partner try route in v1 too", async () => {
    const b = buyer(4);
    const pay = wrapFetchWithPayment(fetch, await createSigner("base", b.privateKey));
    const before = await balance(b.address);
    const res = await pay(`${stack.base_url}/api/partners/textkit/try/base64`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "hi" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, partner_id: "textkit" });
    expect(decodeXPaymentResponse(res.headers.get("x-payment-response") ?? "")).toMatchObject({
      success: true,
    });
    expect(before - (await balance(b.address))).toBe(9000n);
  });
});

describe("v2 clients still read the PAYMENT-REQUIRED header, not the v1 body", () => {
  it("@x402/axios pays one call with a v2 PAYMENT-SIGNATURE and gets a v2 PAYMENT-RESPONSE", async () => {
    const b = buyer(5);
    const sentHeaders: string[] = [];
    const instance = axios.create({ baseURL: stack.base_url });
    instance.interceptors.request.use((config) => {
      sentHeaders.push(...Object.keys(config.headers ?? {}).map((h) => h.toLowerCase()));
      return config;
    });
    const api = wrapAxiosWithPaymentFromConfig(instance, {
      schemes: [{ network: "eip155:8453", client: new ExactEvmScheme(privateKeyToAccount(b.privateKey)) }],
    });
    const before = await balance(b.address);
    const res = await api.post("/api/skills/json-sort", { data: { b: 1, a: 2 } });
    expect(res.status).toBe(200);
    expect(sentHeaders).toContain("payment-signature");
    expect(sentHeaders).not.toContain("x-payment");
    const receipt = decodePaymentResponseHeader(String(res.headers["payment-response"]));
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(res.headers["x-payment-response"]).toBeUndefined();
    expect(before - (await balance(b.address))).toBe(3000n);
  });
});
