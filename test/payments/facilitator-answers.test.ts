import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { reconcile } from "../../src/payments/reconcile";
import type { ChainReader, FoundUse } from "../../src/payments/reconcile-chain";
import { unsignedPayment } from "../fixtures/payments";
import { mcpCall } from "../helpers";

// What the Worker takes from a /settle answer that says success: only that it settled, and in
// which transaction. The facilitator is a service we call, not the party our ledger reads who paid
// what: the payments row is the route's requirements and the authorization's signer, and a success
// that names no transaction is unconfirmed (settlement.ts). The facilitator is a fetch double here,
// so each test chooses its answer.
const FACILITATOR = "https://facilitator.test";
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: FACILITATOR };
const app = createApp();
const TX = `0x${"22".repeat(32)}`;
const STRANGER = "0x00000000000000000000000000000000000dEaD0";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * The facilitator double: verifies every payment; each settle answered by `settle(payer)`, a
 * Response as it is, anything else as a 200 JSON body.
 */
function facilitatorAnswering(settle: (payer: string) => Record<string, unknown> | Response) {
  const settled: PaymentPayload[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const { origin, pathname } = new URL(req.url);
    if (origin !== FACILITATOR) return realFetch(input, init);
    if (pathname === "/supported")
      return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
    const { paymentPayload } = await req.json<{ paymentPayload: PaymentPayload }>();
    const payer = (paymentPayload.payload as { authorization: { from: string } }).authorization.from;
    if (pathname === "/verify") return Response.json({ isValid: true, payer });
    settled.push(paymentPayload);
    const answer = settle(payer);
    return answer instanceof Response ? answer : Response.json(answer);
  });
  return { settled };
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  app.fetch(
    new Request("https://skills.test/api/skills/sha256", {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    }),
    paidEnv,
  );

/** A payment for sha256 (3000 atomic) from `from`, with its claim's key. */
async function payment(from: string) {
  const offer = await post({});
  expect(offer.status).toBe(402);
  const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
  const { payload, nonce } = unsignedPayment(required, from);
  const { network, asset } = payload.accepted;
  return {
    header: encodePaymentSignatureHeader(payload),
    key: `${network}:${asset}:${from}:${nonce}`.toLowerCase(),
    nonce,
  };
}

/**
 * An MCP sha256 call paid from `from` whose settlement the facilitator double leaves unconfirmed:
 * the transport's settlement failure (isError, the offer, reason settlement_unconfirmed, a settle
 * response that is no success), never the result. `key`: its claim's key.
 */
async function mcpUnconfirmed(from: string) {
  const unpaid = (await mcpCall(app, paidEnv, "sha256", { text: "abc" })).result;
  const offer = unpaid.structuredContent as unknown as PaymentRequired;
  const { payload, nonce } = unsignedPayment(offer, from);
  const { result } = await mcpCall(app, paidEnv, "sha256", { text: "abc" }, { "x402/payment": payload });
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toMatchObject({
    x402Version: 2,
    accepts: offer.accepts,
    reason: "settlement_unconfirmed",
    "x402/payment-response": { success: false, transaction: "", network: env.X402_NETWORK },
  });
  expect(result.structuredContent).not.toHaveProperty("hex");
  const { network, asset } = payload.accepted;
  return { result, key: `${network}:${asset}:${from}:${nonce}`.toLowerCase() };
}

const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1").bind(key).first<{ status: string }>();
const ledgerRow = (key: string) =>
  env.DB.prepare("SELECT amount_atomic, network, payer, tx_hash FROM payments WHERE nonce = ?1")
    .bind(key)
    .first();

describe("the ledger records what was paid, not what the facilitator says was", () => {
  it.each([
    ["another payer, network and amount", { network: "eip155:1", payer: STRANGER, amount: "1" }],
    ["an amount that is no number", { amount: "lots" }],
  ])(
    "a settle answer naming %s: 200, and the row is the route's price from the signer",
    async (_name, answer) => {
      const from = "0x00000000000000000000000000000000000b0001";
      facilitatorAnswering((payer) => ({
        success: true,
        transaction: TX,
        network: env.X402_NETWORK,
        payer,
        ...answer,
      }));
      const errors = vi.spyOn(console, "error");
      const pay = await payment(from);
      const res = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(res.status).toBe(200);
      expect(await nonceRow(pay.key)).toEqual({ status: "settled" });
      expect(await ledgerRow(pay.key)).toEqual({
        amount_atomic: 3000,
        network: env.X402_NETWORK,
        payer: from,
        tx_hash: TX,
      });
      // The signed receipt vouches for the same terms, not for the facilitator's.
      const jws = res.headers.get("x-payment-receipt") as string;
      const claims = JSON.parse(atob((jws.split(".")[1] as string).replace(/-/g, "+").replace(/_/g, "/")));
      expect(claims).toMatchObject({
        payer: from,
        network: env.X402_NETWORK,
        amount: "3000",
        transaction: TX,
      });
      // Said loudly: a facilitator that misreports a payment is one to look into.
      expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).toMatch(
        /facilitator settlement disagrees with the payment: .*amount/,
      );
    },
  );

  it("an honest answer is recorded as ever, and logs nothing", async () => {
    const from = "0x00000000000000000000000000000000000b0002";
    facilitatorAnswering((payer) => ({ success: true, transaction: TX, network: env.X402_NETWORK, payer }));
    const errors = vi.spyOn(console, "error");
    const pay = await payment(from);
    const res = await post({ text: "abc" }, { "payment-signature": pay.header });
    expect(res.status).toBe(200);
    expect(await ledgerRow(pay.key)).toMatchObject({ amount_atomic: 3000, payer: from, tx_hash: TX });
    expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).not.toMatch(/disagrees/);
  });
});

