import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { refreshPublishedStats } from "../../src/stats/published";
import { adminCookie } from "../helpers";

const app = createApp();
const DAY = 86_400_000;

/** env.DB, summing the rows D1 says each statement read (meta.rows_read), and those of call_log's. */
function countingDb(db: D1Database) {
  const seen = { rows: 0, callLog: 0 };
  const counter =
    (sql: string) =>
    <R extends { meta?: { rows_read?: number } }>(r: R) => {
      seen.rows += r.meta?.rows_read ?? 0;
      if (sql.includes("call_log")) seen.callLog += r.meta?.rows_read ?? 0;
      return r;
    };
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const add = counter(sql);
    return Object.assign(Object.create(null), {
      inner: stmt,
      sql,
      bind: (...args: unknown[]) => wrap(stmt.bind(...args), sql),
      all: async () => add(await stmt.all()),
      run: async () => add(await stmt.run()),
      // Read as all() so its rows are counted too.
      first: async (col?: string) => {
        const row = (add(await stmt.all()).results[0] ?? null) as Record<string, unknown> | null;
        return col === undefined ? row : (row?.[col] ?? null);
      },
      raw: (o?: object) => stmt.raw(o as { columnNames: true }),
    });
  };
  type Wrapped = { inner: D1PreparedStatement; sql: string };
  const counted = {
    prepare: (sql: string) => wrap(db.prepare(sql), sql),
    batch: async (stmts: D1PreparedStatement[]) => {
      const wrapped = stmts as unknown as Wrapped[];
      const results = await db.batch(wrapped.map((s) => s.inner));
      for (const [i, r] of results.entries()) counter(wrapped[i]?.sql ?? "")(r);
      return results;
    },
    exec: (sql: string) => db.exec(sql),
    withSession: () => counted,
    dump: () => db.dump(),
  };
  return { db: counted as unknown as D1Database, seen };
}

async function view(e: object, cookie: string) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request("https://skills.test/admin", { headers: { cookie } }), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a view of /admin does not scan the call log for figures the Cron publishes", () => {
  it("reads the window's call_log rows once (revenue), not three times; the 7-day figures come from the published copy, with their age", {
    timeout: 60_000,
  }, async () => {
    const token = "rows-read-t0ken-0123456789abcdefghij";
    const now = Date.now();
    const seeded = 3000;
    // Refused calls of a probe skill three days ago: inside both the 7-day and the 14-day windows.
    const insert = env.DB.prepare(
      `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
       SELECT ?1, 'rows_probe', 402, 'payment_required', 1, 'none', 0, 'http' FROM json_each(?2)`,
    );
    await insert.bind(now - 3 * DAY, JSON.stringify(Array(seeded).fill(0))).run();
    try {
      // What the Cron does every 5 minutes.
      await refreshPublishedStats(env);
      const cookie = await adminCookie(
        (path, init) =>
          app.fetch(new Request(`https://skills.test${path}`, { ...init, redirect: "manual" }), {
            ...env,
            ADMIN_TOKEN: token,
          }),
        token,
      );
      const counting = countingDb(env.DB);
      const res = await view({ ...env, ADMIN_TOKEN: token, DB: counting.db }, cookie);
      expect(res.status).toBe(200);
      const html = await res.text();
      // What one read of the 14-day window costs D1 (an index entry and a row per call).
      const oneRead = (
        await env.DB.prepare("SELECT sum(amount_micro) FROM call_log WHERE at >= ?1")
          .bind(now - 14 * DAY)
          .run()
      ).meta.rows_read;
      const charged = await env.DB.prepare(
        "SELECT count(*) AS n FROM call_log WHERE at >= ?1 AND amount_micro > 0",
      )
        .bind(now - 14 * DAY)
        .first<number>("n");
      console.log(
        `GET /admin read ${counting.seen.rows} D1 rows, ${counting.seen.callLog} of them call_log's; one read of its 14 days: ${oneRead}`,
      );
      // Before: the 7-day figures, then revenue per day and per skill, each a read of every row
      // and a sort of it (5 reads' worth); now revenue alone: one read, and a sort of the charged.
      expect(oneRead).toBeGreaterThanOrEqual(seeded);
      expect(counting.seen.callLog).toBeLessThanOrEqual(oneRead + Number(charged) + 20);
      // The figures shown are the published ones, and the page says how old they are.
      expect(html).toMatch(/<th scope="row">rows_probe<\/th><td>3000<\/td>/);
      expect(html).toMatch(
        /as published at [0-9T:.-]+Z \(\d+ min ago; recomputed every 5 minutes by the Cron\)/,
      );
    } finally {
      await env.DB.prepare("DELETE FROM call_log WHERE skill = 'rows_probe'").run();
      await refreshPublishedStats(env);
    }
  });
});
