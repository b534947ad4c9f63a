import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { unsignedPayment } from "../fixtures/payments";

// Settle answers the suite did not pin down (found by mutating settlement.ts): a coded refusal
// that names a transaction may have landed, so it is never taken for a definite failure. The
// facilitator is a fetch double, as in facilitator-answers.test.ts.
const FACILITATOR = "https://facilitator.test";
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: FACILITATOR };
const app = createApp();
const TX = `0x${"33".repeat(32)}`;

afterEach(() => {
  vi.restoreAllMocks();
});

/** The facilitator double: verifies every payment; each settle answered by `settle(payer)`. */
function facilitatorAnswering(settle: (payer: string) => Record<string, unknown>) {
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
    return Response.json(settle(payer));
  });
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

/** A payment for sha256 from `from`, with its claim's key. */
async function payment(from: string) {
  const offer = await post({});
  expect(offer.status).toBe(402);
  const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
  const { payload, nonce } = unsignedPayment(required, from);
  const { network, asset } = payload.accepted;
  return {
    header: encodePaymentSignatureHeader(payload),
    key: `${network}:${asset}:${from}:${nonce}`.toLowerCase(),
  };
}

const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1").bind(key).first<{ status: string }>();

describe("a coded settle refusal that names a transaction", () => {
  it("is unconfirmed, not failed: 502, the claim kept for reconciliation, the authorization not reusable", async () => {
    // A mutant that answered every coded refusal "failed" survived: the claim was released, the
    // buyer told to sign again, and a transfer that had landed was never reconciled (paid twice).
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
