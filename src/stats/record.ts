import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { throttledLog } from "../http/log-once";
import { isMcpRequest } from "../http/mcp-request";
import { requestConfig } from "../http/request-config";
import { wholeNumber } from "../var-text";
import { elapsedMs, startClock, watchBody } from "./body-watch";
import { DEFAULT_FLUSH_MS, MAX_FLUSH_MS } from "./flush-window";

/**
 * One measured call. The same record goes to Workers Analytics Engine (production sink, queried
 * with its SQL API) and to D1's call_log (the offline twin `npm start`, the tests and /api/stats
 * read). No buyer identity and no bodies: only what the published figures need.
 */
export interface CallRecord {
  at: number;
  skill: string;
  status: number;
  outcome: Outcome;
  durationMs: number;
  paymentMethod: PaymentMethod;
  amountMicro: number;
  transport: Transport;
}

export type Outcome =
  | "ok"
  | "validation"
  | "payment_required"
  | "key_refused"
  | "rate_limited"
  | "conflict"
  | "client_error"
  | "body_aborted"
  | "unpaid_unavailable"
  | "upstream"
  | "target_error"
  | "replay"
  | "settlement_unconfirmed"
  | "server_error";
export type PaymentMethod = "x402_v1" | "x402_v2" | "card_credit" | "free_beta" | "none";
/** `checkout`: a card pack's first call, run by the checkout itself (payments/checkout-first-call.ts). */
export type Transport = "http" | "mcp" | "checkout";

/** Outcomes of calls that passed validation and payment: the denominator of the success rate. */
export const ADMITTED: readonly Outcome[] = ["ok", "upstream", "settlement_unconfirmed", "server_error"];

/** Call-log rows older than this are deleted (published in the policy). */
export const RETENTION_DAYS = 30;

export function classify(status: number, body: string | undefined): Outcome {
  if (status >= 200 && status < 300) return "ok";
  if (status === 422 || status === 400 || status === 413) return "validation";
  if (status === 402) return "payment_required";
  if (status === 401 || status === 403) return "key_refused";
  if (status === 429) return "rate_limited";
  if (status === 409) return "conflict";
  if (status < 500) return "client_error";
  // The gate answers 502 with reason settlement_unconfirmed when the facilitator gave no answer.
  if (body?.includes("settlement_unconfirmed")) return "settlement_unconfirmed";
  if (status === 502 || status === 504) return "upstream";
  return "server_error";
}

/** An answer's outcome, a 502/504 at the page the caller named (`targetFault`) being theirs. */
export function outcomeOf(status: number, body: string | undefined, targetFault: boolean): Outcome {
  return targetFault && (status === 502 || status === 504) ? "target_error" : classify(status, body);
}

function paymentMethod(c: Context<AppEnv>): PaymentMethod {
  // A verified payment (v1 X-PAYMENT lifted into v2 says so itself), else a claim of this request:
  // first, because partner routes are paid even in free beta.
  const verified = c.get("x402Payment");
  if (verified) return verified.v1 ? "x402_v1" : "x402_v2";
  const version = c.get("paymentClaim")?.payment.x402Version;
  if (version !== undefined) return version === 1 ? "x402_v1" : "x402_v2";
  // The gate's own mark that a credit paid this call, not a response header (a stored answer
  // replayed for an Idempotency-Key carries the header of the call that paid).
  if (c.get("cardCredit")) return "card_credit";
  if (requestConfig(c).freeBeta) return "free_beta";
  return "none";
}

/**
 * A 503 to a call nothing paid for (no verified x402 payment, no credit taken, not free beta) is
 * not admitted: it was refused before its payment could be checked (an unreadable facilitator
 * answers every request 503, an unpaid probe or a junk header included; so does a key store
 * that cannot be read), and counted admitted it let anyone multiply a short outage into any
 * failure rate, for free. The success rate is "2xx among calls that passed validation and
 * payment" (callPolicy). Only 503: an unsold partner try passes no gate, and its partner's
 * 502/504 are the partner's failures.
 */
function admittedOnlyIfPaid(status: number, outcome: Outcome, method: PaymentMethod): Outcome {
  return method === "none" && status === 503 ? "unpaid_unavailable" : outcome;
}