describe("a success that names no transaction is not taken as settled", () => {
  it.each([
    ["an empty transaction", ""],
    ["a transaction that is no 32-byte hash", "0x1234"],
    ["no transaction at all", undefined],
  ])(
    "%s: 502 settlement_unconfirmed, the result withheld, the claim kept for reconciliation",
    async (_name, transaction) => {
      const from = "0x00000000000000000000000000000000000b0003";
      const { settled } = facilitatorAnswering((payer) => ({
        success: true,
        ...(transaction === undefined ? {} : { transaction }),
        network: env.X402_NETWORK,
        payer,
      }));
      const pay = await payment(from);
      const res = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(res.status).toBe(502);
      const body = await res.json<Record<string, unknown>>();
      expect(body).toMatchObject({ reason: "settlement_unconfirmed" });
      expect(body).not.toHaveProperty("hex");
      // The facilitator's "success" is not handed on as a settlement either.
      expect(res.headers.get("payment-response")).toBeNull();
      expect(settled).toHaveLength(1);
      expect(await nonceRow(pay.key)).toEqual({ status: "failed" });
      expect(await ledgerRow(pay.key)).toBeNull();
      // The same authorization cannot buy another call meanwhile.
      const again = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(again.status).toBe(402);
      expect((await again.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
    },
  );

  it("over MCP: the transport's settlement failure, whose settle response is no success", async () => {
    facilitatorAnswering((payer) => ({ success: true, transaction: "", network: env.X402_NETWORK, payer }));
    const { result } = await mcpUnconfirmed("0x00000000000000000000000000000000000b0004");
    expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: false });
  });
});

describe("a coded settle refusal that names a transaction", () => {
  it("is unconfirmed, not failed: 502, the claim kept for reconciliation, the authorization not reusable", async () => {
    // A mutant (settlement.ts) that answered every coded refusal "failed" survived the suite: the
    // claim was released, the buyer told to sign again, and a transfer that had landed was never
    // reconciled (paid twice).
    const from = "0x00000000000000000000000000000000000c0001";
    facilitatorAnswering((payer) => ({
      success: false,
      errorReason: "invalid_exact_evm_payload_authorization_value",
      transaction: TX,
      network: env.X402_NETWORK,
      payer,
    }));
    const pay = await payment(from);
    const res = await post({ text: "abc" }, { "payment-signature": pay.header });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ reason: "settlement_unconfirmed", transaction: TX });
    expect(await nonceRow(pay.key)).toEqual({ status: "failed" });
    const again = await post({ text: "abc" }, { "payment-signature": pay.header });
    expect(again.status).toBe(402);
    expect((await again.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
  });

  it("with no transaction it is a definite failure: 402, and the authorization is free again", async () => {
    const from = "0x00000000000000000000000000000000000c0002";
    facilitatorAnswering((payer) => ({
      success: false,
      errorReason: "invalid_exact_evm_payload_authorization_value",
      transaction: "",
      network: env.X402_NETWORK,
      payer,
    }));
    const pay = await payment(from);
    const res = await post({ text: "abc" }, { "payment-signature": pay.header });
    expect(res.status).toBe(402);
    expect(await nonceRow(pay.key)).toBeNull();
  });
});

/** A settle answer with no transaction, `errorReason` and HTTP `status`, as a facilitator sends it. */
const codedAnswer = (errorReason: string, status: number) => (payer: string) =>
  Response.json(
    { success: false, errorReason, transaction: "", network: env.X402_NETWORK, payer },
    { status },
  );

