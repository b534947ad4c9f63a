import { expiredResults } from "../payments/idempotent-results";
import { expiredCalls } from "../stats/record";

/**
 * The database's own upkeep, run by the Cron (src/index.ts): rows past their retention deleted in
 * short chunks, whatever else fails, and the database's size read against D1's cap.
 */

/**
 * D1's maximum database size on Workers Paid: 10 GB (500 MB on Free), per
 * https://developers.cloudflare.com/d1/platform/limits/ ("Maximum database size"). Past it D1
 * refuses every statement that adds rows (SQLITE_FULL), and each x402 claim is one: every paid call
 * would answer 503 payments_unavailable. Counted as 10^10 bytes, the smaller reading of "GB".
 */
export const D1_MAX_DATABASE_BYTES = 10_000_000_000;
/** Above this share of the cap the size is logged at level "warn" (docs/OPERATIONS.md says what to do). */
export const SIZE_WARN_SHARE = 0.8;

/**
 * Rows one delete removes, and deletes per table per run: D1 serves one query at a time, so
 * buyers' claims wait for one short delete, not for a backlog's. 10,000 rows a table every
 * 5 minutes (2.9 M a day), beside what each store and call-log flush deletes as it writes.
 */
const PRUNE_CHUNK = 1000;
const PRUNE_CHUNKS = 10;

/** Deletes rows until a chunk comes back short (`more`: the run stopped at its budget). */
async function pruneTable(chunk: (limit: number) => D1PreparedStatement) {
  let deleted = 0;
  for (let i = 0; i < PRUNE_CHUNKS; i++) {
    const { meta } = await chunk(PRUNE_CHUNK).run();
    deleted += meta.changes;
    if (meta.changes < PRUNE_CHUNK) return { deleted, more: false };
  }
  return { deleted, more: true };
}

/**
 * Expired stored answers (past the 24 h window) and call-log rows past the retention (30 days).
 * Deletes only, in statements of their own: the deletes each store and flush make sit behind a
 * write that a full D1 refuses, so without these nothing freed space once it was full. Each table
 * is tried even if the other fails; any failure then throws, naming the table.
 */
export async function pruneExpired(db: D1Database, now = Date.now()) {
  const [results, calls] = await Promise.allSettled([
    pruneTable((limit) => expiredResults(db, now, limit)),
    pruneTable((limit) => expiredCalls(db, now, limit)),
  ]);
  if (results.status === "rejected" || calls.status === "rejected") {
    const failed = [
      results.status === "rejected" ? `idempotent_results: ${results.reason}` : "",
      calls.status === "rejected" ? `call_log: ${calls.reason}` : "",
    ];
    throw new Error(failed.filter(Boolean).join("; "));
  }
  return { idempotent_results: results.value, call_log: calls.value };
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
