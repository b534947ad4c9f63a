import { recountPayloadTotal } from "../payments/checkout-payload-total";
import {
  expiredUnpaidSessions,
  staleUnpaidPayloads,
  unmeasuredPayloads,
} from "../payments/checkout-sessions";
import { expiredSpends } from "../payments/credits";
import { expiredResults } from "../payments/idempotent-results";
import { expiredEvents } from "../payments/webhook-events";
import { seededCalls } from "../skills/lib/osint-calls";
import { expiredCalls } from "../stats/record";

/**
 * The database's own upkeep, run by the Cron (src/index.ts): rows past their retention deleted (and
 * unpaid checkouts' payloads cleared) in short chunks, whatever else fails, and the database's size
 * read against D1's cap.
 */

/**
 * D1's maximum database size on Workers Paid: 10 GB (500 MB on Free), per
 * https://developers.cloudflare.com/d1/platform/limits/ ("Maximum database size"). Past it D1
 * refuses every statement that adds rows (SQLITE_FULL), and each x402 claim is one: every paid call
 * would answer 503 payments_unavailable. Counted as 10^10 bytes, the smaller reading of "GB".
 */
export const D1_MAX_DATABASE_BYTES = 10_000_000_000;
/** Above this share of the cap the size is logged at level "warn" (docs/OPERATIONS.md says what to do). */
const SIZE_WARN_SHARE = 0.8;

/**
 * Rows one delete removes, and deletes per table per run: D1 serves one query at a time, so
 * buyers' claims wait for one short delete, not for a backlog's. 10,000 rows a table every
 * 5 minutes (2.9 M a day), beside what each store and call-log flush deletes as it writes.
 */
const PRUNE_CHUNK = 1000;
const PRUNE_CHUNKS = 10;

type Pruned = { deleted: number; more: boolean };
/**
 * Runs a chunk until one comes back short (`more`: the run stopped at its budget). `deleted`
 * counts the rows it changed: deleted, or for checkout payloads, cleared. A chunk given as a batch
 * (checkout payloads: the unpaid total moves with them) counts its last statement's.
 */
async function pruneTable(
  db: D1Database,
  chunk: (limit: number) => D1PreparedStatement | D1PreparedStatement[],
  size = PRUNE_CHUNK,
): Promise<Pruned> {
  let deleted = 0;
  for (let i = 0; i < PRUNE_CHUNKS; i++) {
    const results = await db.batch([chunk(size)].flat());
    const { meta } = results[results.length - 1] as D1Result;
    deleted += meta.changes;
    if (meta.changes < size) return { deleted, more: false };
  }
  return { deleted, more: true };
}

/**
 * Rows one measuring or clearing statement touches at most (unmeasuredPayloads,
 * staleUnpaidPayloads): each reads or frees payloads of up to 1 MiB, so 100 MiB a statement,
 * 1,000 rows a run.
 */
const MEASURE_CHUNK = 100;

/**
 * Expired stored answers (past the 24 h window), call-log rows past the retention (30 days), the
 * first-call payloads of checkouts no payment can still run (payments/checkout-sessions.ts
 * staleUnpaidPayloads: the rows stay, they are the sessions' record), and the rows of checkouts
 * Stripe ended unpaid, 30 days after their creation (expiredUnpaidSessions: paid ones are the
 * money ledger and stay), and the ids of Stripe events handled 35 days ago (expiredEvents: well
 * past Stripe's redelivery), and card spends' rows past their keeping (expiredSpends: an hour once
 * given back, 35 days if not); beside them, payloads stored without their size (before migration 0015)
 * are measured, so the next run clears them too, osint_graph seeds an earlier version logged
 * are blanked (skills/lib/osint-calls.ts), and the unpaid payloads' running total is recounted
 * (payments/checkout-payload-total.ts).
 * Deletes and clearings only, in statements of their own: the deletes each store and flush make
 * sit behind a write that a full D1 refuses, so without these nothing freed space once it was
 * full. Each part is tried even if another fails; any failure then throws, naming it.
 */
export async function pruneExpired(db: D1Database, now = Date.now()) {
  const parts = {
    idempotent_results: () => pruneTable(db, (limit) => expiredResults(db, now, limit)),
    call_log: () => pruneTable(db, (limit) => expiredCalls(db, now, limit)),
    // Clearing frees each payload's pages as measuring reads them: the same small chunks.
    checkout_payloads: () => pruneTable(db, (limit) => staleUnpaidPayloads(db, now, limit), MEASURE_CHUNK),
    checkout_payloads_measured: () => pruneTable(db, (limit) => unmeasuredPayloads(db, limit), MEASURE_CHUNK),
    // The unpaid payloads' total set to their real sum: heals what the previous version wrote
    // beside this one (it does not move the total). One scan of an index a run.
    checkout_payload_total: () => recountPayloadTotal(db),
    // Seeds an earlier Worker version logged after migration 0016 (a rollout, a rollback).
    osint_seeds: () => pruneTable(db, (limit) => seededCalls(db, limit)),
    // Rows without a payload (a few hundred bytes): the deletes' usual chunks.
    checkout_sessions: () => pruneTable(db, (limit) => expiredUnpaidSessions(db, now, limit)),
    // Handled Stripe event ids, past Stripe's redelivery (payments/webhook-events.ts).
    webhook_events: () => pruneTable(db, (limit) => expiredEvents(db, now, limit)),
    // Card spends' rows (payments/credits.ts): given back, after an hour; not, after 35 days. Each
    // spend deletes a few, in its own batch, which a full D1 refuses: card calls stop there too.
    card_spends: async () => {
      const back = await pruneTable(db, (limit) => expiredSpends(db, now, limit, true));
      const kept = await pruneTable(db, (limit) => expiredSpends(db, now, limit, false));
      return { deleted: back.deleted + kept.deleted, more: back.more || kept.more };
    },
  };
  const names = Object.keys(parts) as (keyof typeof parts)[];
  const settled = await Promise.allSettled(names.map((name) => parts[name]()));
  const failed = settled.flatMap((r, i) => (r.status === "rejected" ? [`${names[i]}: ${r.reason}`] : []));
  if (failed.length) throw new Error(failed.join("; "));
  return Object.fromEntries(
    settled.map((r, i) => [names[i], (r as PromiseFulfilledResult<unknown>).value]),
  ) as { [K in keyof typeof parts]: Awaited<ReturnType<(typeof parts)[K]>> };
}

/** The database's size in bytes, as D1 reports it with every result (meta.size_after). */
export async function databaseSize(db: D1Database): Promise<number> {
  const { meta } = await db.prepare("SELECT 1").run();
  return meta.size_after;
}

/** A size against the cap, with the log level it calls for. */
export function sizeReport(bytes: number) {
  const share = bytes / D1_MAX_DATABASE_BYTES;
  return {
    level: share > SIZE_WARN_SHARE ? ("warn" as const) : ("info" as const),
    size_bytes: bytes,
    cap_bytes: D1_MAX_DATABASE_BYTES,
    percent_of_cap: Math.round(share * 10_000) / 100,
  };
}
