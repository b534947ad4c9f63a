import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { FAILED_READ_BACKOFF_MS } from "../../../src/payments/x402-gate";

// The facilitator of this project (vitest.config.ts) answers /supported after 4 s. Requests go
// through the Worker's real entry point, so workerd cancels one whose client goes away, as
// Cloudflare does: the first /supported read of the isolate is started inside such a request.

const FACILITATOR = new URL(env.FACILITATOR_URL).origin;
// Paid even in free beta: every call goes through the x402 gate.
const PRICED = "https://skills.test/api/partners/pricefeed/try/price";

const supportedReads = async () => {
  const res = await fetch(`${FACILITATOR}/_requests?match=${encodeURIComponent("upstream-slow?/supported")}`);
  return (await res.json<{ count: number }>()).count;
};
// Longer than any request may wait for /supported (x402-gate.ts, READY_WAIT_MS: 10 s).
const PATIENCE_MS = 15_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The answer, or "pending" if there is none after `ms`. */
const answerWithin = async (p: Promise<Response>, ms: number) => {
  const res = await Promise.race([p, sleep(ms).then(() => "pending" as const)]);
  if (res === "pending") return res;
  return { status: res.status, detail: (await res.json<{ detail: string }>()).detail };
};

describe("a cancelled first request never leaves the isolate's later x402 calls waiting", () => {
  it("the calls after it get an answer (503 from the facilitator's answer, or its deadline), and the next one reads /supported again", async () => {
    const client = new AbortController();
    const first = exports.default.fetch(new Request(PRICED, { signal: client.signal }));
    // The client goes away while the facilitator is answering the read that request started (the
    // first request of the isolate also loads the x402 stack, seconds on a cold vite transform).
    await vi.waitFor(async () => expect(await supportedReads()).toBe(1), { timeout: 15_000, interval: 50 });
    client.abort();
    await expect(first).rejects.toThrow();

    // The clock held from here (the read fails at this time, and its 1 s back-off is counted from
    // it), so a busy machine's pauses do not end the back-off early.
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now);
    // Before: both stayed pending until the isolate was evicted (25 s in the review's repro).
    const later = await Promise.all([
      answerWithin(exports.default.fetch(PRICED), PATIENCE_MS),
      answerWithin(exports.default.fetch(PRICED), PATIENCE_MS),
    ]);
    for (const answer of later) {
      expect(answer).toMatchObject({ status: 503 });
      expect(answer).toHaveProperty(
        "detail",
        expect.stringMatching(/^x402 payments are unavailable: facilitator: /),
      );
    }
    // They joined the read the cancelled request started (kept alive by its waitUntil).
    expect(await supportedReads()).toBe(1);
    // That read failed (the fixture page is not a /supported answer): a call within its back-off
    // is answered from it; the next call after the back-off tries again.
    expect(await answerWithin(exports.default.fetch(PRICED), PATIENCE_MS)).toMatchObject({
      status: 503,
    });
    expect(await supportedReads()).toBe(1);
    clock.mockReturnValue(now + FAILED_READ_BACKOFF_MS + 1);
    expect(await answerWithin(exports.default.fetch(PRICED), PATIENCE_MS)).toMatchObject({
      status: 503,
    });
    vi.restoreAllMocks();
    expect(await supportedReads()).toBe(2);
  });
});
