import { skills } from "../skills/registry";
import { ADMITTED, RETENTION_DAYS } from "./record";

/**
 * Skills whose answer depends on a third-party service: they publish an upstream error rate. Read
 * from the registry (utility skills are the offline ones), so a new network skill publishes it too.
 */
const NETWORK_SKILLS = new Set(skills.filter((s) => s.kind === "analytic").map((s) => s.id));

export const WINDOWS = { "24h": 86_400_000, "7d": 7 * 86_400_000 } as const;
export type WindowName = keyof typeof WINDOWS;

export interface WindowFigures {
  calls: number;
  /** Calls that passed validation and payment (the success rate's denominator). */
  admitted: number;
  succeeded: number;
  /** succeeded / admitted rounded down to 4 decimals (never 1 with a failure), or null when nothing was admitted. */
  success_rate: number | null;
  p50_ms: number | null;
  /** null below MIN_CALLS_FOR_P95 admitted calls (it would be their maximum). */
  p95_ms: number | null;
  /** Network skills only: upstream 502/504 among admitted calls, rounded up; null for offline skills. */
  upstream_error_rate: number | null;
  last_success_at: string | null;
  /**
   * 503s answered before any payment could be checked (outcome unpaid_unavailable): our own outage
   * (facilitator or key store unreadable, misconfigured payments) shown as a count, kept out of the
   * success rate because anyone can send them for free.
   */
  unavailable: number;
}

export interface SkillStats {
  skill: string;
  windows: Record<WindowName, WindowFigures>;
}

/** Nearest-rank percentile (no interpolation): the value a given share of calls stayed under. */
export function percentile(sorted: number[], p: number): number | null {
  return percentileOf(
    sorted.map((v) => [v, 1]),
    sorted.length,
    p,
  );
}

/**
 * A share to 4 decimals, rounded towards the figure that does not flatter the skill: a success
 * rate down (4,999 of 5,000, or 19,999 of 20,000, rounded to nearest read 0.9998 and 1, shown as
 * "100.0%" with a failure), an error rate up (one upstream error in 20,000 is not 0). Integer
 * arithmetic first, so 29 of 100 is 0.29, not 0.2899.
 */
const shareDown = (part: number, whole: number) => Math.floor((part * 10_000) / whole) / 10_000;
const shareUp = (part: number, whole: number) => Math.ceil((part * 10_000) / whole) / 10_000;

/**
 * Fewest admitted calls a p95 is published for. Nearest-rank p95 of fewer than 20 values is their
 * maximum: on a quiet skill one slow call (a caller's, at the price of one call) set it.
 */
export const MIN_CALLS_FOR_P95 = 20;

/** One group of calls: a skill, a window part, an outcome and a server time, with their count. */
interface Group {
  skill: string;
  /** 1: within the last 24 h (so also within 7 days); 0: older, within 7 days. */
  recent: number;
  outcome: string;
  duration_ms: number;
  n: number;
  last_at: number;
}

/** Nearest-rank percentile of a histogram (durations ascending, each with its count). */
function percentileOf(histogram: [number, number][], total: number, p: number): number | null {
  if (total === 0) return null;
  const rank = Math.min(total, Math.max(1, Math.ceil((p / 100) * total)));
  let seen = 0;
  for (const [ms, n] of histogram) {
    seen += n;
    if (seen >= rank) return ms;
  }
  return null;
}

