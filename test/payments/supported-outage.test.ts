import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { FAILED_READ_BACKOFF_MS, failedReadBackoffMs, READY_WAIT_MS } from "../../src/payments/x402-gate";

// A facilitator whose /supported fails before the gate's first good read (an outage). Each unpaid
// request started a read of its own (a failed read was not kept), and each read wrote @x402/core's
// plain-text warning: N requests, N fetches and N lines, none JSON, none ours. Then a flat 15 s
// back-off answered every x402 call of a fresh isolate 503 for 15 s after a single blip.

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const GOOD = () => Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: env.X402_NETWORK }] });

/**
 * A facilitator whose /supported answers 404 until `up` (or, when `answer` is set, what it
 * returns for the read numbered `n`, from 1); counts its reads.
 */
function stubFacilitator(origin: string, answer?: (n: number) => Response | Promise<Response>) {
  const state = { reads: 0, up: false };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).origin !== origin) return realFetch(input, init);
    if (!new URL(req.url).pathname.endsWith("/supported")) return new Response("unexpected", { status: 500 });
    state.reads++;
    if (answer) return answer(state.reads);
    if (!state.up) return new Response("Not Found", { status: 404 });
    return GOOD();
  });
  return state;
}

/** Date.now held at a time the test moves (`clock.t`): back-offs are then exact. */
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

/** The console's lines of one kind, each the text it was called with. */
const lines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls.map((args) => args.map(String).join(" "));

describe("a facilitator whose /supported fails before the first good read", () => {
  it("the back-off grows with the reads that failed in a row: 1 s, 2, 4, 8, then 15 s", () => {
    expect([1, 2, 3, 4, 5, 6, 20].map(failedReadBackoffMs)).toEqual([
      1000,
      2000,
      4000,
      8000,
      FAILED_READ_BACKOFF_MS,
      FAILED_READ_BACKOFF_MS,
      FAILED_READ_BACKOFF_MS,
    ]);
  });

  it("a single failed first read (a blip) costs about a second: the next request after it reads again and gets the 402", async () => {
    const origin = "https://facilitator-blip.test";
    // Read 1 meets a gateway's 502; the facilitator answers every later read.
    const facilitator = stubFacilitator(origin, (n) =>
      n === 1 ? new Response("Bad Gateway", { status: 502 }) : GOOD(),
    );
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const first = await unpaid(origin);
    expect(first.status).toBe(503);
    expect(first.retryAfter).toBe("1");
    // Before: 503 Retry-After 14 with no second read, for 15 s after the blip.
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + 1000);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(2);
  });

  it("a dead facilitator is read once per back-off, up to one read per 15 s; N requests at the cap: one fetch, one JSON error line, one library warning, the same 503", async () => {
    const origin = "https://facilitator-outage.test";
    const facilitator = stubFacilitator(origin);
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const ours = () => lines(error).filter((l) => l.includes("facilitator /supported failed"));
    const clock = heldClock();
    // Each read fails at the time held; the request just before its back-off ends is answered from
    // it, the one at its end reads again.
    for (const [i, backoffS] of [1, 2, 4, 8, 15, 15].entries()) {
      const read = await unpaid(origin);
      expect(read).toMatchObject({ status: 503, retryAfter: String(backoffS) });
      expect(facilitator.reads).toBe(i + 1);
      clock.t += backoffS * 1000 - 1;
      expect(await unpaid(origin)).toMatchObject({ status: 503, retryAfter: "1" });
      expect(facilitator.reads).toBe(i + 1);
      clock.t += 1;
    }
    expect(ours()).toHaveLength(6);
    // At the cap: N requests within the back-off, one fetch and one line between them.
    const answers = [];
    for (let i = 0; i < 3; i++) {
      answers.push(await unpaid(origin));
      clock.t += 1000;
    }
    expect(facilitator.reads).toBe(7);
    expect(ours()).toHaveLength(7);
    expect(lines(warn).filter((l) => l.includes("Failed to fetch supported kinds"))).toHaveLength(7);
    const line = JSON.parse(ours()[6] as string);
    expect(line).toMatchObject({ level: "error", msg: "facilitator /supported failed" });
    // The facilitator's own answer, which the library keeps in the error's cause.
    expect(line.error).toMatch(/404/);
    expect(answers.map((a) => a.retryAfter)).toEqual(["15", "14", "13"]);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(JSON.parse(a.body).detail).toMatch(/^x402 payments are unavailable: facilitator: /);
    }
    expect(answers[1]?.body).toBe(answers[0]?.body);
    // Back up: after the back-off, the 402 offer, and no read after it.
    facilitator.up = true;
    clock.t += FAILED_READ_BACKOFF_MS;
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(8);
    expect((await unpaid(origin)).status).toBe(402);
    expect(facilitator.reads).toBe(8);
  });

  it("a stale read that fails after a newer read started does not answer for the gate: the requests meanwhile join the newer read", async () => {
    const origin = "https://facilitator-superseded.test";
    const answers: Array<(res: Response) => void> = [];
    const facilitator = stubFacilitator(
      origin,
      () => new Promise<Response>((resolve) => answers.push(resolve)),
    );
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const clock = heldClock();
    const a = unpaid(origin);
    await vi.waitFor(() => expect(facilitator.reads).toBe(1));
    // Past the time a read is joined (READY_WAIT_MS): the next request starts read 2.
    clock.t += 11_000;
    const b = unpaid(origin);
    await vi.waitFor(() => expect(facilitator.reads).toBe(2));
    answers[0]?.(new Response("Internal Server Error", { status: 500 }));
    expect((await a).status).toBe(503);
    // C waits for read 2. Before: it was answered from read 1's failure at once (503, Retry-After
    // 15), though read 2 was about to succeed.
    const c = unpaid(origin);
    const pending = new Promise((resolve) => setTimeout(() => resolve("pending"), 200));
    expect(await Promise.race([c, pending])).toBe("pending");
    answers[1]?.(GOOD());
    expect(await c).toMatchObject({ status: 402 });
    expect((await b).status).toBe(402);
    expect(facilitator.reads).toBe(2);
  });
});

