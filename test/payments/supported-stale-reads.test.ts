import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import "../../src/payments/x402-gate";

afterEach(() => {
  vi.restoreAllMocks();
});

const GOOD = () => Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });

function stubFacilitator(origin: string) {
  const state = { reads: 0, answers: [] as Array<(r: Response) => void> };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (!new URL(req.url).pathname.endsWith("/supported")) return new Response("unexpected", { status: 500 });
    state.reads++;
    return new Promise<Response>((resolve) => state.answers.push(resolve));
  });
  return state;
}
function heldClock() {
  const clock = { t: Date.now() };
  vi.spyOn(Date, "now").mockImplementation(() => clock.t);
  return clock;
}
const unpaid = async (facilitator: string) => {
  const res = await createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
};
const settledWithin = async <T>(p: Promise<T>, ms = 300) =>
  Promise.race([p, new Promise((r) => setTimeout(() => r("pending"), ms))]);

/**
 * The first /supported read's failures, as they meet SharedLoad's 10 s staleness: which failure
 * backs the gate off (x402-gate.ts readSupported, readStartedAt) and which good read makes it ready.
 */
describe("a first /supported read that answers after it went stale", () => {
  it("a facilitator whose reads fail slowly (a gateway's 504 after 20 s) is backed off under steady traffic, not read every 10 s", async () => {
    const origin = "https://facilitator-r8-slowfail.test";
    const f = stubFacilitator(origin);
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const clock = heldClock();
    // A request every 10 s; each read answers 504 20 s after it started (a gateway's timeout).
    const readStartedAt: number[] = [];
    const answered = new Set<number>();
    const immediate: string[] = [];
    for (let i = 0; i < 6; i++) {
      const before = f.reads;
      const res = settledWithin(unpaid(origin), 100);
      const got = await res;
      if (got !== "pending") immediate.push(JSON.stringify(got).slice(0, 40));
      if (f.reads > before) readStartedAt.push(clock.t);
      clock.t += 10_001;
      for (const [n, at] of readStartedAt.entries()) {
        if (!answered.has(n) && clock.t - at >= 20_000) {
          answered.add(n);
          f.answers[n]?.(new Response("Gateway Timeout", { status: 504 }));
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const a of f.answers) a(new Response("x", { status: 504 }));
    // Every read failed (504): some requests were answered at once from the back-off, and the
    // facilitator was not read once per 10 s.
    expect(immediate.length).toBeGreaterThan(0);
    expect(f.reads).toBeLessThanOrEqual(5);
  });

  it("a stale read that succeeds when no request waits on it any more, during a newer read's back-off, makes the gate ready", async () => {
    const origin = "https://facilitator-r8-stale-good2.test";
    const f = stubFacilitator(origin);
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const clock = heldClock();
    {
      const a = unpaid(origin);
      await vi.waitFor(() => expect(f.reads).toBe(1), { timeout: 10_000 });
      // A's own wait (READY_WAIT_MS) runs out: 503 without Retry-After; read 1 goes on.
      clock.t += 11_000;
      expect((await a).status).toBe(503);
      const b = unpaid(origin);
      await vi.waitFor(() => expect(f.reads).toBe(2), { timeout: 10_000 });
      f.answers[1]?.(new Response("Bad Gateway", { status: 502 }));
      expect(await b).toMatchObject({ status: 503, retryAfter: "1" });
      // Read 1 answers well now: the server is initialized.
      f.answers[0]?.(GOOD());
      await new Promise((r) => setTimeout(r, 20));
      // Within read 2's back-off, and after it: the gate read 1 made ready answers, no read is
      // started (one would clear the tables read 1 filled).
      clock.t += 500;
      const c = await unpaid(origin);
      clock.t += 1000;
      const d = unpaid(origin);
      await new Promise((r) => setTimeout(r, 20));
      f.answers[2]?.(new Response("Bad Gateway", { status: 502 }));
      const rd = await d;
      expect(c.status).toBe(402);
      expect(rd.status).toBe(402);
      expect(f.reads).toBe(2);
    }
  });

  it("a request still joined to a stale read that fails after a newer read made the gate ready gets the 402", async () => {
    const origin = "https://facilitator-r8-stale-waiter.test";
    const f = stubFacilitator(origin);
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const clock = heldClock();
    const a = unpaid(origin);
    await vi.waitFor(() => expect(f.reads).toBe(1), { timeout: 10_000 });
    clock.t += 11_000;
    const b = unpaid(origin);
    await vi.waitFor(() => expect(f.reads).toBe(2), { timeout: 10_000 });
    f.answers[1]?.(GOOD());
    expect((await b).status).toBe(402);
    expect((await unpaid(origin)).status).toBe(402);
    f.answers[0]?.(new Response("Internal Server Error", { status: 500 }));
    expect((await a).status).toBe(402);
  });
});
