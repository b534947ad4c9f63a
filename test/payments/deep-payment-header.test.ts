import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { authorizationFor } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// A payment header nested thousands of levels deep overflowed the stack inside @x402/core (caught,
// and answered 402 "Payment rejected: Maximum call stack size exceeded."): it is refused up front,
// as a body is, under the same depth bound (MAX_JSON_DEPTH), as a header that is not a payment.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";
/** 10,000 levels: `[[[…]]]`, ~20 KB of JSON (~27 KB as base64). */
const DEEP = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
const PLACEHOLDER = '"__deep__"';

const post = (headers: Record<string, string>) =>
  app.fetch(
    new Request("https://skills.test/api/skills/sha256", {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "abc" }),
    }),
    paidEnv,
  );

async function offer() {
  const res = await post({});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** A well-formed payment for the route with one value replaced by `nested` (as JSON text). */
async function paymentWith(where: "extensions" | "payload" | "extra", nested: string) {
  const required = await offer();
  const accepted = required.accepts[0] as PaymentRequirements;
  const authorization = authorizationFor(accepted, SETTLES_OK);
  const payment = {
    x402Version: 2,
    resource: required.resource,
    accepted: where === "extra" ? { ...accepted, extra: { ...accepted.extra, deep: "__deep__" } } : accepted,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization,
      ...(where === "payload" ? { deep: "__deep__" } : {}),
    },
    ...(where === "extensions" ? { extensions: { deep: "__deep__" } } : {}),
  };
  const text = JSON.stringify(payment).replace(PLACEHOLDER, nested);
  return { text, nonce: authorization.nonce };
}

async function expectRefused(res: Response) {
  expect(res.status).toBe(402);
  const body = await res.json<{ reason: string; error: string; x402Version: number; accepts: unknown[] }>();
  expect(body.reason).toBe("invalid_payment_header");
  expect(body.error).toMatch(/nested deeper than 200 levels/);
  expect(body.error).not.toMatch(/call stack/i);
  // The refusal still carries the route's offer, as every other refusal before the facilitator.
  expect(body.x402Version).toBe(1);
  expect(body.accepts).toHaveLength(1);
  expect(res.headers.get("payment-required")).toBeTruthy();
}

describe("a payment header nested deeper than a body may be is refused as no payment", () => {
  it.each(["extensions", "payload", "extra"] as const)(
    "PAYMENT-SIGNATURE with %s nested 10,000 levels: 402 invalid_payment_header, the facilitator not asked",
    async (where) => {
      const { text, nonce } = await paymentWith(where, DEEP);
      const header = btoa(text);
      expect(header.length).toBeGreaterThan(20_000);
      await expectRefused(await post({ "payment-signature": header }));
      expect(await upstreamRequests(`nonce=${nonce}`)).toBe(0);
    },
  );

  it("X-PAYMENT (v1) with its payload nested 10,000 levels: the same refusal", async () => {
    const { authorization } = JSON.parse((await paymentWith("payload", "1")).text).payload;
    const v1 = JSON.stringify({
      x402Version: 1,
      scheme: "exact",
      network: "base",
      payload: { signature: `0x${"11".repeat(65)}`, authorization, deep: "__deep__" },
    }).replace(PLACEHOLDER, DEEP);
    await expectRefused(await post({ "x-payment": btoa(v1) }));
    expect(await upstreamRequests(`nonce=${authorization.nonce}`)).toBe(0);
  });

  it("nesting within the bound is read as a payment (200 levels in extensions: not refused as a header)", async () => {
    const within = `${"[".repeat(197)}${"]".repeat(197)}`;
    const { text } = await paymentWith("extensions", within);
    const res = await post({ "payment-signature": btoa(text) });
    const body = await res.json<{ reason?: string }>();
    expect(body.reason).not.toBe("invalid_payment_header");
  });
});
