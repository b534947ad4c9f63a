import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { skillStats } from "../../src/stats/query";
import { type CallRecord, callRows, queueCall } from "../../src/stats/record";

// Every call of a priced route is logged, unpaid ones included: one D1 row per call let anyone
// fill the database (and so refuse every paid call) for free. What a flush writes instead.

const rec = (over: Partial<CallRecord>): CallRecord => ({
  at: 1_000,
  skill: "slugify",
  status: 402,
  outcome: "payment_required",
  durationMs: 2,
  paymentMethod: "none",
  amountMicro: 0,
  transport: "http",
  ...over,
});

describe("the rows a flush of the call log writes", () => {
  it("batched, the calls of a minute the figures cannot tell apart are one row with their count and latest time", () => {
    const minute = 60_000 * 29_000_000;
    const rows = callRows(
      [
        rec({ at: minute + 5, durationMs: 9 }),
        rec({ at: minute + 1, durationMs: 2 }),
        rec({ at: minute + 3, durationMs: 4 }),
        rec({ at: minute + 60_000 }),
        rec({ at: minute, status: 429, outcome: "rate_limited" }),
        rec({ at: minute, skill: "sha256" }),
        rec({ at: minute, transport: "mcp" }),
      ],
      true,
    );
    expect(rows.map(({ r, n, bucket }) => [r.skill, r.status, r.transport, bucket, n])).toEqual([
      ["slugify", 402, "http", 29_000_000, 3],
      ["slugify", 402, "http", 29_000_001, 1],
      ["slugify", 429, "http", 29_000_000, 1],
      ["sha256", 402, "http", 29_000_000, 1],
      ["slugify", 402, "mcp", 29_000_000, 1],
    ]);
    // A refusal's server time is read by nothing: kept as 0, so one group whatever it took.
    expect(rows[0]?.r).toMatchObject({ at: minute + 5, durationMs: 0 });
    // Unbatched (the unit tests' CALL_LOG_FLUSH_MS = 0, seeding), every call is a row of its own.
    expect(callRows([rec({}), rec({})], false).map(({ n, bucket }) => [n, bucket])).toEqual([
      [1, null],
      [1, null],
    ]);
  });

  it("admitted calls are grouped only with the same server time (the percentiles' histogram), charged calls never", () => {
    const free = (durationMs: number) =>
      rec({ status: 200, outcome: "ok", paymentMethod: "free_beta", durationMs });
    const paid = rec({ status: 200, outcome: "ok", paymentMethod: "x402_v2", amountMicro: 3000 });
    const rows = callRows([free(3), free(3), free(4), paid, paid], true);
    expect(rows.map(({ r, n, bucket }) => [r.paymentMethod, r.durationMs, r.amountMicro, n, bucket])).toEqual(
      [
        ["free_beta", 3, 0, 2, 0],
        ["free_beta", 4, 0, 1, 0],
        ["x402_v2", 2, 3000, 1, null],
        ["x402_v2", 2, 3000, 1, null],
      ],
    );
  });

  /** Queues records as recordCall does, batched, and waits for every flush they start. */
  async function queued(records: CallRecord[]) {
    const batched = { ...env, CALL_LOG_FLUSH_MS: "50" };
    const writes = records.map((r) => queueCall(batched, r)).filter((w) => w !== undefined);
    await Promise.all(writes);
  }
  // In weeks and under skill names of their own: the workers project shares one database and one
  // isolate's buffer.
  const logged = (skill: string) =>
    env.DB.prepare("SELECT count(*) AS rows, sum(n) AS calls, max(at) AS last FROM call_log WHERE skill = ?1")
      .bind(skill)
      .first<{ rows: number; calls: number; last: number }>();

  it("a burst of 100 unpaid 402s queued inside one window reaches D1 as one row counting them all", async () => {
    const at = Date.UTC(2032, 5, 2, 12);
    await queued(
      Array.from({ length: 100 }, (_, i) =>
        rec({ at: at + i, skill: "call_log_burst_test", durationMs: i % 7 }),
      ),
    );
    expect(await logged("call_log_burst_test")).toEqual({ rows: 1, calls: 100, last: at + 99 });
  });

  it("a flood of one kind of call inside one window is one write after the window, not a write every 100 calls", async () => {
    const at = Date.UTC(2032, 5, 4, 12);
    const batched = { ...env, CALL_LOG_FLUSH_MS: "50" };
    // Queued in one tick, as a flood of unpaid 402s in one isolate: only the first call's request
    // writes (after the window). Counting calls, the 100th and the 200th wrote at once as well.
    const writes = Array.from({ length: 250 }, (_, i) =>
      queueCall(batched, rec({ at: at + i, skill: "call_log_flood_test" })),
    ).filter((w) => w !== undefined);
    expect(writes.length).toBe(1);
    await Promise.all(writes);
    expect(await logged("call_log_flood_test")).toEqual({ rows: 1, calls: 250, last: at + 249 });
  });

  it("100 rows waiting are written at once, without waiting for the window", async () => {
    const at = Date.UTC(2032, 5, 5, 12);
    const batched = { ...env, CALL_LOG_FLUSH_MS: "50" };
    // Charged calls keep a row each: the 100th fills the buffer and its request writes them all.
    const writes = Array.from({ length: 100 }, (_, i) =>
      queueCall(
        batched,
        rec({
          at: at + i,
          skill: "call_log_full_test",
          status: 200,
          outcome: "ok",
          paymentMethod: "x402_v2",
          amountMicro: 3000,
        }),
      ),
    );
    expect(writes.map((w, i) => (w ? i : -1)).filter((i) => i >= 0)).toEqual([0, 99]);
    await writes[99];
    expect(await logged("call_log_full_test")).toEqual({ rows: 100, calls: 100, last: at + 99 });
    await Promise.all(writes);
  });

  it("a flush window past what waitUntil keeps alive (30 s after the answer) is cut to 20 s: the batch is written then", async () => {
    const at = Date.UTC(2032, 5, 7, 12);
    // A database of its own (the buffer is per binding), so no other test's flush takes this batch.
    const own = {
      prepare: (sql: string) => env.DB.prepare(sql),
      batch: (statements: D1PreparedStatement[]) => env.DB.batch(statements),
    } as unknown as D1Database;
    const tenMinutes = { ...env, DB: own, CALL_LOG_FLUSH_MS: "600000" };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const first = queueCall(tenMinutes, rec({ at, skill: "call_log_window_cap_test" }));
      expect(first).toBeDefined();
      await vi.advanceTimersByTimeAsync(20_000);
      // The first batch was taken for its write: the next call starts a batch (and a timer) of its own.
      const second = queueCall(tenMinutes, rec({ at: at + 1, skill: "call_log_window_cap_test" }));
      expect(second).toBeDefined();
      await vi.advanceTimersByTimeAsync(20_000);
      await Promise.all([first, second]);
    } finally {
      vi.useRealTimers();
    }
    expect(await logged("call_log_window_cap_test")).toEqual({ rows: 1, calls: 2, last: at + 1 });
  });

  it("a batch D1 refuses is one error line giving its rows and the calls they hold apart", async () => {
    const at = Date.UTC(2032, 5, 6, 12);
    // A database of its own (the buffer is per binding) whose batch fails, as a full D1's does.
    const failing = {
      prepare: (sql: string) => env.DB.prepare(sql),
      batch: () => Promise.reject(new Error("D1_ERROR: database full")),
    } as unknown as D1Database;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const batched = { ...env, DB: failing, CALL_LOG_FLUSH_MS: "50" };
      const writes = [
        queueCall(batched, rec({ at, skill: "call_log_refused_test" })),
        queueCall(batched, rec({ at: at + 1, skill: "call_log_refused_test" })),
        queueCall(
          batched,
          rec({ at: at + 2, skill: "call_log_refused_test", status: 200, outcome: "ok", amountMicro: 3000 }),
        ),
      ].filter((w) => w !== undefined);
      await Promise.all(writes);
      const lines = errors.mock.calls.map((c) => JSON.parse(String(c[0])) as Record<string, unknown>);
      expect(lines).toEqual([
        {
          level: "error",
          msg: "stats write failed",
          rows: 2,
          calls: 3,
          error: "Error: D1_ERROR: database full",
        },
      ]);
    } finally {
      errors.mockRestore();
    }
  });

  it("later flushes (any isolate's) add to their minute's rows: a caller spreading calls over 30 groups keeps 30 rows, however many calls", async () => {
    const at = Date.UTC(2032, 5, 3, 12);
    const spread = (from: number) =>
      Array.from({ length: 90 }, (_, i) =>
        rec({
          at: from + i,
          skill: `call_log_spread_${i % 30}`,
          status: i % 2 ? 402 : 422,
          outcome: i % 2 ? "payment_required" : "validation",
        }),
      );
    // Three flushes of 90 calls in one minute, then one in the next.
    await queued(spread(at));
    await queued(spread(at + 1_000));
    await queued(spread(at + 2_000));
    await queued(spread(at + 60_000));
    const rows = await env.DB.prepare(
      "SELECT count(*) AS rows, sum(n) AS calls FROM call_log WHERE skill LIKE 'call_log_spread_%'",
    ).first<{ rows: number; calls: number }>();
    expect(rows).toEqual({ rows: 60, calls: 360 });
    expect(await logged("call_log_spread_0")).toEqual({ rows: 2, calls: 12, last: at + 60_000 + 60 });
  });

  it("the published figures count the calls a row stands for", async () => {
    // A week of its own, and a skill name of its own: the workers project shares one database.
    const now = Date.UTC(2032, 5, 9, 12);
    await env.DB.prepare(
      `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport, n)
       VALUES (?1, 'call_log_rows_test', 402, 'payment_required', 1, 'none', 0, 'http', 40),
              (?1, 'call_log_rows_test', 200, 'ok', 7, 'free_beta', 0, 'http', 18),
              (?1, 'call_log_rows_test', 200, 'ok', 8, 'free_beta', 0, 'http', 1),
              (?1, 'call_log_rows_test', 500, 'server_error', 9, 'free_beta', 0, 'http', 1)`,
    )
      .bind(now - 60_000)
      .run();
    const stats = await skillStats(env.DB, now);
    // 18 calls at 7 ms, one at 8 and one at 9: the 95th of 20 is the 19th, 8 ms.
    const day = stats.skills.find((s) => s.skill === "call_log_rows_test")?.windows["24h"];
    expect(day).toMatchObject({ calls: 60, admitted: 20, succeeded: 19, p50_ms: 7, p95_ms: 8 });
  });
});