/** What a successful call was charged: the authorized x402 amount (USDC has 6 decimals, so atomic units are micro-dollars) or one card credit at the list price. */
function chargedMicro(c: Context<AppEnv>, method: PaymentMethod, priceMicro: () => number): number {
  if (method === "x402_v1" || method === "x402_v2") {
    // The route's requirements the payment was verified against (a claim is only ever made for
    // a verified payment, so there is no other source to fall back on; the payload's own
    // `accepted` is what the payer wrote).
    const amount = Number(c.get("x402Payment")?.requirements.amount);
    return Number.isFinite(amount) && amount > 0 ? amount : priceMicro();
  }
  return method === "card_credit" ? priceMicro() : 0;
}

/**
 * Outermost middleware of a skill (or partner try) route: measures the server time around the
 * whole chain and records the outcome after the answer, off the response path (waitUntil).
 * `priceMicro` is the list price, used when the payment itself names no amount.
 */
export function recordCall(skill: string, priceMicro: () => number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // A HEAD never changes state anywhere (issue 19.3), not even the call log; it runs no call.
    if (c.req.method === "HEAD") return next();
    const started = startClock();
    const body = watchBody(c.req);
    await next();
    // Server time is ours: the time spent waiting for the caller's body is theirs (body-watch.ts).
    const durationMs = Math.max(0, elapsedMs(started) - body.waitedMs);
    const status = c.res.status;
    // Only error bodies are peeked at (for the settlement reason), never a 2xx body.
    const answer = status >= 500 ? await c.res.clone().text() : undefined;
    // A replay passed no payment gate (the idempotency middleware answers before it): nothing paid
    // for it, free beta or not.
    const method = c.get("storedCallRetry") ? "none" : paymentMethod(c);
    // A stored answer given back for a repeated payment id or Idempotency-Key is not a new call:
    // neither charged nor measured (it would count the first call's success again, at no cost).
    // Nor is a retry told that answer cannot be had just now (a 503 with no replay header): no
    // skill ran, and counting it admitted made every retry of one paid call a server error. The
    // idempotency middleware marks both (payments/idempotency.ts), not a header a stored answer
    // carries. A failure at the page the caller named is the caller's, not the skill's, and so is
    // a failure to read the body it never finished sending (its connection broke: a 500 that made
    // every free cut connection an admitted failure).
    const outcome = c.get("storedCallRetry")
      ? "replay"
      : body.failed && status >= 500
        ? "body_aborted"
        : admittedOnlyIfPaid(status, outcomeOf(status, answer, Boolean(c.get("targetFault"))), method);
    const rec: CallRecord = {
      at: Date.now(),
      skill,
      status,
      outcome,
      durationMs,
      paymentMethod: method,
      amountMicro: outcome === "ok" ? chargedMicro(c, method, priceMicro) : 0,
      // MCP dispatches tools/call through these routes and marks the Request object it sends
      // (http/mcp-request.ts): no header a client could forge.
      transport: isMcpRequest(c.req.raw) ? "mcp" : "http",
    };
    const write = queueCall(c.env, rec);
    if (write) return afterResponse(c, write);
  };
}

/**
 * The D1 call log is written in batches, not once per call. An unpaid 402 is free to send, and
 * its D1 insert was the most expensive part of the cheapest answer we give (the CPU profile of the
 * 402 path, docs/PERFORMANCE.md): one write per request made every crawler and every `curl` loop a
 * D1 write load. An isolate gathers its calls for `CALL_LOG_FLUSH_MS`, already as the rows they
 * will be (callRows: the calls of one group and minute are one row), and writes them in one
 * batch after the window, or at once when MAX_BUFFERED rows are waiting. Whoever flushes writes
 * in its own request's waitUntil: the first call of a batch sleeps and then flushes, a request
 * that fills the buffer flushes at once, so no promise crosses request contexts. The bound is on
 * rows, not calls: a flood of one kind of call (unpaid 402s) is one row however many calls, and
 * counting calls flushed it every 100 of them, a D1 batch whose share was most of what the
 * statistics cost a call (docs/PERFORMANCE.md, stop 40). An isolate evicted inside the window
 * loses those calls: statistics, never money (ledgers and claims are written on the request path).
 * Analytics Engine is written per call: it batches on its own and costs no round trip.
 */
const MAX_BUFFERED = 100;

/** A call-log row: a call, or (`bucket` set) the calls of one group in one minute, `n` of them. */
interface CallRow {
  r: CallRecord;
  n: number;
  bucket: number | null;
}

