import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { RATE_LIMIT_SKIP_MS } from "../../src/http/limits";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unsignedPayment } from "../fixtures/payments";
import { ORIGIN, paidEnv } from "../helpers";

/**
 * A Rate Limiting binding that throws or answers nonsense lets the call through (quotas.ts says
 * why): never a 500, and the payment checks still apply (an x402 call is
 * verified and settled, a card call spends its credit).
 */

const app = createApp();
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A binding whose limit() throws, counting the calls it was asked. */
function throwing() {
  const binding = {
    asked: 0,
    limit: async () => {
      binding.asked++;
      throw new Error("rate limiter binding unavailable");
    },
  };
  return binding;
}
const limited = (bindings: object) => ({ ...paidEnv(), RATE_LIMITS: "on", ...bindings });
const sha256 = (e: object, headers: Record<string, string> = {}, body: unknown = { text: "a" }) =>
  app.fetch(
    new Request(`${ORIGIN}/api/skills/sha256`, {
      method: "POST",
      headers: { "cf-connecting-ip": "203.0.113.9", "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
    e,
  );
const faultLines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.filter((args) => String(args[0]).includes("rate limiter unavailable"));

describe("a rate limiter that fails", () => {
  it("lets an unpaid call have its 402 offer, not a 500, and says so once a minute per isolate", async () => {
    const errors = vi.spyOn(console, "error");
    // The line is throttled per isolate: start a window of its own whatever ran before.
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + 3_600_000);
    const bindings = [throwing(), throwing(), throwing()];
    for (const RL_IP of bindings) {
      const res = await sha256(limited({ RL_IP }));
      expect(res.status).toBe(402);
      expect(res.headers.get("payment-required")).toBeTruthy();
    }
    expect(bindings.map((b) => b.asked)).toEqual([1, 1, 1]);
    const lines = faultLines(errors);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(String(lines[0]?.[0]))).toMatchObject({ level: "error", binding: "RL_IP" });
  });

  it("serves and settles an x402 call whose payer limiter throws", async () => {
    const e = limited({ RL_PAYER: throwing(), RL_PAYER_HEAVY: throwing() });
    const offer = await sha256(e);
    const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
    const { payload } = unsignedPayment(required, `0x${"5a".repeat(20)}`);
    const res = await sha256(e, { "payment-signature": encodePaymentSignatureHeader(payload) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ skill: "sha256", ok: true });
    // Settled: the facilitator's answer is passed on.
    expect(res.headers.get("payment-response")).toBeTruthy();
  });

  it("serves a card call whose key limiter throws, spending exactly one credit", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const res = await sha256(limited({ RL_PAYER: throwing(), RL_PAYER_HEAVY: throwing() }), {
      authorization: `Bearer ${key}`,
    });
    expect(res.status).toBe(200);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("a binding that failed is not asked again for RATE_LIMIT_SKIP_MS in the isolate, then is", async () => {
    const now = Date.now() + 7_200_000;
    const clock = vi.spyOn(Date, "now").mockReturnValue(now);
    const RL_IP = throwing();
    const e = limited({ RL_IP });
    expect((await sha256(e)).status).toBe(402);
    clock.mockReturnValue(now + RATE_LIMIT_SKIP_MS - 1);
    expect((await sha256(e)).status).toBe(402);
    expect(RL_IP.asked).toBe(1);
    clock.mockReturnValue(now + RATE_LIMIT_SKIP_MS + 1);
    expect((await sha256(e)).status).toBe(402);
    expect(RL_IP.asked).toBe(2);
  });

  it("an answer with no success flag is a fault too, not a refusal", async () => {
    const RL_IP = { limit: async () => ({}) as RateLimitOutcome };
    expect((await sha256(limited({ RL_IP }))).status).toBe(402);
  });
});
