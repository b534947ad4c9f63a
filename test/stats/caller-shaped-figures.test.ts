import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import type { AppEnv } from "../../src/env";
import { ReliabilityTable } from "../../src/pages/reliability-table";
import { refreshPublishedStats, reliabilityLine, reliabilitySummary } from "../../src/stats/published";
import { type StatsDocument, skillStats } from "../../src/stats/query";
import { recordCall } from "../../src/stats/record";
import { paidEnv } from "../helpers";

// Seeded rows live in weeks of their own, so other test files' rows never count.
const NOW = Date.UTC(2033, 5, 15, 12, 0, 0);
const DAY = 86_400_000;

/** Inserts `n` rows of one kind in a few multi-row statements (a test seeds tens of thousands). */
async function seed(at: number, skill: string, outcome: string, durationMs: number, n: number) {
  const status = outcome === "ok" ? 200 : outcome === "upstream" ? 502 : 500;
  for (let done = 0; done < n; done += 500) {
    const rows = Math.min(500, n - done);
    await env.DB.prepare(
      `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
       SELECT ?1, ?2, ?3, ?4, ?5, 'x402_v2', 0, 'http' FROM (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < ?6) SELECT i FROM r)`,
    )
      .bind(at, skill, status, outcome, durationMs, rows)
      .run();
  }
}

describe("published shares never flatter a skill", () => {
  it("one failure in 20,001 calls is not a 100% success rate, and one upstream error is not 0%", {
    timeout: 60_000,
  }, async () => {
    const at = NOW - 1000;
    await seed(at, "slugify", "ok", 5, 20_000);
    await seed(at, "slugify", "server_error", 5, 1);
    await seed(at, "research", "ok", 5, 20_000);
    await seed(at, "research", "upstream", 5, 1);
    const doc = await skillStats(env.DB, NOW);
    const slugify = doc.skills.find((s) => s.skill === "slugify")?.windows["7d"];
    expect(slugify?.admitted).toBe(20_001);
    // Rounded to nearest, 20,000 / 20,001 was published as 1.
    expect(slugify?.success_rate).toBe(0.9999);
    expect(reliabilityLine(doc, "slugify")).toMatch(/^99\.9% success/);
    const research = doc.skills.find((s) => s.skill === "research")?.windows["7d"];
    expect(research?.upstream_error_rate).toBe(0.0001);
    expect(reliabilityLine(doc, "research")).toContain("upstream errors 0.1%");
  });

  it("4,999 of 5,000 reads 99.9% on every page, not 100.0%", { timeout: 30_000 }, async () => {
    const at = NOW + 10 * DAY;
    await seed(at, "slugify", "ok", 5, 4_999);
    await seed(at, "slugify", "server_error", 5, 1);
    const doc = await skillStats(env.DB, at + 1000);
    expect(doc.skills.find((s) => s.skill === "slugify")?.windows["7d"].success_rate).toBe(0.9998);
    expect(reliabilityLine(doc, "slugify")).toMatch(/^99\.9% success over 5000 admitted calls/);
  });
});

describe("a p95 needs 20 calls", () => {
  it("one slow call among 19 sets no p95; among 20 it is the 19th fastest", async () => {
    const at = NOW + 20 * DAY;
    await seed(at, "sha256", "ok", 5, 18);
    await seed(at, "sha256", "ok", 60_000, 1);
    const few = (await skillStats(env.DB, at + 1000)).skills.find((s) => s.skill === "sha256")?.windows["7d"];
    // Nearest-rank p95 of 19 values is their maximum: one caller's slow call was the p95.
    expect(few).toMatchObject({ admitted: 19, p50_ms: 5, p95_ms: null });
    await seed(at, "sha256", "ok", 5, 1);
    const doc = await skillStats(env.DB, at + 1000);
    expect(doc.skills.find((s) => s.skill === "sha256")?.windows["7d"]).toMatchObject({
      admitted: 20,
      p95_ms: 5,
    });
    expect(reliabilityLine(doc, "sha256")).toContain("p95 5 ms");
  });
});

