import type { PublicConfig } from "../config";
import type { Bindings } from "../env";
import { afterAnswerOf } from "../http/after-response";
import { within } from "../http/shared-load";
import { errorPercent, successPercent } from "./percent";
import { MIN_CALLS_FOR_P95, type StatsDocument, skillStats } from "./query";
import { RETENTION_DAYS } from "./record";

/*
 * The published figures are one document, computed from D1 by the 5-minute Cron (src/index.ts)
 * and stored in KV; requests only read that copy. Computing it scans every call_log row of 7 days
 * (a million rows: 0.7 s of D1, which runs one query at a time per database and so queues the
 * payment path's claims and ledger writes behind it), and every page that quotes the figures is
 * free to hit. The Cache API used before does nothing on *.workers.dev and is per location, so a
 * default deployment recomputed on every hit. Now a request computes only when there is no copy
 * at all (a fresh deployment before the first Cron run), once per isolate however many ask, and
 * after a computation that failed, not again for a minute (the figures are unavailable meanwhile).
 */

/** HTTP max-age of /api/stats, and how long an isolate serves its copy before it reads KV again. */
export const STATS_MAX_AGE_SECONDS = 60;
/**
 * Lifetime of the KV copy: six Cron runs, so a few failed runs leave the last figures published
 * (their computed_at says how old) instead of sending every request to D1.
 */
export const STATS_COPY_TTL_SECONDS = 1800;
// Bump when the document's shape changes, so a copy left by the previous version is not served.
export const STATS_KV_KEY = "stats:published:v2";

type StatsEnv = Pick<Bindings, "DB" | "KV">;
type Published = { doc: StatsDocument; hit: boolean };
/** What the figures need of a request (a Hono context): its bindings, waitUntil and method. */
export interface StatsRequest {
  env: StatsEnv;
  executionCtx: { waitUntil(p: Promise<unknown>): void };
  req: { method: string };
}

/** This isolate's copy, and the one load (KV read, or computation) concurrent requests share. */
let memo: { doc: StatsDocument; until: number } | undefined;
let loading: { promise: Promise<Published>; startedAt: number } | undefined;
/**
 * The failure of this isolate's last computation, remembered as long as a copy is
 * (STATS_MAX_AGE_SECONDS): until then requests that find no copy in KV are told the figures are
 * unavailable instead of starting another. Forgotten on failure, every free page view started
 * another full scan of 7 days of call_log, each up to D1's 30 s limit, queueing buyers' claims
 * behind it while D1 was failing. KV is still read first: a copy another isolate's Cron stored
 * meanwhile is served at once (checked after the failure, it hid those figures for the minute).
 */
let failed: StatsFailureRemembered | undefined;

/** A computation that failed, not started again until `until` (ms): a request's answer says when. */
export class StatsFailureRemembered extends Error {
  constructor(
    cause: unknown,
    readonly until: number,
  ) {
    super(`the published figures failed to compute, not retried for a minute: ${String(cause)}`);
  }

  /** Seconds until a computation may start again: when to ask again, never sooner. */
  retryAfterSeconds(now = Date.now()) {
    return Math.max(1, Math.ceil((this.until - now) / 1000));
  }
}

/**
 * Tests: forget this isolate's copy, its last failure and any computation still running (the KV
 * copy stays), so a test that failed with a hung computation does not hand it to the next.
 */
export function forgetPublishedStats() {
  memo = undefined;
  failed = undefined;
  loading = undefined;
}

const remember = (doc: StatsDocument) => {
  memo = { doc, until: Date.now() + STATS_MAX_AGE_SECONDS * 1000 };
  failed = undefined;
};

const storeCopy = (env: StatsEnv, doc: StatsDocument) =>
  env.KV.put(STATS_KV_KEY, JSON.stringify(doc), { expirationTtl: STATS_COPY_TTL_SECONDS });

