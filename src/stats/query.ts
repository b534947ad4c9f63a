import { skills } from "../skills/registry";
import { ADMITTED, RETENTION_DAYS } from "./record";

/** Skills whose answer depends on a third-party service: they publish an upstream error rate. */
export const NETWORK_SKILLS = new Set(["osint_graph", "research", "seo", "ai_detector"]);

export const WINDOWS = { "24h": 86_400_000, "7d": 7 * 86_400_000 } as const;
export type WindowName = keyof typeof WINDOWS;

export interface WindowFigures {
  calls: number;
  /** Calls that passed validation and payment (the success rate's denominator). */
  admitted: number;
  succeeded: number;
  /** succeeded / admitted, or null when nothing was admitted. */
  success_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  /** Network skills only: upstream 502/504 among admitted calls; null for offline skills. */
  upstream_error_rate: number | null;
  last_success_at: string | null;
}

export interface SkillStats {
  skill: string;
  windows: Record<WindowName, WindowFigures>;
}

/** Nearest-rank percentile (no interpolation): the value a given share of calls stayed under. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? null;
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

interface Row {
  skill: string;
  at: number;
  outcome: string;
  duration_ms: number;
}

function figures(skill: string, rows: Row[]): WindowFigures {
  const admitted = rows.filter((r) => ADMITTED.includes(r.outcome as (typeof ADMITTED)[number]));
  const ok = rows.filter((r) => r.outcome === "ok");
  const upstream = rows.filter((r) => r.outcome === "upstream").length;
  // Server time of admitted calls: refusals (422, 402) are fast and would flatter the figure.
  const times = admitted.map((r) => r.duration_ms).sort((a, b) => a - b);
  const last = ok.reduce((m, r) => Math.max(m, r.at), 0);
  return {
    calls: rows.length,
    admitted: admitted.length,
    succeeded: ok.length,
    success_rate: admitted.length ? round4(ok.length / admitted.length) : null,
    p50_ms: percentile(times, 50),
    p95_ms: percentile(times, 95),
    upstream_error_rate: NETWORK_SKILLS.has(skill)
      ? admitted.length
        ? round4(upstream / admitted.length)
        : null
      : null,
    last_success_at: last ? new Date(last).toISOString() : null,
  };
}

/**
 * Per-skill figures over 24 h and 7 days from D1's call_log. Percentiles need the durations, so
 * rows are read (at most 7 days, bounded by retention) and aggregated here rather than in SQL,
 * which has no percentile function in D1.
 */
export async function skillStats(db: D1Database, now = Date.now()) {
  const since = now - WINDOWS["7d"];
  const { results } = await db
    .prepare("SELECT skill, at, outcome, duration_ms FROM call_log WHERE at >= ?1 AND at <= ?2")
    .bind(since, now)
    .all<Row>();
  const bySkill = new Map<string, Row[]>();
  for (const r of results) {
    const list = bySkill.get(r.skill) ?? [];
    list.push(r);
    bySkill.set(r.skill, list);
  }
  const ids = [...new Set([...skills.map((s) => s.id), ...bySkill.keys()])];
  const out: SkillStats[] = ids.map((id) => {
    const rows = bySkill.get(id) ?? [];
    return {
      skill: id,
      windows: {
        "24h": figures(
          id,
          rows.filter((r) => r.at >= now - WINDOWS["24h"]),
        ),
        "7d": figures(id, rows),
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

/** Maintainer figures for /admin: revenue per day by rail and per skill, card credits, settlements. */
export async function dashboardFigures(db: D1Database, now = Date.now(), days = 14) {
  const since = now - days * 86_400_000;
  const day = "strftime('%Y-%m-%d', at / 1000, 'unixepoch')";
  const [revenue, perSkill, credits, sessions, unconfirmed] = await db.batch([
    // Revenue per day by rail, from the measured calls (x402 charged on 2xx only, card credits spent).
    db
      .prepare(
        `SELECT ${day} AS day,
                sum(CASE WHEN payment_method LIKE 'x402%' THEN amount_micro ELSE 0 END) AS x402_micro,
                sum(CASE WHEN payment_method = 'card_credit' THEN amount_micro ELSE 0 END) AS card_micro
         FROM call_log WHERE at >= ?1 GROUP BY day ORDER BY day`,
      )
      .bind(since),
    db
      .prepare(
        `SELECT skill, count(*) AS calls, sum(amount_micro) AS revenue_micro,
                sum(CASE WHEN outcome = 'ok' THEN 1 ELSE 0 END) AS succeeded,
                sum(CASE WHEN outcome IN (${ADMITTED.map((o) => `'${o}'`).join(",")}) THEN 1 ELSE 0 END) AS admitted
         FROM call_log WHERE at >= ?1 GROUP BY skill ORDER BY skill`,
      )
      .bind(since),
    db.prepare(
      "SELECT count(*) AS keys, coalesce(sum(calls_left), 0) AS calls_left, coalesce(sum(calls_total), 0) AS calls_total FROM api_keys",
    ),
    db.prepare(
      "SELECT status, count(*) AS sessions, coalesce(sum(amount_cents), 0) AS amount_cents FROM checkout_sessions GROUP BY status ORDER BY status",
    ),
    db.prepare(
      "SELECT nonce, request_id, resource, status, updated_at FROM payment_nonces WHERE status = 'failed' ORDER BY updated_at DESC LIMIT 200",
    ),
  ]);
  type R = Record<string, string | number>;
  const rows = (r: D1Result | undefined) => (r?.results ?? []) as R[];
  return {
    days,
    revenue_by_day: rows(revenue).map((r) => ({
      day: String(r.day),
      x402_micro: Number(r.x402_micro),
      card_micro: Number(r.card_micro),
    })),
    per_skill: rows(perSkill).map((r) => ({
      skill: String(r.skill),
      calls: Number(r.calls),
      revenue_micro: Number(r.revenue_micro),
      success_rate: Number(r.admitted) ? round4(Number(r.succeeded) / Number(r.admitted)) : null,
    })),
    credits: rows(credits)[0] ?? { keys: 0, calls_left: 0, calls_total: 0 },
    sessions: rows(sessions),
    unconfirmed: rows(unconfirmed),
  };
}