describe("a settle answer with no transaction is a definite failure only for a known refusal before sending", () => {
  // Every coded answer used to count as "nothing moved": 402 "You were not charged", the claim
  // dropped, no ledger row, and reconciliation (which reads only claims) never looked again. A
  // facilitator that failed after broadcasting kept the buyer's money for nothing.
  it.each([
    ["the facilitator's own unexpected_settle_error, HTTP 500", "unexpected_settle_error", 500],
    ["the facilitator's own unexpected_settle_error, HTTP 200", "unexpected_settle_error", 200],
    ["a code on a 503 (service_unavailable)", "service_unavailable", 503],
    ["a known refusal sent with a 500", "insufficient_funds", 500],
    ["a known refusal sent with a 429", "insufficient_funds", 429],
    ["a code we do not know, HTTP 200", "settlement_rejected", 200],
    [
      "invalid_transaction_state (a transaction failed or was rejected), HTTP 200",
      "invalid_transaction_state",
      200,
    ],
    // What @x402/evm's facilitator with simulateInSettle answered on the local chain once a third
    // party had submitted the buyer's authorization between our /verify and our /settle
    // (test/e2e/frontrun.test.ts): nothing of ours was sent, but the buyer's transfer had landed.
    [
      "invalid_exact_evm_transaction_simulation_failed (the authorization spent since /verify), HTTP 200",
      "invalid_exact_evm_transaction_simulation_failed",
      200,
    ],
  ])(
    "%s: 502 settlement_unconfirmed with Retry-After, the claim kept for reconciliation, no ledger row",
    async (_name, reason, status) => {
      const from = `0x00000000000000000000000000000000000e${String(status).padStart(4, "0")}`;
      facilitatorAnswering(codedAnswer(reason, status));
      const pay = await payment(from);
      const res = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(res.status).toBe(502);
      const body = await res.json<Record<string, unknown>>();
      expect(body).toMatchObject({ reason: "settlement_unconfirmed" });
      expect(String(body.facilitator_reason)).toContain(reason);
      // Both outcomes reconciliation may find: landed (recorded, refunded) or never (released).
      expect(body.detail).toMatch(/records it under this request id and refunds it/);
      expect(body.detail).toMatch(/if it never does, nothing is charged and the authorization is released/);
      expect(body).not.toHaveProperty("hex");
      expect(res.headers.get("retry-after")).toBe("10");
      expect(await nonceRow(pay.key)).toEqual({ status: "failed" });
      expect(await ledgerRow(pay.key)).toBeNull();
      const again = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(again.status).toBe(402);
      expect((await again.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
    },
  );

  it.each([
    ["insufficient_funds", 400],
    ["invalid_exact_evm_payload_authorization_valid_before", 200],
  ])(
    "a known refusal before sending (%s, HTTP %s) is still a 402, and the authorization is free again",
    async (reason, status) => {
      const from = "0x00000000000000000000000000000000000e0400";
      facilitatorAnswering(codedAnswer(reason, status));
      const pay = await payment(from);
      const res = await post({ text: "abc" }, { "payment-signature": pay.header });
      expect(res.status).toBe(402);
      expect(await res.json()).toMatchObject({ reason });
      expect(await nonceRow(pay.key)).toBeNull();
    },
  );

  it("over MCP: a 500 unexpected_settle_error is the transport's settlement failure, unconfirmed", async () => {
    facilitatorAnswering(codedAnswer("unexpected_settle_error", 500));
    const { key } = await mcpUnconfirmed("0x00000000000000000000000000000000000e0500");
    expect(await nonceRow(key)).toEqual({ status: "failed" });
  });
});

describe("reconciliation decides a claim kept after a facilitator error", () => {
  it("landed: recorded as paid in its transaction, and the withheld call's price owed back; expired unused: released", async () => {
    facilitatorAnswering(codedAnswer("unexpected_settle_error", 500));
    const landedFrom = "0x00000000000000000000000000000000000e1001";
    const unusedFrom = "0x00000000000000000000000000000000000e1002";
    const landed = await payment(landedFrom);
    const unused = await payment(unusedFrom);
    const first = await post({ text: "abc" }, { "payment-signature": landed.header });
    expect(first.status).toBe(502);
    const { request_id: requestId } = await first.json<{ request_id: string }>();
    expect((await post({ text: "abc" }, { "payment-signature": unused.header })).status).toBe(502);

    // The chain, an hour on (both authorizations expired): the first transfer landed.
    const head = Math.floor(Date.now() / 1000) + 3600;
    const uses = new Map<string, FoundUse>([
      [
        landed.nonce,
        { txHash: TX, blockNumber: 490, transfer: { from: landedFrom, to: env.PAY_TO, value: 3000n } },
      ],
    ]);
    const reader: ChainReader = {
      chainId: async () => Number(env.X402_NETWORK.split(":")[1]),
      head: async () => ({ number: 500, timestamp: head, blockSeconds: 2 }),
      blockTime: async (n) => head - (500 - n) * 2,
      authorizationUsed: async (_asset, _who, nonce) => uses.has(nonce),
      findUse: async (_asset, _who, nonce) => uses.get(nonce),
    };
    await reconcile(paidEnv, reader);

    expect(await nonceRow(landed.key)).toEqual({ status: "settled" });
    expect(await ledgerRow(landed.key)).toMatchObject({
      amount_atomic: 3000,
      payer: landedFrom,
      tx_hash: TX,
    });
    // The result was withheld (the 502), so its whole price is the buyer's again.
    const refund = await env.DB.prepare("SELECT payer, amount_micro FROM refunds WHERE request_id = ?1")
      .bind(requestId)
      .first();
    expect(refund).toEqual({ payer: landedFrom, amount_micro: 3000 });
    // Its authorization can no longer move anything: the claim is closed, with no payment.
    expect(await nonceRow(unused.key)).toEqual({ status: "released" });
    expect(await ledgerRow(unused.key)).toBeNull();
  });
});