/** The Cron's half: computes the document and stores it in KV (and in this isolate). Throws on failure. */
export async function refreshPublishedStats(env: StatsEnv): Promise<StatsDocument> {
  const doc = await skillStats(env.DB);
  await storeCopy(env, doc);
  remember(doc);
  return doc;
}

async function load(c: StatsRequest): Promise<Published> {
  const { env } = c;
  try {
    const copy = await env.KV.get<StatsDocument>(STATS_KV_KEY, "json");
    if (copy) {
      remember(copy);
      return { doc: copy, hit: true };
    }
  } catch (e) {
    // KV unreadable: computed below, at most once a minute per isolate (the memo, or on failure
    // the failure's: publishedStats).
    console.error(JSON.stringify({ level: "warn", msg: "stats copy unreadable", error: String(e) }));
  }
  // No copy: D1 is asked unless its last computation here failed within the minute.
  if (failed && Date.now() < failed.until) throw failed;
  const doc = await skillStats(env.DB);
  remember(doc);
  // A HEAD changes nothing anywhere (test/head-safe.test.ts): served, not stored; a later GET stores.
  if (c.req.method !== "HEAD") {
    waitUntilOf(c)(
      storeCopy(env, doc).catch((e) =>
        console.error(JSON.stringify({ level: "warn", msg: "stats copy not stored", error: String(e) })),
      ),
    );
  }
  return { doc, hit: false };
}

/** waitUntil of a Hono context; without an execution context (app.request) the promise runs on. */
const waitUntilOf = (c: StatsRequest) => (p: Promise<unknown>) => {
  try {
    afterAnswerOf(c)?.(p);
  } catch {
    // A waitUntil that refuses it: the promise still completes on its own.
  }
};

/**
 * The /api/stats document. Every place that publishes figures (the endpoint, /.well-known/x402,
 * llms.txt, docs pages) reads this one document, so they always agree. `hit`: served from a stored
 * copy (this isolate's, at most a minute old, or KV's, the Cron's); a miss computed it because
 * there was no copy at all, once per isolate for every request that asked meanwhile. A computation
 * that failed is not started again for STATS_MAX_AGE_SECONDS: requests meanwhile that find no copy
 * in KV are refused with a StatsFailureRemembered (statsIfAvailable leaves the figures out,
 * /api/stats answers 503 with the time left as Retry-After).
 */
export async function publishedStats(c: StatsRequest): Promise<Published> {
  const now = Date.now();
  if (memo && now < memo.until) return { doc: memo.doc, hit: true };
  // A load cut off with its waitUntil (30 s past its request's answer) never settles: one still
  // pending after LOAD_STALE_MS is left behind and another started.
  if (!loading || now - loading.startedAt > LOAD_STALE_MS) {
    const started = { promise: load(c), startedAt: now };
    started.promise = started.promise
      .catch((e: unknown) => {
        // Only the current load's failure stands for the figures (one left behind says nothing),
        // and only a computation's: a refusal for the one remembered does not prolong it.
        if (loading === started && !(e instanceof StatsFailureRemembered)) {
          failed = new StatsFailureRemembered(e, Date.now() + STATS_MAX_AGE_SECONDS * 1000);
          // Its own callers too are told when the minute is out (Retry-After 60, not 30).
          throw failed;
        }
        throw e;
      })
      .finally(() => {
        if (loading === started) loading = undefined;
      });
    loading = started;
    // Held by the request that started it: a client that goes away does not strand the others.
    waitUntilOf(c)(started.promise.catch(() => {}));
  }
  // Each request waits a bounded time; past it the figures are unavailable (left out, or a 500).
  return within(loading.promise, LOAD_WAIT_MS, "the published figures");
}

const LOAD_STALE_MS = 35_000;
const LOAD_WAIT_MS = 10_000;

/**
 * For documents that only quote the figures (docs pages, llms.txt, /.well-known/x402): when the
 * figures cannot be had (no copy, and D1 failed) they are left out (logged) instead of failing the
 * document.
 */
