import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
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
  it("calls the figures cannot tell apart are one row with their count; the row keeps the latest time and the longest server time", () => {
    const rows = callRows([
      rec({ at: 1_005, durationMs: 9 }),
      rec({ at: 1_001, durationMs: 2 }),
      rec({ at: 1_003, durationMs: 4 }),
      rec({ status: 429, outcome: "rate_limited" }),
      rec({ skill: "sha256" }),
      rec({ transport: "mcp" }),
    ]);
    expect(rows.map(({ r, n }) => [r.skill, r.status, r.transport, n])).toEqual([
      ["slugify", 402, "http", 3],
      ["slugify", 429, "http", 1],
      ["sha256", 402, "http", 1],
      ["slugify", 402, "mcp", 1],
    ]);
    expect(rows[0]?.r).toMatchObject({ at: 1_005, durationMs: 9 });
  });

  it("admitted calls are grouped only with the same server time (the percentiles' histogram), charged calls never", () => {
    const free = (durationMs: number) =>
      rec({ status: 200, outcome: "ok", paymentMethod: "free_beta", durationMs });
    const paid = rec({ status: 200, outcome: "ok", paymentMethod: "x402_v2", amountMicro: 3000 });
    const rows = callRows([free(3), free(3), free(4), paid, paid]);
    expect(rows.map(({ r, n }) => [r.paymentMethod, r.durationMs, r.amountMicro, n])).toEqual([
      ["free_beta", 3, 0, 2],
      ["free_beta", 4, 0, 1],
      ["x402_v2", 2, 3000, 1],
      ["x402_v2", 2, 3000, 1],
    ]);
  });

  it("a burst of 100 unpaid 402s queued inside one window reaches D1 as one row counting them all", async () => {
    // Queued as recordCall queues them, in a week and under a skill name of their own: the workers
    // project shares one database and one isolate's buffer.
    const at = Date.UTC(2032, 5, 2, 12);
    const batched = { ...env, CALL_LOG_FLUSH_MS: "50" };
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) {
      const write = queueCall(batched, rec({ at: at + i, skill: "call_log_burst_test", durationMs: i % 7 }));
      if (write) writes.push(write);
    }
    await Promise.all(writes);
    const logged = await env.DB.prepare(
      "SELECT count(*) AS rows, sum(n) AS calls, max(at) AS last FROM call_log WHERE skill = 'call_log_burst_test'",
    ).first<{ rows: number; calls: number; last: number }>();
    expect(logged).toEqual({ rows: 1, calls: 100, last: at + 99 });
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