function figures(skill: string, groups: Group[]): WindowFigures {
  let calls = 0;
  let admitted = 0;
  let succeeded = 0;
  let upstream = 0;
  let unavailable = 0;
  let last = 0;
  // Server time of admitted calls: refusals (422, 402) are fast and would flatter the figure.
  const times = new Map<number, number>();
  for (const g of groups) {
    calls += g.n;
    if (g.outcome === "ok") {
      succeeded += g.n;
      last = Math.max(last, g.last_at);
    }
    if (g.outcome === "upstream") upstream += g.n;
    if (g.outcome === "unpaid_unavailable") unavailable += g.n;
    if (ADMITTED.includes(g.outcome as (typeof ADMITTED)[number])) {
      admitted += g.n;
      times.set(g.duration_ms, (times.get(g.duration_ms) ?? 0) + g.n);
    }
  }
  const histogram = [...times].sort((a, b) => a[0] - b[0]);
  return {
    calls,
    admitted,
    succeeded,
    success_rate: admitted ? shareDown(succeeded, admitted) : null,
    p50_ms: percentileOf(histogram, admitted, 50),
    p95_ms: admitted >= MIN_CALLS_FOR_P95 ? percentileOf(histogram, admitted, 95) : null,
    upstream_error_rate: NETWORK_SKILLS.has(skill) ? (admitted ? shareUp(upstream, admitted) : null) : null,
    last_success_at: last ? new Date(last).toISOString() : null,
    unavailable,
  };
}

/**
 * Per-skill figures over 24 h and 7 days from D1's call_log. D1 has no percentile function, so
 * SQL groups the calls by skill, window, outcome and, for admitted calls, server time (a
 * histogram: a few thousand groups however many calls) and the percentiles are read from it here. Reading the rows
 * themselves put every call of a week in the isolate's memory: one IP at the per-IP limit
 * writes ~6 million a week. It still reads every row of the window, so only the 5-minute Cron
 * runs it (and a request only when no stored copy exists): src/stats/published.ts.
 */
export async function skillStats(db: D1Database, now = Date.now()) {
  const since = now - WINDOWS["7d"];
  const { results } = await db
    .prepare(
      // Only admitted calls' server times feed the percentiles; the others are grouped without
      // theirs, or refusals whose time a caller can stretch (a trickled body) would make one
      // group per millisecond.
      `SELECT skill, at >= ?3 AS recent, outcome,
              CASE WHEN outcome IN (${ADMITTED.map((o) => `'${o}'`).join(",")}) THEN duration_ms ELSE -1 END AS duration_ms,
              sum(n) AS n, max(at) AS last_at
       FROM call_log WHERE at >= ?1 AND at <= ?2
       GROUP BY skill, recent, outcome, 4`,
    )
    .bind(since, now, now - WINDOWS["24h"])
    .all<Group>();
  const bySkill = new Map<string, Group[]>();
  for (const g of results) {
    const list = bySkill.get(g.skill) ?? [];
    list.push(g);
    bySkill.set(g.skill, list);
  }
  const ids = [...new Set([...skills.map((s) => s.id), ...bySkill.keys()])];
  const out: SkillStats[] = ids.map((id) => {
    const groups = bySkill.get(id) ?? [];
    return {
      skill: id,
      windows: {
        "24h": figures(
          id,
          groups.filter((g) => g.recent === 1),
        ),
        "7d": figures(id, groups),
      },
    };
  });
  return {
    computed_at: new Date(now).toISOString(),
    windows: {
      "24h": { from: new Date(now - WINDOWS["24h"]).toISOString(), to: new Date(now).toISOString() },
      "7d": { from: new Date(since).toISOString(), to: new Date(now).toISOString() },
    },
    source: "d1:call_log" as const,
    retention_days: RETENTION_DAYS,
    skills: out,
  };
}

export type StatsDocument = Awaited<ReturnType<typeof skillStats>>;

/**
 * How long a 'running' claim may stay so before the dashboard lists it: its authorization's
 * validity (MAX_TIMEOUT_SECONDS, payments/x402-terms.ts), the rule of GET /api/admin/payments
 * (payments/ledger-report.ts). The route passes the payments' own figure; stats imports no
 * payments code (payments write call records through stats/record.ts).
 */
const RUNNING_GRACE_MS = 300_000;