describe("what the caller's body costs is the caller's", () => {
  // Bodies sent with a Content-Length, through the whole app: the global body cap lets a declared
  // length within it through unread (src/http/body-limit.ts), so the skill's jsonBody reads it,
  // inside recordCall's clock. (A chunked body is read whole by the cap before routing: docs/STATS.md.)
  const rowOf = (skill: string, since: number) =>
    env.DB.prepare(
      // Rows seeded by the other tests of this file are in 2033: not these.
      "SELECT status, outcome, duration_ms FROM call_log WHERE skill = ?1 AND at >= ?2 AND at < ?3 ORDER BY rowid DESC",
    )
      .bind(skill, since, NOW - DAY)
      .first<{ status: number; outcome: string; duration_ms: number }>();
  const send = async (
    app: { fetch: Hono<AppEnv>["fetch"] },
    path: string,
    body: ReadableStream,
    length: number,
  ) => {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(`https://skills.test${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(length) },
        body,
        duplex: "half",
      } as RequestInit),
      env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    return res;
  };
  afterEach(() => vi.restoreAllMocks());

  it("a connection cut mid-body is not a failure of the skill (not admitted)", async () => {
    const since = Date.now();
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (pulls++ === 0) ctl.enqueue(new TextEncoder().encode('{"text": "hel'));
        else ctl.error(new Error("Network connection lost."));
      },
    });
    const res = await send(createApp(), "/api/skills/slugify", body, 40);
    expect(res.status).toBeGreaterThanOrEqual(500);
    // Before: server_error, admitted: every cut connection (free: a failed call is never charged)
    // lowered the skill's success rate.
    expect(await rowOf("slugify", since)).toMatchObject({ outcome: "body_aborted" });
  });

  it("a body trickled for a minute adds nothing to the skill's server time", async () => {
    const since = Date.now();
    // A clock moved only by the caller's body: both of recordCall's clocks read it. The minute it
    // trickles ends at the real time, not a minute ahead: a row logged in the future fell in the
    // next minute of other files' `at >= their start` reads of slugify (the project shares one D1).
    let clock = 0;
    const wall = Date.now() - 60_000;
    vi.spyOn(performance, "now").mockImplementation(() => clock);
    vi.spyOn(Date, "now").mockImplementation(() => wall + clock);
    const parts = ['{"text"', ': "hello"}'];
    const body = new ReadableStream<Uint8Array>({
      pull(ctl) {
        const part = parts.shift();
        if (part === undefined) return ctl.close();
        clock += 30_000;
        ctl.enqueue(new TextEncoder().encode(part));
      },
    });
    const res = await send(createApp(), "/api/skills/slugify", body, parts.join("").length);
    expect(res.status).toBe(200);
    vi.restoreAllMocks();
    // Before: 60,000 ms, a paid call's worth of p95 for one caller's slow upload.
    expect(await rowOf("slugify", since)).toMatchObject({ status: 200, outcome: "ok", duration_ms: 0 });
  });

  it("a read that fails because our own code used the body first stays our server error", async () => {
    const skill = `used_${crypto.randomUUID()}`;
    const since = Date.now();
    // Code that consumed the raw request before Hono's read: that read rejects "body used", a 500
    // that is ours, not a caller's cut connection.
    const app = new Hono<AppEnv>().post(
      "/probe",
      recordCall(skill, () => 1000),
      async (c) => {
        await c.req.raw.arrayBuffer();
        return c.json(await c.req.json());
      },
    );
    const res = await send(app, "/probe", new Blob(["{}"]).stream(), 2);
    expect(res.status).toBe(500);
    // Before: body_aborted, not admitted: the skill's own bug left out of its success rate.
    expect(await rowOf(skill, since)).toMatchObject({ status: 500, outcome: "server_error" });
  });
});

describe("calls nothing paid for are not admitted failures", () => {
  it("while the facilitator cannot be read, its calls lower no success rate but are published as unavailable", async () => {
    // A facilitator that answers 404 to everything: the gate answers every request 503.
    const down = {
      ...paidEnv(),
      FACILITATOR_URL: `${new URL(env.WIKIPEDIA_API_BASE).origin}/no-facilitator`,
    };
    const app = createApp();
    const since = Date.now();
    for (const headers of [{}, { "payment-signature": "junk" }] as Record<string, string>[]) {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request("https://skills.test/api/skills/uuid-mint", {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: "{}",
        }),
        down,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(503);
    }
    const until = Date.now();
    const { results } = await env.DB.prepare(
      "SELECT status, outcome, payment_method FROM call_log WHERE skill = 'uuid_mint' AND at BETWEEN ?1 AND ?2 ORDER BY rowid",
    )
      .bind(since, until)
      .all<{ status: number; outcome: string; payment_method: string }>();
    // Before: two server_error rows, each an admitted failure anyone could send for free.
    expect(results).toEqual([
      { status: 503, outcome: "unpaid_unavailable", payment_method: "none" },
      { status: 503, outcome: "unpaid_unavailable", payment_method: "none" },
    ]);
    // The outage is ours, and a buyer with a valid signature was refused alike: it is shown, as a
    // count, on /api/stats and in the table of /docs/reliability and /admin (one component).
    // Other test files write uuid_mint rows into the same database, so /api/stats's live windows
    // hold at least these two; the exact figures come from a copy of them in a week of their own.
    await refreshPublishedStats(env);
    const stats = await app.fetch(
      new Request("https://skills.test/api/stats"),
      env,
      createExecutionContext(),
    );
    const live = ((await stats.json()) as StatsDocument).skills.find((s) => s.skill === "uuid_mint")?.windows;
    expect(live?.["24h"].unavailable).toBeGreaterThanOrEqual(2);
    expect(live?.["7d"].unavailable).toBeGreaterThanOrEqual(2);
    // Under a name of their own too: other files read uuid_mint's rows from their start on, with
    // no end (test/stats/replay-failures.test.ts), and a future-dated uuid_mint row fell in theirs.
    const at = NOW + 40 * DAY;
    const copy = `outage_${crypto.randomUUID().slice(0, 8)}`;
    await env.DB.prepare(
      `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
       SELECT ?2, ?4, status, outcome, duration_ms, payment_method, amount_micro, transport
       FROM call_log WHERE skill = 'uuid_mint' AND at BETWEEN ?1 AND ?3 AND outcome = 'unpaid_unavailable'`,
    )
      .bind(since, at, until, copy)
      .run();
    const doc = await skillStats(env.DB, at + 1000);
    expect(doc.skills.find((s) => s.skill === copy)?.windows).toMatchObject({
      "24h": { unavailable: 2, admitted: 0, success_rate: null },
      "7d": { unavailable: 2 },
    });
    const table = String(ReliabilityTable({ id: "figures", skills: doc.skills, detail: true }));
    const row = table.match(new RegExp(`<th scope="row">${copy}</th>(.*?)</tr>`))?.[1];
    expect(row).toMatch(/^<td>2<\/td><td>0<\/td><td>–<\/td><td>–<\/td><td>–<\/td><td>2<\/td>/);
  });
});

describe("free requests do not make a skill look used", () => {
  it("a skill with only unpaid 402 probes is not listed in the summary; a measured one shows its admitted calls", async () => {
    const at = NOW + 30 * DAY;
    await env.DB.prepare(
      `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
       VALUES (?1, 'token_count', 402, 'payment_required', 1, 'none', 0, 'http'),
              (?1, 'token_count', 402, 'payment_required', 1, 'none', 0, 'http'),
              (?1, 'slugify', 402, 'payment_required', 1, 'none', 0, 'http'),
              (?1, 'slugify', 200, 'ok', 4, 'x402_v2', 3000, 'http')`,
    )
      .bind(at)
      .run();
    const summary = reliabilitySummary(await skillStats(env.DB, at + 1000), "https://skills.test/api/stats");
    // Before: token_count listed with 2 calls (and no rate), though nobody ever paid for one.
    expect(summary.skills).not.toHaveProperty("token_count");
    expect(summary.skills).toMatchObject({ slugify: { calls: 2, admitted: 1, success_rate: 1 } });
  });
});
