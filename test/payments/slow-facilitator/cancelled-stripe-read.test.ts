import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";

// This project's Stripe (vitest.config.ts) answers a session whose id names "upstream_slow" after
// 4 s. The success page shares one Stripe read per session for a few seconds; requests go through
// the Worker's real entry point, so workerd cancels one whose client goes away, as Cloudflare does.

const STRIPE = env.STRIPE_API_BASE as string;
const SESSION = "cs_test_upstream_slow_1";
const PAGE = `https://skills.test/checkout/success?session_id=${SESSION}`;

const stripeReads = async () => {
  const res = await fetch(
    `${STRIPE}/_requests?match=${encodeURIComponent(`/v1/checkout/sessions/${SESSION}`)}`,
  );
  return (await res.json<{ count: number }>()).count;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const answerWithin = async (p: Promise<Response>, ms: number) => {
  const res = await Promise.race([p, sleep(ms).then(() => "pending" as const)]);
  return res === "pending" ? res : res.status;
};

describe("a success page whose Stripe read was started by a request that went away", () => {
  it("still answers the requests that joined that read", async () => {
    const now = Date.now();
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?2)`,
    )
      .bind(SESSION, now)
      .run();
    const client = new AbortController();
    const first = exports.default.fetch(new Request(PAGE, { signal: client.signal }));
    await vi.waitFor(async () => expect(await stripeReads()).toBe(1), { timeout: 15_000, interval: 50 });
    client.abort();
    await expect(first).rejects.toThrow();
    // Before: the page joined the cancelled read and never answered.
    expect(await answerWithin(exports.default.fetch(PAGE), 15_000)).toBe(200);
    expect(await stripeReads()).toBe(1);
  });
});
