import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { authorizationFor } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpInit } from "../helpers";

// A buyer's validBefore must stay within the offer's window (maxTimeoutSeconds 300, plus the
// slack for a buyer's clock, payments/x402-terms.ts): the facilitator takes any future one, and
// reconciliation looks at a claim only once it expired, so one in milliseconds or 2^256 − 1 left
// a payment that landed while its call was cut off out of the ledger for good.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
/** The facilitator double verifies and settles this payer's payments. */
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";
const nowSeconds = () => Math.floor(Date.now() / 1000);

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`https://skills.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );

async function offer(path: string) {
  const res = await post(path, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** A v2 payment for `required` whose authorization ends at `validBefore` (as given, any type). */
function paymentUntil(required: PaymentRequired, validBefore: unknown) {
  const accepted = required.accepts[0] as PaymentRequirements;
  const authorization = { ...authorizationFor(accepted, SETTLES_OK), validBefore };
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: required.resource,
    accepted,
    payload: { signature: `0x${"11".repeat(65)}`, authorization },
  };
  const key = `${accepted.network}:${accepted.asset}:${SETTLES_OK}:${authorization.nonce}`.toLowerCase();
  return { payload, nonce: authorization.nonce, key, validBefore };
}

const v1Header = (payload: PaymentPayload) =>
  btoa(JSON.stringify({ x402Version: 1, scheme: "exact", network: "base", payload: payload.payload }));

const claimRow = (key: string) =>
  env.DB.prepare("SELECT status, valid_before FROM payment_nonces WHERE nonce = ?1").bind(key).first();
const ledgerRows = (key: string) =>
  env.DB.prepare("SELECT count(*) AS n FROM payments WHERE nonce = ?1").bind(key).first<{ n: number }>();

const outOfWindow: [string, () => unknown][] = [
  ["in milliseconds (String(Date.now()), a common client bug)", () => String(Date.now())],
  ["2^256 − 1 (never expires)", () => (2n ** 256n - 1n).toString()],
  ["an hour ahead", () => String(nowSeconds() + 3600)],
  ["hex", () => `0x${(nowSeconds() + 300).toString(16)}`],
  ["a JSON number", () => nowSeconds() + 300],
  ["in exponent form", () => "1.7e9"],
  ["10,000 digits (echoed cut to 80)", () => "9".repeat(10_000)],
];

describe("a buyer's validBefore is bounded by the offer's window, before anything is claimed or settled", () => {
  it.each(outOfWindow)(
    "x402 v2, validBefore %s: 402 invalid_valid_before with the offer to sign again; no claim, no settlement",
    async (_name, validBefore) => {
      const pay = paymentUntil(await offer("/api/skills/sha256"), validBefore());
      const res = await post(
        "/api/skills/sha256",
        { text: "abc" },
        { "payment-signature": encodePaymentSignatureHeader(pay.payload) },
      );
      expect(res.status).toBe(402);
      const body = await res.json<{
        reason: string;
        error: string;
        x402Version: number;
        accepts: unknown[];
      }>();
      expect(body.reason).toBe("invalid_valid_before");
      expect(body.error).toMatch(/^Payment rejected: authorization\.validBefore .*Sign a new one\.$/);
      // The input is echoed, cut to its first 80 characters.
      const echoed =
        /^Payment rejected: authorization\.validBefore (.*) is (?:not a decimal|later than)/.exec(
          body.error,
        )?.[1];
      expect(echoed).toBe(String(pay.validBefore).slice(0, 80));
      // Like every refusal made before the facilitator settles: the route's offer, v1 body and v2 header.
      expect(body).toMatchObject({ x402Version: 1, accepts: [expect.objectContaining({ scheme: "exact" })] });
      expect(decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "").accepts).toHaveLength(1);
      expect(await claimRow(pay.key)).toBeNull();
      expect(await ledgerRows(pay.key)).toEqual({ n: 0 });
      expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
    },
  );

  it("x402 v1 (X-PAYMENT), validBefore in milliseconds: the same 402, no claim, no settlement", async () => {
    const pay = paymentUntil(await offer("/api/skills/sha256"), String(Date.now()));
    const res = await post("/api/skills/sha256", { text: "abc" }, { "x-payment": v1Header(pay.payload) });
    expect(res.status).toBe(402);
    const body = await res.json<{ reason: string; x402Version: number }>();
    expect(body).toMatchObject({ reason: "invalid_valid_before", x402Version: 1 });
    expect(await claimRow(pay.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
  });

  it("over MCP (_meta x402/payment), validBefore in milliseconds: a tool error with the same reason, no claim", async () => {
    const pay = paymentUntil(await offer("/api/skills/sha256"), String(Date.now()));
    const res = await app.fetch(
      new Request(
        "https://skills.test/mcp",
        mcpInit("tools/call", {
          name: "sha256",
          arguments: { text: "abc" },
          _meta: { "x402/payment": pay.payload },
        }),
      ),
      paidEnv,
    );
    expect(res.status).toBe(200);
    const { result } = await res.json<{
      result: { isError?: boolean; structuredContent?: Record<string, unknown> };
    }>();
    expect(result.isError).toBe(true);
    expect(result.structuredContent?.reason).toBe("invalid_valid_before");
    expect(await claimRow(pay.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
  });

  it.each([
    ["now + maxTimeoutSeconds (what @x402/evm signs)", 300],
    ["a buyer's clock up to 300 s ahead", 600],
  ])("a validBefore of %s is paid as before, and reconciliation can read it", async (_name, ahead) => {
    const validBefore = nowSeconds() + ahead;
    const pay = paymentUntil(await offer("/api/skills/sha256"), String(validBefore));
    const res = await post(
      "/api/skills/sha256",
      { text: "abc" },
      { "payment-signature": encodePaymentSignatureHeader(pay.payload) },
    );
    expect(res.status).toBe(200);
    expect(await claimRow(pay.key)).toEqual({ status: "settled", valid_before: validBefore });
    expect(await ledgerRows(pay.key)).toEqual({ n: 1 });
  });
});