/** Calls gathered for one write, as rows. */
interface Batch {
  rows: CallRow[];
  groups: Map<string, CallRow>;
  calls: number;
  /** The earliest call's time: what aged out as of then goes with the write (insertRows). */
  oldest: number;
}

const newBatch = (): Batch => ({ rows: [], groups: new Map(), calls: 0, oldest: Number.POSITIVE_INFINITY });
const buffers = new WeakMap<D1Database, Batch>();

// CALL_LOG_FLUSH_MS read once per value, not on every call.
let flushVar: unknown;
let flushMs = DEFAULT_FLUSH_MS;
function flushWindowMs(value: unknown): number {
  if (value !== flushVar) {
    // A whole number of ms; "2s" (a unit) is the default, not NaN (which wrote each call at once).
    flushMs = wholeNumber(value, DEFAULT_FLUSH_MS, 0, MAX_FLUSH_MS);
    flushVar = value;
  }
  return flushMs;
}

/**
 * Queues one record; returns the write this request must keep alive, if it is the one to flush.
 * Analytics Engine's writeDataPoint throws once one of its limits is passed (the runtime checks
 * every write: 250 data points per invocation; other limits are assumed to throw alike). Thrown
 * from here, after the answer was made (recordCall), it turned every priced answer into a 500: a
 * paid one whose settlement or credit already stood, and the call's D1 row was lost with it. Its
 * failure goes to `sinkFailed` (a line a minute per isolate unless the caller names the call), and
 * the row is queued all the same.
 */
export function queueCall(
  env: AppEnv["Bindings"],
  r: CallRecord,
  sinkFailed: (e: unknown) => void = logSinkFailure,
): Promise<void> | undefined {
  try {
    writeDataPoint(env, r);
  } catch (e) {
    sinkFailed(e);
  }
  const waitMs = flushWindowMs(env.CALL_LOG_FLUSH_MS);
  const batched = waitMs > 0;
  let batch = buffers.get(env.DB);
  if (!batch) {
    batch = newBatch();
    buffers.set(env.DB, batch);
  }
  addCall(batch, r, batched);
  if (!batched || batch.rows.length >= MAX_BUFFERED) return flushCalls(env.DB);
  if (batch.calls === 1) return new Promise((ok) => setTimeout(ok, waitMs)).then(() => flushCalls(env.DB));
  return undefined;
}

function flushCalls(db: D1Database): Promise<void> {
  const batch = buffers.get(db);
  if (!batch?.rows.length) return Promise.resolve();
  buffers.set(db, newBatch());
  return insertRows(db, batch.rows, batch.oldest).catch((e) =>
    console.error(
      JSON.stringify({
        level: "error",
        msg: "stats write failed",
        rows: batch.rows.length,
        calls: batch.calls,
        error: String(e),
      }),
    ),
  );
}

/**
 * A flush's records as rows (migration 0028). Why: every call of a priced route is logged, unpaid
 * 402s, free-beta calls and refusals included, and one row per call let anyone fill D1's 10 GB for
 * free: at RL_IP's 600 a minute one IP kept ~26 M rows (~3 GB) in the 30 days of retention, and
 * past the cap every x402 claim and card spend is refused. So, batched (`grouped`), the calls
 * that charged nothing are counted per group and minute: one row for the calls of one minute
 * that the figures cannot tell apart (skill, status, outcome, method, transport; for an admitted
 * call also its server time, the percentiles' histogram key; a refusal's time is read by nothing
 * and kept as 0). The INSERT adds a flush's count to the row an earlier flush, or another isolate,
 * wrote for the same group and minute (a unique index), so the rows are bounded by groups × minutes
 * however many calls, callers or isolates. A group keeps its latest time (last_success_at stays
 * exact; a group at a window's edge counts on its newer side, a minute at most). A charged call
 * keeps a row of its own: it is paid for, and the dashboard's revenue sums its amount. Unbatched
 * (CALL_LOG_FLUSH_MS = 0, the unit tests; seeding), every call is a row of its own.
 */
export function callRows(records: CallRecord[], grouped: boolean): CallRow[] {
  const batch = newBatch();
  for (const r of records) addCall(batch, r, grouped);
  return batch.rows;
}

