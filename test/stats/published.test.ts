import {
  createExecutionContext,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import worker from "../../src/index";
import {
  forgetPublishedStats,
  publishedStats,
  refreshPublishedStats,
  STATS_KV_KEY,
  type StatsRequest,
} from "../../src/stats/published";
import { type StatsDocument, skillStats } from "../../src/stats/query";
import { untilReally } from "../fixtures/real-time";

const app = createApp();

// Every free page that quotes the figures, and the figures themselves.
const PAGES = [
  "/",
  "/docs",
  "/docs/slugify",
  "/docs/reliability",
  "/llms.txt",
  "/.well-known/x402",
  "/api/stats",
];

/** The figures' query: a GROUP BY over every call_log row of 7 days (src/stats/query.ts). */
const isStatsScan = (sql: string) => sql.includes("FROM call_log WHERE at >= ?1 AND at <= ?2");

/** The test database, counting the figures' scans; `fail` makes each of them throw instead. */
function countingDb(opts: { fail?: boolean } = {}) {
  const seen = { scans: 0 };
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "prepare")
        return (sql: string) => {
          if (isStatsScan(sql)) {
            seen.scans++;
            if (opts.fail) throw new Error("D1_ERROR: stats scan refused");
          }
          return target.prepare(sql);
        };
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { db, seen };
}

