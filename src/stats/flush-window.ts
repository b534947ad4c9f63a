/**
 * The call log's flush window (CALL_LOG_FLUSH_MS), apart from record.ts so that the deploy check
 * (scripts/deploy-check.mjs, in Node) reads the same bound without loading the Worker's modules.
 */
export const DEFAULT_FLUSH_MS = 2_000;

/**
 * The longest window CALL_LOG_FLUSH_MS gives. The flush is held by the first call's waitUntil,
 * which Cloudflare cancels 30 s after that request's answer: a longer window's timer never fired,
 * and its batch, which no later call restarts, waited for 100 rows (on a quiet deployment until
 * the isolate was evicted, its calls lost). 20 s leaves the write itself 10 s.
 */
export const MAX_FLUSH_MS = 20_000;
