import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { READY_WAIT_MS, REFRESH_STALE_MS, SUPPORTED_TTL_MS } from "../../src/payments/x402-gate";

// Reads an isolate shares between its requests (src/http/shared-load.ts). On Cloudflare a read
// started inside a request that workerd cancels (its client went away) never settles: a fetch
// that never answers stands for it here. The same through workerd's own cancellation:
// test/payments/slow-facilitator/.

afterEach(() => {
  for (const cutOff of stranded.splice(0)) cutOff(new Error("cut off at the end of the test"));
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A read that never answers (for the test: cut off after it, so nothing is left waiting). */
const stranded: ((e: Error) => void)[] = [];
const never = () => new Promise<never>((_, cutOff) => stranded.push(cutOff));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value, or "pending" if `p` has not settled after `ms`. */
const settledWithin = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, sleep(ms).then(() => "pending" as const)]);

/** A facilitator whose /supported answers, or never does; counts its reads. */
function stubFacilitator(origin: string) {
  const state = { reads: 0, mode: "up" as "up" | "hang" };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (!new URL(req.url).pathname.endsWith("/supported")) return new Response("unexpected", { status: 500 });
    state.reads++;
    if (state.mode === "hang") return never();
    return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });
  });
  return state;
}

const unpaid = async (facilitator: string) => {
  const res = await createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );
  return { status: res.status, body: await res.text() };
};

describe("the facilitator's /supported, read once per isolate", () => {
  it("a first read that never answers: the request gets 503 after 10 s, and a request after that reads again", async () => {
    const origin = "https://facilitator-stranded.test";
    const facilitator = stubFacilitator(origin);
    facilitator.mode = "hang";
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const first = unpaid(origin);
    await vi.waitFor(() => expect(facilitator.reads).toBe(1));
    vi.advanceTimersByTime(READY_WAIT_MS);
    vi.useRealTimers();
    // Before: it waited on the read for ever, and so did every x402 call of the isolate after it.
    const answer = await settledWithin(first, 5000);
    expect(answer).toMatchObject({ status: 503 });
    expect(JSON.parse((answer as { body: string }).body).detail).toBe(
      `x402 payments are unavailable: facilitator: did not answer within ${READY_WAIT_MS / 1000} s`,
    );
    // The read is now older than any request waits: the next request starts another.
    facilitator.mode = "up";
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + READY_WAIT_MS + 1);
    expect(await settledWithin(unpaid(origin), 5000)).toMatchObject({ status: 402 });
    expect(facilitator.reads).toBe(2);
  });

  it("a background re-read that never answers is started again after REFRESH_STALE_MS (it was never again)", async () => {
    const origin = "https://facilitator-stranded-refresh.test";
    const facilitator = stubFacilitator(origin);
    expect((await unpaid(origin)).status).toBe(402);
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now + SUPPORTED_TTL_MS + 1000);
    facilitator.mode = "hang";
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(2);
    // Joined while it may still answer.
    clock.mockReturnValue(now + SUPPORTED_TTL_MS + 1000 + REFRESH_STALE_MS - 1);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(2);
    // Then taken for dead: the next request past the TTL starts a new one, which swaps in.
    facilitator.mode = "up";
    clock.mockReturnValue(now + SUPPORTED_TTL_MS + 1000 + REFRESH_STALE_MS + 1);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
    await sleep(50);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(3);
  });
});
