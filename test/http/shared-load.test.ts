import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DeadlineError, SharedLoad, within } from "../../src/http/shared-load";

// A load shared by an isolate's requests (src/http/shared-load.ts). A load whose request workerd
// cancelled never settles: here, a promise that never settles stands for it.

afterEach(() => {
  for (const cutOff of stranded.splice(0)) cutOff(new Error("cut off at the end of the test"));
  vi.restoreAllMocks();
});

/** A read that never answers (for the test: cut off after it, so nothing is left waiting). */
const stranded: ((e: Error) => void)[] = [];
const never = () => new Promise<never>((_, cutOff) => stranded.push(cutOff));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The value, or "pending" if `p` has not settled after `ms`. */
const settledWithin = (p: Promise<unknown>, ms: number) => Promise.race([p, sleep(ms).then(() => "pending")]);

describe("SharedLoad", () => {
  it("one load for the requests that ask while it runs, and its value after", async () => {
    const load = new SharedLoad<number>(10_000);
    let starts = 0;
    const start = async () => {
      starts++;
      await sleep(5);
      return 42;
    };
    expect(await Promise.all([load.get(start), load.get(start), load.get(start)])).toEqual([42, 42, 42]);
    expect(await load.get(start)).toBe(42);
    expect(starts).toBe(1);
  });

  it("a failed load is not kept: the next request starts another", async () => {
    const load = new SharedLoad<number>(10_000);
    await expect(load.get(() => Promise.reject(new Error("down")))).rejects.toThrow("down");
    expect(await load.get(async () => 7)).toBe(7);
  });

  it("a load still pending after its bound is taken for dead: the next request starts another", async () => {
    const load = new SharedLoad<number>(1000);
    let starts = 0;
    const stuck = load.get(() => {
      starts++;
      return never();
    });
    // Within the bound it is joined.
    expect(load.get(async () => 1)).toBe(stuck);
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + 1001);
    expect(await load.get(async () => 2)).toBe(2);
    expect(starts).toBe(1);
  });

  it("a stale load that fails after its replacement started leaves the replacement in place", async () => {
    const load = new SharedLoad<number>(1000);
    let fail: (e: Error) => void = () => {};
    const stale = load.get(() => new Promise<number>((_, reject) => (fail = reject)));
    const now = Date.now();
    const clock = vi.spyOn(Date, "now").mockReturnValue(now + 1001);
    let release: (n: number) => void = () => {};
    const fresh = load.get(() => new Promise<number>((resolve) => (release = resolve)));
    fail(new Error("late"));
    await expect(stale).rejects.toThrow("late");
    clock.mockReturnValue(now + 1500);
    expect(load.get(async () => 3)).toBe(fresh);
    release(9);
    expect(await fresh).toBe(9);
  });
});

describe("within", () => {
  it("gives the value when it comes in time, a DeadlineError saying how long when not", async () => {
    expect(await within(Promise.resolve(5), 50)).toBe(5);
    const late = within(never(), 50, "the facilitator");
    await expect(late).rejects.toBeInstanceOf(DeadlineError);
    await expect(late).rejects.toThrow("the facilitator did not answer within 0.05 s");
  });
});

describe("token_count's BPE tables", () => {
  it("a table read stranded by a cancelled request does not hold later calls: the next call after the bound reads it again", async () => {
    // A module instance of its own: the shared one has its tables loaded by other test files.
    const fresh = "../../src/skills/token-count.ts?stranded-read";
    const { tokenCount } = (await import(
      /* @vite-ignore */ fresh
    )) as typeof import("../../src/skills/token-count");
    let reads = 0;
    const assets = {
      fetch: (input: RequestInfo | URL, init?: RequestInit) => {
        reads++;
        return reads === 1 ? never() : env.ASSETS.fetch(input, init);
      },
    } as Fetcher;
    const run = async (text: string) =>
      tokenCount.run({ text, encoding: "cl100k_base" }, { env: { ...env, ASSETS: assets }, requestId: "t" });
    const first = run("the first call, whose client went away").catch(() => "cut off");
    await vi.waitFor(() => expect(reads).toBe(1));
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + 20_001);
    // Before: every later call of the isolate awaited the first read, for ever.
    expect(await settledWithin(run("Hello, agents of the web!"), 15_000)).toMatchObject({ approx_tokens: 7 });
    expect(reads).toBe(2);
    expect(await settledWithin(first, 0)).toBe("pending");
  });
});