export async function statsIfAvailable(c: StatsRequest): Promise<StatsDocument | undefined> {
  try {
    return (await publishedStats(c)).doc;
  } catch (e) {
    logUnavailable(e);
    return undefined;
  }
}

const reported = new WeakSet<StatsFailureRemembered>();
/**
 * Logs why the figures cannot be had: a remembered failure once (every request of its minute is
 * refused with the same error, and a line each would let free page views write the log), any
 * other error each time.
 */
export function logUnavailable(e: unknown) {
  if (e instanceof StatsFailureRemembered) {
    if (reported.has(e)) return;
    reported.add(e);
  }
  console.error(JSON.stringify({ level: "error", msg: "stats unavailable", error: String(e) }));
}

/**
 * A one-line-per-skill summary (7 days) for documents that only need the headline figures. Skills
 * with admitted calls only, each with `admitted` beside `calls`: `calls` counts every request,
 * unpaid 402 probes included, which anyone sends for free, so alone it let a partner's resource
 * (or a vandal's target) be listed as much used, with no measured call behind it.
 */
export function reliabilitySummary(doc: StatsDocument, statsUrl: string) {
  return {
    source: statsUrl,
    computed_at: doc.computed_at,
    window: "7d",
    skills: Object.fromEntries(
      doc.skills
        .filter((s) => s.windows["7d"].admitted > 0)
        .map((s) => {
          const w = s.windows["7d"];
          return [
            s.skill,
            {
              calls: w.calls,
              admitted: w.admitted,
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
  const upstream =
    w.upstream_error_rate === null ? "" : `, upstream errors ${errorPercent(w.upstream_error_rate)}`;
  return `${successPercent(w.success_rate)} success over ${w.admitted} admitted calls in 7 days, p50 ${w.p50_ms} ms, ${p95Text(w.p95_ms)}${upstream}`;
}

/** A few words for a catalog card: "99.1% ok · p95 120 ms (7 d)". */
export function reliabilityShort(doc: StatsDocument, skillId: string): string {
  const w = doc.skills.find((s) => s.skill === skillId)?.windows["7d"];
  if (!w || w.success_rate === null) return "reliability: not measured yet";
  // A card has room for a p95 only: none below 20 calls, rather than a sentence why.
  return `${successPercent(w.success_rate)} ok${w.p95_ms === null ? "" : ` · p95 ${w.p95_ms} ms`} (7 d)`;
}

/** A p95, or why there is none: a skill with calls but too few for one. */
const p95Text = (p95: number | null) =>
  p95 === null ? `p95 not published below ${MIN_CALLS_FOR_P95} calls` : `p95 ${p95} ms`;

/** The llms.txt section: one line per measured skill, and where the live figures are. */
export function reliabilityMarkdown(doc: StatsDocument, baseUrl: string): string {
  const measured = doc.skills.filter((s) => s.windows["7d"].admitted > 0);
  return [
    "## Measured reliability",
    "",
    // No URL is followed by punctuation: plain-text readers took the period with it (a 404).
    `Figures measured by this service on every call (7 days, computed ${doc.computed_at}). Only 2xx answers are charged.`,
    "",
    `- Live per-skill figures for 24 h and 7 days: ${baseUrl}/api/stats`,
    `- What is charged and refunded: ${baseUrl}/docs/reliability`,
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
      server_time:
        "request in to response out, less the time spent waiting for the caller's body, admitted calls only; p95 published from 20 admitted calls",
      excluded:
        "422 validation, 402 payment, 401/403 key, 409 and 429 refusals count as calls, not as failures; so do replays of a stored idempotent answer, failures at a page the caller named (target_error), connections cut before their body was in, and 503s to calls no payment had passed yet",
      rounding:
        "success rates are rounded down and error rates up (4 decimals), so a failure never reads as 100%",
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
