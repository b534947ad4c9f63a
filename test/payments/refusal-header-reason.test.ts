import { env } from "cloudflare:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { authorizationFor, unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";

// x402 v2 carries all protocol information in headers: a client that reads only PAYMENT-REQUIRED
// (@x402/core's x402HTTPClient takes the failure reason from its `error`) must tell a refused
// payment from no payment. Refusals decided before the facilitator (and a settlement that
// definitely failed) sent the cached unpaid offer's header unchanged, `error: "Payment required"`,
// whatever the body's reason said.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const ROUTE = "/api/skills/sha256";
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";
/** The facilitator double refuses this payer's settlement before sending (insufficient_funds). */
const INSUFFICIENT_FUNDS = "0x00000000000000000000000000000000000a0002";
const SIGNATURE = `0x${"11".repeat(65)}`;

const post = (headers: Record<string, string> = {}, body: unknown = { text: "abc" }) =>
  app.fetch(
    new Request(`https://skills.test${ROUTE}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );

async function offer(): Promise<PaymentRequired> {
  const res = await post({}, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** A v2 payment for the route with some authorization fields changed. */
function paymentWith(required: PaymentRequired, changes: Record<string, unknown>, from = SETTLES_OK) {
  const accepted = required.accepts[0] as PaymentRequirements;
  return encodePaymentSignatureHeader({
    x402Version: 2,
    resource: required.resource,
    accepted,
    payload: { signature: SIGNATURE, authorization: { ...authorizationFor(accepted, from), ...changes } },
  });
}

/** The PaymentRequired as @x402/core's HTTP client reads it from the answer's headers alone. */
const headerOnly = (res: Response) =>
  new x402HTTPClient(new x402Client()).getPaymentRequiredResponse((name) => res.headers.get(name));

/** The refusal: its header's `error` is the body's `reason`, and the rest is the route's offer. */
async function expectRefusal(
  res: Response,
  reason: string,
  required: PaymentRequired,
  words = /^Payment rejected: /,
) {
  expect(res.status).toBe(402);
  const body = await res.json<{ reason: string; error: string; accepts: unknown[] }>();
  expect(body.reason).toBe(reason);
  expect(body.error).toMatch(words);
  const header = headerOnly(res);
  expect(header.error).toBe(reason);
  // Still the offer to sign again, as the unpaid 402's.
  expect(header.accepts).toEqual(required.accepts);
  expect(header.resource).toEqual(required.resource);
  expect(body.accepts.length).toBeGreaterThan(0);
}

describe("a refused payment's PAYMENT-REQUIRED says why in its error, as the body's reason does", () => {
  it("the unpaid 402 still says Payment required", async () => {
    const res = await post();
    expect(headerOnly(res).error).toBe("Payment required");
    expect((await res.json<{ reason: string }>()).reason).toBe("payment_required");
  });

  it("a replayed authorization: payment_authorization_reused", async () => {
    const required = await offer();
    const { payload } = unsignedPayment(required, SETTLES_OK);
    const header = encodePaymentSignatureHeader(payload);
    expect((await post({ "payment-signature": header })).status).toBe(200);
    await expectRefusal(
      await post({ "payment-signature": header }),
      "payment_authorization_reused",
      required,
    );
  });

  it("a validBefore far in the future: invalid_valid_before", async () => {
    const required = await offer();
    const header = paymentWith(required, { validBefore: String(Date.now()) });
    await expectRefusal(await post({ "payment-signature": header }), "invalid_valid_before", required);
  });

  it("a short nonce: invalid_payment_payload", async () => {
    const required = await offer();
    const header = paymentWith(required, { nonce: "0x1234" });
    await expectRefusal(await post({ "payment-signature": header }), "invalid_payment_payload", required);
  });

  it("a header that is not base64: invalid_payment_header", async () => {
    const required = await offer();
    await expectRefusal(
      await post({ "payment-signature": "!!!notbase64" }),
      "invalid_payment_header",
      required,
    );
  });

  it("a v1 payload in PAYMENT-SIGNATURE: invalid_x402_version", async () => {
    const required = await offer();
    const { payload } = unsignedPayment(required, SETTLES_OK);
    const header = encodePaymentSignatureHeader({ ...payload, x402Version: 1 } as PaymentPayload);
    await expectRefusal(await post({ "payment-signature": header }), "invalid_x402_version", required);
  });

  it("a v1 X-PAYMENT for another network: invalid_network", async () => {
    const required = await offer();
    const { payload } = unsignedPayment(required, SETTLES_OK);
    const v1 = btoa(
      JSON.stringify({ x402Version: 1, scheme: "exact", network: "polygon", payload: payload.payload }),
    );
    await expectRefusal(await post({ "x-payment": v1 }), "invalid_network", required);
  });

  it("a settlement that definitely failed: the facilitator's reason (insufficient_funds)", async () => {
    const required = await offer();
    const { payload } = unsignedPayment(required, INSUFFICIENT_FUNDS);
    const res = await post({ "payment-signature": encodePaymentSignatureHeader(payload) });
    expect(res.headers.get("payment-response")).toBeTruthy();
    await expectRefusal(res, "insufficient_funds", required, /^Settlement failed: .*not charged/);
  });

  it("the same refusal sends the same header, another reason another, and the unpaid offer is untouched", async () => {
    const required = await offer();
    const refused = async () =>
      (await post({ "payment-signature": paymentWith(required, { nonce: "0x12" }) })).headers.get(
        "payment-required",
      );
    const first = await refused();
    expect(await refused()).toBe(first);
    // Another reason is another header; the unpaid offer is untouched.
    const other = (await post({ "payment-signature": "!!!notbase64" })).headers.get("payment-required");
    expect(other).not.toBe(first);
    expect(headerOnly(await post()).error).toBe("Payment required");
  });
});