/** Adds one call to a batch: a row of its own, or one more call of its group and minute. */
function addCall(batch: Batch, r: CallRecord, grouped: boolean) {
  batch.calls++;
  if (r.at < batch.oldest) batch.oldest = r.at;
  if (!grouped || r.amountMicro > 0) {
    batch.rows.push({ r, n: 1, bucket: null });
    return;
  }
  const bucket = Math.floor(r.at / 60_000);
  const durationMs = ADMITTED.includes(r.outcome) ? r.durationMs : 0;
  const key = `${bucket}\n${r.skill}\n${r.status}\n${r.outcome}\n${r.paymentMethod}\n${r.transport}\n${durationMs}`;
  const group = batch.groups.get(key);
  if (group) {
    group.n++;
    // The group's record is its own copy (below), not a caller's.
    if (r.at > group.r.at) group.r.at = r.at;
    return;
  }
  const row = { r: { ...r, durationMs }, n: 1, bucket };
  batch.groups.set(key, row);
  batch.rows.push(row);
}

// D1 binds at most 100 parameters per statement: 10 rows of 10.
const COLUMNS = 10;
const ROWS_PER_INSERT = Math.floor(100 / COLUMNS);

/**
 * The INSERT for `n` rows, written once per size (a flush is on the path of a request). A row of a
 * group and minute that is there already gets this one's count (call_log_group, migration 0028);
 * a row without a bucket never meets the index.
 */
const insertSql = Array.from({ length: ROWS_PER_INSERT + 1 }, (_, n) => {
  const values = Array.from(
    { length: n },
    (_, j) => `(${Array.from({ length: COLUMNS }, (_, k) => `?${j * COLUMNS + k + 1}`).join(", ")})`,
  );
  return `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport, n, bucket)
           VALUES ${values.join(", ")}
           ON CONFLICT (bucket, skill, status, outcome, payment_method, transport, duration_ms) WHERE bucket IS NOT NULL
           DO UPDATE SET n = n + excluded.n, at = max(at, excluded.at)`;
});

async function insertRows(db: D1Database, rows: CallRow[], oldest: number) {
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT);
    statements.push(
      db
        .prepare(insertSql[chunk.length] as string)
        .bind(
          ...chunk.flatMap(({ r, n, bucket }) => [
            r.at,
            r.skill,
            r.status,
            r.outcome,
            r.durationMs,
            r.paymentMethod,
            r.amountMicro,
            r.transport,
            n,
            bucket,
          ]),
        ),
    );
  }
  // What aged out since the last flush goes with this batch, so the log keeps pace with any write
  // volume; it fails with the INSERT when D1 is full, which is why the Cron prunes too.
  statements.push(expiredCalls(db, oldest, EXPIRED_PER_FLUSH));
  await db.batch(statements);
}

/** Aged-out rows a flush deletes at most: ten times the most it adds, a short delete all the same. */
const EXPIRED_PER_FLUSH = MAX_BUFFERED * 10;

/**
 * The delete of up to `limit` rows past the retention as of `now` (the oldest first, by the
 * call_log_at index): D1 has no DELETE … LIMIT. Run by each flush and, in chunks, by the Cron
 * (ops/database.ts), which does not depend on an INSERT succeeding.
 */
export function expiredCalls(db: D1Database, now: number, limit: number) {
  return db
    .prepare("DELETE FROM call_log WHERE rowid IN (SELECT rowid FROM call_log WHERE at < ?1 LIMIT ?2)")
    .bind(now - RETENTION_DAYS * 86_400_000, limit);
}

const sinkFault = throttledLog(60_000);
const logSinkFailure = (e: unknown) =>
  sinkFault({ level: "error", msg: "call statistics data point not written", error: String(e) });

function writeDataPoint(env: AppEnv["Bindings"], r: CallRecord) {
  // blob/double order is the schema the SQL API queries use (docs/STATS.md).
  env.CALL_STATS?.writeDataPoint({
    blobs: [r.skill, r.outcome, r.paymentMethod, r.transport],
    doubles: [r.durationMs, r.status, r.amountMicro],
    indexes: [r.skill],
  });
}

/** Writes records to both sinks at once (seeding, tests); the Analytics Engine binding is optional (absent locally). */
export async function writeCall(env: AppEnv["Bindings"], r: CallRecord) {
  writeDataPoint(env, r);
  await insertRows(env.DB, [{ r, n: 1, bucket: null }], r.at);
}
