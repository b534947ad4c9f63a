import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";

// A facilitator that does not answer /verify (a dropped connection, a gateway's error page, its
// own unexpected_verify_error) is an outage, not the buyer's invalid payment: @x402/core caught
// the transport error itself and answered it as a 402 whose text became payment_invalid, "send a
// new payment". It is the documented 503 (llms.txt, AGENTS.md: "payments temporarily
// unavailable; retry later"), nothing claimed, and the same payment pays once the facilitator is
// back. A facilitator's own refusal is still the buyer's 402 with the facilitator's reason.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const PAYER = "0x00000000000000000000000000000000000a0001"; // the facilitator double settles it
const ROUTE = "/api/skills/sha256";

afterEach(() => {
  vi.restoreAllMocks();
});

const post = (headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`https://skills.test${ROUTE}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "abc" }),
    }),
    paidEnv,
  );

async function payment() {
  const res = await post();
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  const { payload, nonce } = unsignedPayment(required, PAYER);
  return { header: encodePaymentSignatureHeader(payload as PaymentPayload), nonce };
}

/** The facilitator double, with its /verify answered by `verify` instead. */
function verifyAnswers(verify: () => Promise<Response>) {
  const real = globalThis.fetch;
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new Request(input, init).url;
    return url === `${FIXTURE}/facilitator/verify` ? verify() : real(input, init);
  });
  return spy;
}

const claims = (nonce: string) =>
  env.DB.prepare("SELECT COUNT(*) AS n FROM payment_nonces WHERE auth_nonce = ?1")
    .bind(nonce)
    .first<{ n: number }>()
    .then((r) => r?.n);

const OUTAGES: [string, () => Promise<Response>][] = [
  [
    "throws (fetch failed)",
    () => {
      throw new TypeError("fetch failed");
    },
  ],
  [
    "answers a 502 HTML page",
    async () => new Response("<html><h1>502 Bad Gateway</h1></html>", { status: 502 }),
  ],
  [
    "answers a 500 HTML page",
    async () => new Response("<html>Internal Server Error</html>", { status: 500 }),
  ],
  [
    "answers its own unexpected_verify_error (500)",
    async () => Response.json({ isValid: false, invalidReason: "unexpected_verify_error" }, { status: 500 }),
  ],
];

describe("a facilitator that does not answer /verify is an outage, not a refused payment", () => {
  it.each(OUTAGES)(
    "/verify %s: 503 facilitator_unavailable, nothing claimed, and the same payment pays once it is back",
    async (_, verify) => {
      const { header, nonce } = await payment();
      const spy = verifyAnswers(verify);
      const res = await post({ "payment-signature": header });
      const body = await res.json<{ reason: string; detail: string }>();
      expect(res.status).toBe(503);
      expect(body.reason).toBe("facilitator_unavailable");
      expect(body.detail).toMatch(/Nothing was charged/);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await claims(nonce)).toBe(0);

      spy.mockRestore();
      expect((await post({ "payment-signature": header })).status).toBe(200);
    },
  );

  it.each([
    ["200", 200],
    ["400", 400],
  ])(
    "a facilitator's refusal (insufficient_funds, HTTP %s) is still the buyer's 402 with its reason",
    async (_, status) => {
      const { header, nonce } = await payment();
      verifyAnswers(async () =>
        Response.json({ isValid: false, invalidReason: "insufficient_funds", payer: PAYER }, { status }),
      );
      const res = await post({ "payment-signature": header });
      expect(res.status).toBe(402);
      const body = await res.json<{ reason: string; x402Version: number; accepts: unknown[] }>();
      expect(body.reason).toBe("insufficient_funds");
      expect(body.accepts.length).toBeGreaterThan(0);
      expect(await claims(nonce)).toBe(0);
    },
  );
});

describe("a facilitator's 429 on /verify is no verdict on the payment", () => {
  it.each([
    ["in a verify answer's shape", { isValid: false, invalidReason: "rate_limited", payer: PAYER }],
    ["with a plain body", { error: "too many requests" }],
  ])("%s: 503 facilitator_unavailable with Retry-After, nothing claimed", async (_name, body) => {
    const { header, nonce } = await payment();
    verifyAnswers(async () => Response.json(body, { status: 429, headers: { "retry-after": "30" } }));
    const res = await post({ "payment-signature": header });
    expect(res.status).toBe(503);
    expect((await res.json<{ reason: string }>()).reason).toBe("facilitator_unavailable");
    expect(res.headers.get("retry-after")).toBe("10");
    expect(await claims(nonce)).toBe(0);
  });
});

describe("an authorization the facilitator cannot read is the payer's to fix, not an outage", () => {
  it.each([
    ["a value in dollars", { value: "0.003" }],
    ["a short nonce", { nonce: "0x1234" }],
    ["a from that is no address", { from: "alice" }],
    ["a validAfter as a number", { validAfter: 0 }],
  ])("%s: 402 invalid_payment_payload with the offer; /verify is never asked", async (_name, change) => {
    const res0 = await post();
    const required = decodePaymentRequiredHeader(res0.headers.get("payment-required") as string);
    const { payload } = unsignedPayment(required, PAYER);
    const p = payload as PaymentPayload & { payload: { authorization: Record<string, unknown> } };
    Object.assign(p.payload.authorization, change);
    const verifies: string[] = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const url = new Request(input, init).url;
      if (url.endsWith("/verify")) verifies.push(url);
      return real(input, init);
    });
    const res = await post({ "payment-signature": encodePaymentSignatureHeader(p) });
    expect(res.status).toBe(402);
    expect(await res.json()).toMatchObject({ reason: "invalid_payment_payload", x402Version: 1 });
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect(verifies).toEqual([]);
  });
});
