import {
  createExecutionContext,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import worker from "../../src/index";
import { adminCookie } from "../helpers";

// The Cron's upkeep of the database (src/ops/database.ts): expired rows deleted whatever else
// fails, and the size read against D1's cap.
const app = createApp();
const DAY = 86_400_000;
const FULL = "D1_ERROR: database or disk is full: SQLITE_FULL";

/** env.DB as D1 answers at its size cap: statements that add rows fail; reads, UPDATEs and DELETEs run. */
function fullDb(db: D1Database) {
  const seen: string[] = [];
  const adds = (sql: string) => /^\s*INSERT/i.test(sql);
  type Wrapped = { inner: D1PreparedStatement; sql: string };
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement =>
    Object.assign(Object.create(null), {
      inner: stmt,
      sql,
      bind: (...a: unknown[]) => wrap(stmt.bind(...a), sql),
      all: async () => {
        seen.push(sql);
        if (adds(sql)) throw new Error(FULL);
        return stmt.all();
      },
      run: async () => {
        seen.push(sql);
        if (adds(sql)) throw new Error(FULL);
        return stmt.run();
      },
      first: async (c?: string) => {
        seen.push(sql);
        if (adds(sql)) throw new Error(FULL);
        return c === undefined ? stmt.first() : stmt.first(c);
      },
      raw: (o?: object) => stmt.raw(o as { columnNames: true }),
    });
  const full = {
    prepare: (sql: string) => wrap(db.prepare(sql), sql),
    batch: async (stmts: D1PreparedStatement[]) => {
      const wrapped = stmts as unknown as Wrapped[];
      for (const s of wrapped) seen.push(s.sql);
      if (wrapped.some((s) => adds(s.sql))) throw new Error(FULL);
      return db.batch(wrapped.map((s) => s.inner));
    },
    exec: (sql: string) => db.exec(sql),
    withSession: () => full,
    dump: () => db.dump(),
  };
  return { db: full as unknown as D1Database, seen };
}

/** env.DB reporting `bytes` as its size after every statement (D1's meta.size_after). */
function sizedDb(db: D1Database, bytes: number): D1Database {
  const inner = new WeakMap<object, D1PreparedStatement>();
  const sized = <R extends { meta: D1Meta }>(r: R) => ({ ...r, meta: { ...r.meta, size_after: bytes } });
  const wrap = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const w = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...a: unknown[]) => wrap(target.bind(...a));
        if (prop === "run") return async () => sized(await target.run());
        if (prop === "all") return async () => sized(await target.all());
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    inner.set(w, stmt);
    return w;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (prop === "batch")
        return async (stmts: D1PreparedStatement[]) =>
          (await target.batch(stmts.map((s) => inner.get(s) ?? s))).map(sized);
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

async function runCron(e: object) {
  const ctx = createExecutionContext();
  const thrown = await worker
    .scheduled(createScheduledController({ cron: "*/5 * * * *" }), e as typeof env, ctx)
    .then(
      () => "",
      (err: unknown) => String(err),
    );
  await waitOnExecutionContext(ctx);
  return thrown;
}

const logged = (spy: { mock: { calls: unknown[][] } }) => spy.mock.calls.map((c) => String(c[0])).join("\n");

afterEach(async () => {
  vi.restoreAllMocks();
  await env.DB.prepare("DELETE FROM idempotent_results WHERE key LIKE 'x402:prune-%'").run();
  await env.DB.prepare("DELETE FROM call_log WHERE skill = 'prune_probe'").run();
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id = 'cs_prune_probe'").run();
});

/** `n` call-log rows of a probe skill at `at`. */
const seedCalls = (n: number, at: number) =>
  env.DB.prepare(
    `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
     SELECT ?1, 'prune_probe', 402, 'payment_required', 1, 'none', 0, 'http' FROM json_each(?2)`,
  )
    .bind(at, JSON.stringify(Array(n).fill(0)))
    .run();

const probeCalls = async (olderThan: number) =>
  env.DB.prepare("SELECT count(*) AS n FROM call_log WHERE skill = 'prune_probe' AND at < ?1")
    .bind(olderThan)
    .first<number>("n");

describe("the Cron frees the database's dead rows even when D1 refuses every INSERT", () => {
  it("deletes expired stored answers and call-log rows past 30 days, clears a payload never paid, and keeps the live ones", {
    timeout: 60_000,
  }, async () => {
    const now = Date.now();
    const answer = (key: string, at: number) =>
      env.DB.prepare(
        `INSERT INTO idempotent_results (key, method, path, body_sha256, principal, request_id, status, http_status, headers, body, created_at, updated_at)
         VALUES (?1, 'POST', '/api/skills/json-sort', 'h', 'p', ?2, 'done', 200, '[]', ?3, ?4, ?4)`,
      )
        .bind(key, crypto.randomUUID(), "x".repeat(200_000), at)
        .run();
    // Yesterday's stored answers (expired), as a day-old fill leaves them, and one still replayable.
    for (let i = 0; i < 5; i++) await answer(`x402:prune-old-${i}`, now - 2 * DAY);
    await answer("x402:prune-live", now - DAY / 2);
    // 2,500 call-log rows 31 days old (three chunks of deletes) and one of yesterday.
    await seedCalls(2500, now - 31 * DAY);
    await seedCalls(1, now - DAY);
    // A checkout never paid, five days old: nothing can record it paid any more, its payload goes.
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       VALUES ('cs_prune_probe', 'json_sort', 1, 51, 'open', ?1, 200000, ?2, ?2)`,
    )
      .bind("x".repeat(200_000), now - 5 * DAY)
      .run();

    const full = fullDb(env.DB);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    vi.spyOn(console, "error").mockImplementation(() => {});
    const thrown = await runCron({ ...env, DB: full.db, RPC_URL: "" });
    // The database is full, not down: the run's deletes and reads went through.
    expect(thrown).not.toMatch(/prune|database size/);
    expect(full.seen.some((sql) => /^\s*INSERT/i.test(sql))).toBe(false);

    const left = await env.DB.prepare(
      "SELECT key FROM idempotent_results WHERE key LIKE 'x402:prune-%' ORDER BY key",
    ).all<{ key: string }>();
    expect(left.results.map((r) => r.key)).toEqual(["x402:prune-live"]);
    expect(await probeCalls(now - 30 * DAY)).toBe(0);
    expect(await probeCalls(now)).toBe(1);
    expect(
      await env.DB.prepare(
        "SELECT payload, payload_bytes FROM checkout_sessions WHERE id = 'cs_prune_probe'",
      ).first(),
    ).toEqual({ payload: null, payload_bytes: null });
    // Bounded deletes: D1 has no DELETE … LIMIT, so each takes a chunk of rowids.
    const deletes = full.seen.filter((sql) => /DELETE/i.test(sql));
    expect(deletes.length).toBeGreaterThan(0);
    expect(
      deletes.every((sql) => /WHERE rowid IN\s+\(SELECT rowid FROM \w+ WHERE .* LIMIT \?2\)/s.test(sql)),
    ).toBe(true);
    // Counts over the whole shared D1: at least this test's rows (other files may leave expired
    // rows too), and every table done in this run.
    const line = log.mock.calls.map((c) => String(c[0])).find((l) => l.includes('"pruned":'));
    const pruned = (JSON.parse(String(line)) as { pruned: Record<string, Record<string, number | boolean>> })
      .pruned;
    expect(Object.keys(pruned)).toEqual([
      "idempotent_results",
      "call_log",
      "checkout_payloads",
      "checkout_payloads_measured",
      "checkout_payload_total",
      "osint_seeds",
      "checkout_sessions",
      "webhook_events",
      "card_spends",
    ]);
    expect(pruned.idempotent_results?.deleted).toBeGreaterThanOrEqual(5);
    expect(pruned.call_log?.deleted).toBeGreaterThanOrEqual(2000);
    expect(pruned.checkout_payloads?.deleted).toBeGreaterThanOrEqual(1);
    for (const [table, counts] of Object.entries(pruned)) {
      if (table === "checkout_payload_total") {
        expect(counts).toEqual({ bytes: expect.any(Number), drift: expect.any(Number) });
      } else {
        expect(counts).toEqual({ deleted: expect.any(Number), more: false });
      }
    }
  });

  it("deletes at most 10 chunks of 1,000 rows a table per run; the next run takes the rest", {
    timeout: 60_000,
  }, async () => {
    const now = Date.now();
    await seedCalls(10_500, now - 40 * DAY);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    expect(await runCron({ ...env, RPC_URL: "" })).toBe("");
    expect(await probeCalls(now)).toBe(500);
    expect(logged(log)).toMatch(/"call_log":\{"deleted":10000,"more":true\}/);
    expect(await runCron({ ...env, RPC_URL: "" })).toBe("");
    expect(await probeCalls(now)).toBe(0);
  });
});

describe("the database's size", () => {
  it("the Cron logs it with its summary, at level info below 80 % of D1's 10 GB cap", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(await runCron({ ...env, RPC_URL: "" })).toBe("");
    expect(logged(log)).toMatch(
      /"level":"info","database":\{"size_bytes":\d+,"cap_bytes":10000000000,"percent_of_cap":[\d.]+\}/,
    );
    expect(logged(warn)).not.toContain('"database"');
  });

  it("above 80 % of the cap the Cron logs it at level warn", async () => {
    vi.spyOn(console, "log").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await runCron({ ...env, DB: sizedDb(env.DB, 8_500_000_000), RPC_URL: "" });
    expect(logged(warn)).toContain(
      '"level":"warn","database":{"size_bytes":8500000000,"cap_bytes":10000000000,"percent_of_cap":85}',
    );
  });

  it("80 % exactly is still info; the cap is the paid plan's 10 GB", async () => {
    const { D1_MAX_DATABASE_BYTES, sizeReport } = await import("../../src/ops/database");
    expect(D1_MAX_DATABASE_BYTES).toBe(10_000_000_000);
    expect(sizeReport(8_000_000_000).level).toBe("info");
    expect(sizeReport(8_000_000_001).level).toBe("warn");
  });

  it("/admin shows it in one line, and says what to do near the cap", async () => {
    const token = "db-size-t0ken-0123456789abcdefghij";
    const send = (path: string, e: object, init: RequestInit = {}) =>
      app.fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), e);
    const adminEnv = { ...env, ADMIN_TOKEN: token };
    const cookie = await adminCookie((path, init) => send(path, adminEnv, init), token);
    const line = async (e: object) => {
      const res = await send("/admin", e, { headers: { cookie } });
      expect(res.status).toBe(200);
      return (await res.text()).match(/<p class="muted" id="database-size">([^<]*)<\/p>/)?.[1];
    };
    expect(await line(adminEnv)).toMatch(/^Database size: \d+\.\d MB, [\d.]+ % of D1&#39;s 10 GB cap\.$/);
    expect(await line({ ...adminEnv, DB: sizedDb(env.DB, 9_000_000_000) })).toBe(
      "Database size: 9000.0 MB, 90 % of D1&#39;s 10 GB cap: archive the ledgers by hand before it is full (docs/OPERATIONS.md, &quot;Database size&quot;).",
    );
  });
});