/** A facilitator whose every /supported read waits until the test answers it (`answers[n - 1]`). */
function heldFacilitator(origin: string) {
  const answers: Array<(r: Response) => void> = [];
  const state = stubFacilitator(origin, () => new Promise<Response>((resolve) => answers.push(resolve)));
  return Object.assign(state, { answers });
}

/** A held facilitator for `origin`, the clock held, the gate's and the library's lines silenced. */
function quietHeld(origin: string) {
  const f = heldFacilitator(origin);
  vi.spyOn(console, "error").mockImplementation(() => {});
  vi.spyOn(console, "warn").mockImplementation(() => {});
  return { f, clock: heldClock() };
}

const settledWithin = async <T>(p: Promise<T>, ms = 300) =>
  Promise.race([p, new Promise((r) => setTimeout(() => r("pending"), ms))]);

/**
 * The first /supported read's failures, as they meet SharedLoad's 10 s staleness: which failure
 * backs the gate off (x402-gate.ts readSupported, readStartedAt) and which good read makes it ready.
 */
describe("a first /supported read that answers after it went stale", () => {
  it("a facilitator whose reads fail slowly (a gateway's 504 after 20 s) is backed off under steady traffic, not read every 10 s", async () => {
    const origin = "https://facilitator-r8-slowfail.test";
    const { f, clock } = quietHeld(origin);
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
    const { f, clock } = quietHeld(origin);
    {
      // A's wait is a timer: run out on a fake one, not waited for (test/payments/shared-reads.test.ts).
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const a = unpaid(origin);
      await vi.waitFor(() => expect(f.reads).toBe(1), { timeout: 10_000 });
      // A's own wait (READY_WAIT_MS) runs out: 503 without Retry-After; read 1 goes on.
      clock.t += 11_000;
      vi.advanceTimersByTime(READY_WAIT_MS);
      vi.useRealTimers();
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
    const { f, clock } = quietHeld(origin);
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