/** The test KV namespace, counting reads of the published copy. */
function countingKv() {
  const seen = { reads: 0 };
  const kv = new Proxy(env.KV, {
    get(target, prop) {
      if (prop === "get")
        return (key: string, ...rest: unknown[]) => {
          if (key === STATS_KV_KEY) seen.reads++;
          return (target.get as (...a: unknown[]) => unknown)(key, ...rest);
        };
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { kv, seen };
}

async function fetchApp(path: string, e: object, method = "GET") {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`https://skills.test${path}`, { method }), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** *.workers.dev: the Cache API is there but does nothing (every match misses, every put is dropped). */
function cacheApiDoesNothing() {
  vi.spyOn(caches.default, "match").mockResolvedValue(undefined);
  vi.spyOn(caches.default, "put").mockResolvedValue(undefined);
}

/** A database whose every query never settles; `asked` says whether one was started. */
function hungDb() {
  let started = false;
  const db = {
    prepare: () => ({
      bind: () => ({
        all: () => {
          started = true;
          return new Promise(() => {});
        },
      }),
    }),
  } as unknown as D1Database;
  return { db, asked: () => started };
}

/** What publishedStats reads of a request; `held` gathers what it hands to waitUntil. */
const statsRequest = (db: D1Database, held: Promise<unknown>[], method = "GET"): StatsRequest => ({
  env: { DB: db, KV: env.KV },
  executionCtx: { waitUntil: (p) => held.push(p) },
  req: { method },
});

const storedCopy = () => env.KV.get<StatsDocument>(STATS_KV_KEY, "json");

// Each test starts with no copy at all: none in KV, none in this isolate (storage outlives a test).
beforeEach(async () => {
  await env.KV.delete(STATS_KV_KEY);
  forgetPublishedStats();
});
// A failed computation is remembered a minute in this isolate, which every test file shares.
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  forgetPublishedStats();
});

describe("the published figures are computed at most once, whatever the domain", () => {
  it("16 concurrent reads of the free pages, then 14 more one by one, scan call_log once (no Cache API)", async () => {
    cacheApiDoesNothing();
    const { db, seen } = countingDb();
    const e = { ...env, DB: db };
    const concurrent = await Promise.all(
      Array.from({ length: 16 }, (_, i) => fetchApp(PAGES[i % 7] as string, e)),
    );
    expect(concurrent.map((r) => r.status)).toEqual(Array(16).fill(200));
    for (let i = 0; i < 14; i++) expect((await fetchApp(PAGES[i % 7] as string, e)).status).toBe(200);
    expect(seen.scans).toBe(1);
    // The request that computed it stored it: a copy for the other isolates and locations.
    expect((await storedCopy())?.computed_at).toEqual(expect.any(String));
  });

  it("on a custom domain too (a working Cache API), 16 concurrent first reads scan once", async () => {
    const { db, seen } = countingDb();
    const e = { ...env, DB: db };
    const answers = await Promise.all(Array.from({ length: 16 }, () => fetchApp("/api/stats", e)));
    expect(answers.map((r) => r.status)).toEqual(Array(16).fill(200));
    expect(
      new Set(await Promise.all(answers.map(async (r) => (await r.json<StatsDocument>()).computed_at))).size,
    ).toBe(1);
    expect(seen.scans).toBe(1);
  });

  it("with this isolate's copy expired, pages read the KV copy instead of computing", async () => {
    cacheApiDoesNothing();
    const cron = await refreshPublishedStats(env);
    forgetPublishedStats();
    const { db, seen } = countingDb();
    for (const path of PAGES) expect((await fetchApp(path, { ...env, DB: db })).status).toBe(200);
    const stats = await fetchApp("/api/stats", { ...env, DB: db });
    expect(stats.headers.get("x-stats-cache")).toBe("hit");
    expect((await stats.json<StatsDocument>()).computed_at).toBe(cron.computed_at);
    expect(seen.scans).toBe(0);
  });

  it("a hot page reads KV at most once a minute per isolate", async () => {
    await refreshPublishedStats(env);
    forgetPublishedStats();
    const { kv, seen } = countingKv();
    for (let i = 0; i < 10; i++) expect((await fetchApp("/docs", { ...env, KV: kv })).status).toBe(200);
    expect(seen.reads).toBe(1);
    // A minute later the isolate reads the copy again (the Cron may have replaced it).
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + 61_000);
    await fetchApp("/docs", { ...env, KV: kv });
    expect(seen.reads).toBe(2);
  });

  it("concurrent callers share one computation, held by the first caller's waitUntil", async () => {
    let scans = 0;
    const slow = {
      prepare: () => ({
        bind: () => ({
          all: async () => {
            scans++;
            await new Promise((r) => setTimeout(r, 100));
            return { results: [] };
          },
        }),
      }),
    } as unknown as D1Database;
    const held: Promise<unknown>[][] = Array.from({ length: 8 }, () => []);
    const answers = await Promise.all(held.map((h) => publishedStats(statsRequest(slow, h))));
    expect(scans).toBe(1);
    expect(new Set(answers.map((a) => a.doc.computed_at)).size).toBe(1);
    expect(answers.every((a) => a.hit === false)).toBe(true);
    // The first caller holds the computation (and then the copy's write); the others hold nothing.
    expect(held[0]?.length).toBeGreaterThanOrEqual(2);
    expect(held.slice(1).every((h) => h.length === 0)).toBe(true);
    await Promise.all(held[0] as Promise<unknown>[]);
    expect((await storedCopy())?.computed_at).toBe(answers[0]?.doc.computed_at);
    // And later callers are served that copy.
    expect(await publishedStats(statsRequest(slow, []))).toMatchObject({ hit: true });
    expect(scans).toBe(1);
  });

  it("a computation that never settles (cut off with its waitUntil) holds nobody: waits are bounded, and a later request starts another", async () => {
    const { db: hung } = hungDb();
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const waiting = publishedStats(statsRequest(hung, []));
    const outcome = waiting.then(
      () => "answered",
      (e: Error) => e.message,
    );
    // Its own wait (started with the call) ends at 10 s, not before: before, it and everyone
    // after it waited for good.
    await vi.advanceTimersByTimeAsync(9_999);
    expect(await Promise.race([outcome, Promise.resolve("still waiting")])).toBe("still waiting");
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toMatch(/the published figures did not answer within 10 s/);
    vi.useRealTimers();
    // 40 s later the hung load is left behind: the real database answers.
    vi.spyOn(Date, "now").mockReturnValue(t0 + 40_000);
    const held: Promise<unknown>[] = [];
    const later = await publishedStats(statsRequest(env.DB, held));
    expect(later.hit).toBe(false);
    await Promise.all(held); // its copy is stored before the next test clears storage
  }, 30_000);

  it("/api/stats answers 503 with Retry-After, not a bare 500, while a computation does not finish within its wait", async () => {
    const { db: hung, asked } = hungDb();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    // Not waiting for the execution context: the hung computation is in it, for good.
    const answer = app.fetch(
      new Request("https://skills.test/api/stats"),
      { ...env, DB: hung },
      createExecutionContext(),
    );
    // The computation has started (its wait too); its 10 s run out on the fake clock.
    await untilReally(asked, "the computation started");
    await vi.advanceTimersByTimeAsync(10_000);
    vi.useRealTimers();
    const res = await answer;
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("30");
    expect(await res.json()).toEqual({
      detail: "The published figures are being computed; try again shortly.",
    });
    // Leave the hung load behind for the tests after this one.
    vi.spyOn(Date, "now").mockReturnValue(Date.now() + 40_000);
    const held: Promise<unknown>[] = [];
    await publishedStats(statsRequest(env.DB, held));
    await Promise.all(held);
  }, 30_000);

  it("a HEAD is served the figures but stores nothing (HEAD never changes state); the next GET stores them", async () => {
    const { db, seen } = countingDb();
    const head = await fetchApp("/api/stats", { ...env, DB: db }, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("x-stats-cache")).toBe("miss");
    expect(await storedCopy()).toBeNull();
    forgetPublishedStats();
    const get = await fetchApp("/api/stats", { ...env, DB: db });
    expect(get.headers.get("x-stats-cache")).toBe("miss");
    expect((await storedCopy())?.computed_at).toBe((await get.json<StatsDocument>()).computed_at);
    expect(seen.scans).toBe(2);
  });

  it("without a copy and with D1 failing, the pages leave the figures out, and /api/stats and /docs/reliability answer 503 with Retry-After (the page as HTML: test/pages/reliability-unavailable.test.ts)", async () => {
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const { db } = countingDb({ fail: true });
    const e = { ...env, DB: db };
    const llms = await fetchApp("/llms.txt", e);
    expect(llms.status).toBe(200);
    expect(await llms.text()).not.toContain("## Measured reliability");
    const x402 = await fetchApp("/.well-known/x402", e);
    expect(x402.status).toBe(200);
    expect(await x402.json()).not.toHaveProperty("reliability");
    for (const path of ["/", "/docs", "/docs/slugify"]) expect((await fetchApp(path, e)).status).toBe(200);
    for (const path of ["/api/stats", "/docs/reliability"]) {
      const res = await fetchApp(path, e);
      expect(res.status).toBe(503);
      // The failure of the first page's computation is remembered: the rest of its minute.
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(50);
      expect(Number(res.headers.get("retry-after"))).toBeLessThanOrEqual(60);
      const detail = "The published figures cannot be read right now; try again shortly.";
      if (path === "/api/stats") expect(await res.json()).toEqual({ detail });
      else expect(await res.text()).toContain(detail);
    }
    expect(err.mock.calls.map((c) => String(c[0])).join("\n")).toContain("stats unavailable");
  });

  it("a computation that failed is not started again for a minute: 10 free page views scan call_log once, and leave the figures out", async () => {
    cacheApiDoesNothing();
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const { db, seen } = countingDb({ fail: true });
    const e = { ...env, DB: db };
    for (let i = 0; i < 10; i++) {
      const res = await fetchApp(i % 2 ? "/docs" : "/", e);
      expect(res.status).toBe(200);
      // The figures' column (a line per skill) is left out, not shown made up.
      expect(await res.text()).not.toContain('class="muted reliability"');
    }
    expect(seen.scans).toBe(1);
    // /api/stats says so as before (503), without a scan of its own, and to come back once the
    // minute is out: not sooner (no computation starts before then).
    const stats = await fetchApp("/api/stats", e);
    expect(stats.status).toBe(503);
    expect(Number(stats.headers.get("retry-after"))).toBeGreaterThan(50);
    expect(Number(stats.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(seen.scans).toBe(1);
    expect(err.mock.calls.map((c) => String(c[0])).join("\n")).toContain("not retried for a minute");
    // Written once for the failure, not once per view of its minute.
    expect(err.mock.calls.filter((c) => String(c[0]).includes("stats unavailable"))).toHaveLength(1);
    // A minute later the next view computes again; once D1 answers, the figures are back.
    const now = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(now + 61_000);
    expect((await fetchApp("/docs", e)).status).toBe(200);
    expect(seen.scans).toBe(2);
    vi.spyOn(Date, "now").mockReturnValue(now + 122_000);
    const back = await fetchApp("/api/stats", env);
    expect(back.status).toBe(200);
    expect(back.headers.get("x-stats-cache")).toBe("miss");
  });
});

describe("a failure remembered holds back D1 only", () => {
  it("a copy stored in KV meanwhile (another isolate's Cron) is served at once, and Retry-After is the time left of the minute", async () => {
    cacheApiDoesNothing();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const { db, seen } = countingDb({ fail: true });
    const failing = { ...env, DB: db };
    const t0 = Date.now();
    const first = await fetchApp("/api/stats", failing);
    expect(first.status).toBe(503);
    expect(seen.scans).toBe(1);
    // 31 s on, still no copy: refused without a scan, told to come back when the minute is out.
    vi.spyOn(Date, "now").mockReturnValue(t0 + 31_000);
    const refused = await fetchApp("/api/stats", failing);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(29);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(30);
    vi.spyOn(Date, "now").mockReturnValue(t0 + 45_000);
    const page = await fetchApp("/docs/reliability", failing);
    expect(page.status).toBe(503);
    expect(Number(page.headers.get("retry-after"))).toBeGreaterThanOrEqual(15);
    expect(Number(page.headers.get("retry-after"))).toBeLessThanOrEqual(16);
    expect(seen.scans).toBe(1);
    // The Cron of another isolate stores a copy: served at once, within the minute.
    const cron = await skillStats(env.DB);
    await env.KV.put(STATS_KV_KEY, JSON.stringify(cron));
    vi.spyOn(Date, "now").mockReturnValue(t0 + 46_000);
    const stats = await fetchApp("/api/stats", env);
    expect(stats.status).toBe(200);
    expect(stats.headers.get("x-stats-cache")).toBe("hit");
    expect((await stats.json<StatsDocument>()).computed_at).toBe(cron.computed_at);
    expect((await fetchApp("/docs/reliability", env)).status).toBe(200);
    expect(seen.scans).toBe(1);
  });

  it("a copy in KV is served whatever the failure remembered: pages show the figures from the first view on", async () => {
    cacheApiDoesNothing();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const { db } = countingDb({ fail: true });
    expect((await fetchApp("/api/stats", { ...env, DB: db })).status).toBe(503);
    await env.KV.put(STATS_KV_KEY, JSON.stringify(await skillStats(env.DB)));
    const docs = await fetchApp("/docs", { ...env, DB: db });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('class="muted reliability"');
  });
});

describe("the Cron refreshes the figures beside reconciliation", () => {
  const controller = () => createScheduledController({ cron: "*/5 * * * *" });

  it("stores the document in KV and logs when it was computed", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    expect(await storedCopy()).toBeNull();
    const ctx = createExecutionContext();
    await worker.scheduled(controller(), { ...env, RPC_URL: "" }, ctx);
    await waitOnExecutionContext(ctx);
    const copy = await storedCopy();
    expect(copy).toMatchObject({ source: "d1:call_log", skills: expect.any(Array) });
    const written = log.mock.calls.map((c) => String(c[0])).join("\n");
    expect(written).toContain(`"stats":{"computed_at":"${copy?.computed_at}"}`);
    expect(written).toMatch(/"reconcile":\{/);
  });

  it("a failed stats refresh fails the run by name, and reconciliation still runs and reports", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const { db } = countingDb({ fail: true });
    const ctx = createExecutionContext();
    const thrown = await worker.scheduled(controller(), { ...env, DB: db, RPC_URL: "" }, ctx).then(
      () => "",
      (e: unknown) => String(e),
    );
    await waitOnExecutionContext(ctx);
    expect(thrown).toMatch(/stats: .*stats scan refused/);
    expect(thrown).not.toMatch(/reconcile:/);
    expect(log.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
      /"reconcile":\{.*"skipped":"RPC_URL is not set"/,
    );
    expect(err.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(/stats: .*stats scan refused/);
    expect(await storedCopy()).toBeNull();
  });

  it("a failed reconciliation fails the run by name, and the figures are still refreshed", async () => {
    vi.spyOn(console, "log").mockImplementation(() => {});
    vi.spyOn(console, "error").mockImplementation(() => {});
    const ctx = createExecutionContext();
    const thrown = await worker
      .scheduled(controller(), { ...env, RPC_URL: "http://127.0.0.1:9/v2/SECRET_PROVIDER_KEY_123" }, ctx)
      .then(
        () => "",
        (e: unknown) => String(e),
      );
    await waitOnExecutionContext(ctx);
    expect(thrown).toMatch(/reconcile:/);
    expect(thrown).not.toMatch(/stats:/);
    expect(thrown).not.toContain("SECRET_PROVIDER_KEY_123");
    expect(await storedCopy()).toMatchObject({ source: "d1:call_log" });
  }, 30_000);
});