/** Maintainer figures for /admin: revenue per day by rail and per skill, card credits, settlements. */
export async function dashboardFigures(
  db: D1Database,
  now = Date.now(),
  days = 14,
  runningGraceMs = RUNNING_GRACE_MS,
) {
  // Whole UTC days, today the last (so far): the bars group by UTC day, and a window of
  // `days` × 24 h from now began with a partial day that looked like a slump.
  const since = now - (now % 86_400_000) - (days - 1) * 86_400_000;
  const day = "strftime('%Y-%m-%d', at / 1000, 'unixepoch')";
  const [revenue, credits, sessions, unconfirmed] = await db.batch([
    // Revenue per day by rail and per skill, from the measured calls (x402 charged on 2xx only,
    // card credits spent). One read of the window (call_log_at), and only charged calls are
    // grouped: D1 counts each row a GROUP BY sorts as read again, and most calls are unpaid 402s.
    // Calls and success rates per skill are the published figures' (the Cron's, 7 days).
    db
      .prepare(
        `SELECT ${day} AS day, skill, sum(n) AS charged_calls,
                sum(CASE WHEN payment_method LIKE 'x402%' THEN amount_micro ELSE 0 END) AS x402_micro,
                sum(CASE WHEN payment_method = 'card_credit' THEN amount_micro ELSE 0 END) AS card_micro,
                sum(amount_micro) AS revenue_micro
         FROM call_log WHERE at >= ?1 AND amount_micro > 0 GROUP BY day, skill`,
      )
      .bind(since),
    db.prepare(
      "SELECT count(*) AS keys, coalesce(sum(calls_left), 0) AS calls_left, coalesce(sum(calls_total), 0) AS calls_total FROM api_keys",
    ),
    db.prepare(
      "SELECT status, count(*) AS sessions, coalesce(sum(amount_cents), 0) AS amount_cents FROM checkout_sessions GROUP BY status ORDER BY status",
    ),
    // Claims reconciliation still decides, as GET /api/admin/payments lists them: 'failed' ones
    // and 'running' ones past their authorization's validity (their request died, or its ledger
    // write failed). Held ones are read apart (payments/reconcile-holds.ts heldClaims), upstream
    // authorizations too. payment_nonces_status serves both arms.
    db
      .prepare(
        // Running ones first (a request that died: rarer, and each one a call that may have been
        // served unpaid), then failed ones, newest first; count(*) OVER says how many were cut.
        `SELECT nonce, request_id, resource, status, created_at, updated_at, no_log_runs, checked_at, valid_before,
                count(*) OVER () AS total FROM payment_nonces
         WHERE (status = 'failed' OR (status = 'running' AND updated_at < ?1)) AND hold IS NULL
         ORDER BY status = 'running' DESC, updated_at DESC LIMIT 200`,
      )
      .bind(now - runningGraceMs),
  ]);
  type R = Record<string, string | number>;
  const rows = (r: D1Result | undefined) => (r?.results ?? []) as R[];
  // Every day of the window gets its bar, a day without revenue at 0.
  const byDay = new Map(
    Array.from({ length: days }, (_, i) => {
      const d = new Date(since + i * 86_400_000).toISOString().slice(0, 10);
      return [d, { day: d, x402_micro: 0, card_micro: 0 }];
    }),
  );
  const bySkill = new Map<string, { charged_calls: number; revenue_micro: number }>();
  for (const r of rows(revenue)) {
    const d = byDay.get(String(r.day));
    if (d) {
      d.x402_micro += Number(r.x402_micro);
      d.card_micro += Number(r.card_micro);
    }
    const k = bySkill.get(String(r.skill)) ?? { charged_calls: 0, revenue_micro: 0 };
    k.charged_calls += Number(r.charged_calls);
    k.revenue_micro += Number(r.revenue_micro);
    bySkill.set(String(r.skill), k);
  }
  return {
    days,
    revenue_by_day: [...byDay.values()],
    // Sorted as SQLite's ORDER BY did (binary: code units, not the locale's order).
    per_skill: [...bySkill]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([skill, k]) => ({ skill, ...k })),
    credits: rows(credits)[0] ?? { keys: 0, calls_left: 0, calls_total: 0 },
    sessions: rows(sessions),
    unconfirmed: rows(unconfirmed),
  };
}
