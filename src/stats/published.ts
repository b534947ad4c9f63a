import type { PublicConfig } from "../config";
import { type StatsDocument, skillStats } from "./query";
import { RETENTION_DAYS } from "./record";

/** Published figures are recomputed at most once a minute per location (Cache API). */
export const STATS_MAX_AGE_SECONDS = 60;

/** waitUntil of a Hono context; without an execution context (app.request) the promise runs on. */
export const waitUntilOf =
  (c: { executionCtx: { waitUntil(p: Promise<unknown>): void } }) => (p: Promise<unknown>) => {
    try {
      c.executionCtx.waitUntil(p);
    } catch {
      // No execution context: the promise still completes on its own.
    }
  };

/**
 * The /api/stats document, from the Cache API when a copy younger than 60 s exists. Every place
 * that publishes figures (the endpoint, /.well-known/x402, llms.txt, docs pages) reads this one
 * document, so they always agree and D1 is read at most once a minute per location.
 */
export async function publishedStats(
  db: D1Database,
  origin: string,
  waitUntil: (p: Promise<unknown>) => void,
): Promise<{ doc: StatsDocument; hit: boolean }> {
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  const key = new Request(new URL("/api/stats", origin).toString());
  const hit = await cache?.match(key);
  if (hit) return { doc: await hit.json<StatsDocument>(), hit: true };
  const doc = await skillStats(db);
  if (cache) {
    const body = JSON.stringify(doc);
    waitUntil(
      cache.put(
        key,
        new Response(body, {
          headers: {
            "content-type": "application/json",
            "cache-control": `public, max-age=${STATS_MAX_AGE_SECONDS}`,
          },
        }),
      ),
    );
  }
  return { doc, hit: false };
}

/**
 * For documents that only quote the figures (docs pages, llms.txt, /.well-known/x402): a D1 or
 * cache failure leaves the figures out (logged) instead of failing the document.
 */
export async function statsIfAvailable(
  db: D1Database,
  origin: string,
  waitUntil: (p: Promise<unknown>) => void,
): Promise<StatsDocument | undefined> {
  try {
    return (await publishedStats(db, origin, waitUntil)).doc;
  } catch (e) {
    console.error(JSON.stringify({ level: "error", msg: "stats unavailable", error: String(e) }));
    return undefined;
  }
}

/** A one-line-per-skill summary (7 days) for documents that only need the headline figures. */
export function reliabilitySummary(doc: StatsDocument, statsUrl: string) {
  return {
    source: statsUrl,
    computed_at: doc.computed_at,
    window: "7d",
    skills: Object.fromEntries(
      doc.skills
        .filter((s) => s.windows["7d"].calls > 0)
        .map((s) => {
          const w = s.windows["7d"];
          return [
            s.skill,
            {
              calls: w.calls,
              success_rate: w.success_rate,
              p95_ms: w.p95_ms,
              ...(w.upstream_error_rate === null ? {} : { upstream_error_rate: w.upstream_error_rate }),
            },
          ];
        }),
    ),
  };
}

/** One sentence for a page or llms.txt; "not measured yet" rather than a made-up 100%. */
export function reliabilityLine(doc: StatsDocument, skillId: string): string {
  const w = doc.skills.find((s) => s.skill === skillId)?.windows["7d"];
  if (!w || w.admitted === 0) return "not measured yet (no admitted calls in 7 days)";
  const rate = w.success_rate === null ? "–" : `${(w.success_rate * 100).toFixed(1)}%`;
  const upstream =
    w.upstream_error_rate === null ? "" : `, upstream errors ${(w.upstream_error_rate * 100).toFixed(1)}%`;
  return `${rate} success over ${w.admitted} admitted calls in 7 days, p50 ${w.p50_ms} ms, p95 ${w.p95_ms} ms${upstream}`;
}

/** A few words for a catalog card: "99.1% ok · p95 120 ms (7 d)". */
export function reliabilityShort(doc: StatsDocument, skillId: string): string {
  const w = doc.skills.find((s) => s.skill === skillId)?.windows["7d"];
  if (!w || w.success_rate === null) return "reliability: not measured yet";
  return `${(w.success_rate * 100).toFixed(1)}% ok · p95 ${w.p95_ms} ms (7 d)`;
}

/** The llms.txt section: one line per measured skill, and where the live figures are. */
export function reliabilityMarkdown(doc: StatsDocument, baseUrl: string): string {
  const measured = doc.skills.filter((s) => s.windows["7d"].admitted > 0);
  return [
    "## Measured reliability",
    "",
    `Figures measured by this service on every call (7 days, computed ${doc.computed_at}); live per-skill figures for 24 h and 7 days at ${baseUrl}/api/stats. Only 2xx answers are charged; policy at ${baseUrl}/docs/reliability.`,
    "",
    ...(measured.length
      ? measured.map((s) => `- ${s.skill}: ${reliabilityLine(doc, s.skill)}`)
      : ["- No calls measured yet."]),
    "",
  ].join("\n");
}

/** What is charged and refunded, retention and contact: published beside the figures. */
export function callPolicy(cfg: PublicConfig) {
  return {
    charged:
      "Only calls answered 2xx are charged. Two refunded exceptions: a paid partner try settled before its partner failed or timed out (502 or 504 with charged: true, refunded less what the partner can still collect; that share too once its authorization expires unused), and a payment whose settlement went unconfirmed (502 settlement_unconfirmed, result withheld) that lands on chain later (refunded less the share owed to a partner that served the call).",
    charged_statuses: "2xx",
    refunds: {
      card_credit:
        "A call that does not answer 2xx spends no credit: the credit is restored at once, unless a refund or lost dispute of the card payment revoked it meanwhile.",
      x402: "x402 payments are settled only after a 2xx answer; a failed call is never settled, so nothing moves. The two exceptions above are refunded automatically to the paying address, from the operating wallet.",
    },
    measurement: {
      success_rate: "2xx among calls that passed validation and payment",
      server_time: "request in to response out, admitted calls only",
      excluded:
        "422 validation, 402 payment, 401/403 key, 409 and 429 refusals count as calls, not as failures; so do replays of a stored idempotent answer and failures at a page the caller named (target_error)",
    },
    retention: {
      call_log_days: RETENTION_DAYS,
      // Every record also goes to Workers Analytics Engine, which Cloudflare keeps for 3 months.
      analytics_engine_days: 90,
      stored: `skill, status class, server time, payment method, amount, transport; no bodies, no buyer identity. Kept ${RETENTION_DAYS} days in the call log and 3 months in Cloudflare Workers Analytics Engine (the same fields).`,
    },
    support_contact: cfg.contactEmail,
    docs: `${cfg.baseUrl}/docs/reliability`,
  };
}
