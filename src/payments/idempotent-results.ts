import type { Context } from "hono";
import { sha256Hex } from "../digest";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { detail } from "../http/errors";

/**
 * The stored answers of idempotent calls (idempotent_results, large bodies in KV): a key is
 * claimed by one request, released if its call was not paid, and its paid answer replayed.
 */

/** How long a paid answer can be fetched again with its key (stated in docs/receipts-and-retries.md). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * A claim still 'running' after this long belongs to a request that died (isolate evicted): a
 * retry may take it over. Longer than any call can run: handler timeouts plus the 45 s settle wait.
 */
export const ABANDONED_AFTER_MS = 5 * 60 * 1000;
/**
 * keepBody's default: UTF-8 bodies up to this size are kept in the D1 row (a card pack's first-call
 * answer); larger or binary ones in KV (D1 values stop at 2 MB).
 */
export const D1_BODY_MAX = 512 * 1024;
/**
 * A stored idempotent answer is kept in its row only up to this; a larger one goes to KV, which
 * expires it with the window. Kept in the row up to D1_BODY_MAX, every paid call with a fresh key
 * could add its answer to the database for a day: 20 json_sort calls of 254 KB grew it 520 KB
 * each, so ~$62 of calls filled D1's 10 GB within one window, and a full D1 refuses every x402
 * claim (503 payments_unavailable for every buyer). At 16 KiB a row costs ~30 times less.
 */
export const RESULT_ROW_MAX = 16 * 1024;
/** Expired rows a store deletes at most: it adds one, so a backlog drains too, a short delete at a time. */
const EXPIRED_PER_STORE = 100;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * Where a stored answer goes: its text for the D1 row when it is UTF-8 of at most `rowMax`
 * bytes, else the KV key it was put under. D1 refuses a string, BLOB or row over 2,000,000 bytes
 * ("string or blob too big"), which an answer of a 5 MB body can pass; KV takes 25 MiB.
 */
export async function keepBody(
  kv: KVNamespace,
  kvKey: string,
  answer: ArrayBuffer | string,
  options?: KVNamespacePutOptions,
  rowMax = D1_BODY_MAX,
): Promise<{ body: string; bodyKv: null } | { body: null; bodyKv: string }> {
  const bytes = typeof answer === "string" ? encoder.encode(answer) : answer;
  if (bytes.byteLength <= rowMax) {
    if (typeof answer === "string") return { body: answer, bodyKv: null };
    try {
      return { body: utf8.decode(bytes), bodyKv: null }; // valid UTF-8 round-trips to the same bytes
    } catch {}
  }
  await kv.put(kvKey, bytes, options);
  return { body: null, bodyKv: kvKey };
}

export const REPLAY_HEADER = "X-Idempotent-Replay";

export interface Fingerprint {
  method: string;
  path: string;
  body_sha256: string;
  principal: string;
}

export interface Stored extends Fingerprint {
  request_id: string;
  status: "running" | "done";
  http_status: number | null;
  headers: string | null;
  body: string | null;
  body_kv: string | null;
  updated_at: number;
}

/** Takes the key for this request: new, expired, or abandoned by a request that died. */
export async function claim(db: D1Database, key: string, fp: Fingerprint, requestId: string) {
  const now = Date.now();
  const result = await db
    .prepare(
      `INSERT INTO idempotent_results (key, method, path, body_sha256, principal, request_id, status, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?7)
       ON CONFLICT (key) DO UPDATE SET method = ?2, path = ?3, body_sha256 = ?4, principal = ?5, request_id = ?6,
         status = 'running', http_status = NULL, headers = NULL, body = NULL, body_kv = NULL, created_at = ?7, updated_at = ?7
       WHERE idempotent_results.created_at < ?8
          OR (idempotent_results.status = 'running' AND idempotent_results.updated_at < ?9)`,
    )
    .bind(
      key,
      fp.method,
      fp.path,
      fp.body_sha256,
      fp.principal,
      requestId,
      now,
      now - IDEMPOTENCY_WINDOW_MS,
      now - ABANDONED_AFTER_MS,
    )
    .run();
  return result.meta.changes === 1;
}

export async function current(db: D1Database, key: string) {
  return db
    .prepare(
      `SELECT method, path, body_sha256, principal, request_id, status, http_status, headers, body, body_kv, updated_at
       FROM idempotent_results WHERE key = ?1 AND created_at >= ?2`,
    )
    .bind(key, Date.now() - IDEMPOTENCY_WINDOW_MS)
    .first<Stored>();
}

export async function release(db: D1Database, key: string, requestId: string) {
  await db
    .prepare("DELETE FROM idempotent_results WHERE key = ?1 AND request_id = ?2 AND status = 'running'")
    .bind(key, requestId)
    .run();
}

export async function store(
  c: Context<AppEnv>,
  key: string,
  requestId: string,
  res: Response,
  bytes: ArrayBuffer,
) {
  const db = c.env.DB;
  // The request id header is the replaying request's own; everything else is kept as answered.
  const headers = [...res.headers].filter(([name]) => name !== "x-request-id" && name !== "set-cookie");
  const kvKey = `idempotent:${await sha256Hex(key)}`;
  const options = { expirationTtl: IDEMPOTENCY_WINDOW_MS / 1000 };
  // KV refusing the write (down, or its write limits) must not lose a paid answer D1 can hold:
  // unstored, the key would read "in flight" and then run, and charge, again.
  const { body, bodyKv } = await keepBody(c.env.KV, kvKey, bytes, options, RESULT_ROW_MAX).catch((e) => {
    console.error(
      JSON.stringify({
        level: "warn",
        request_id: requestId,
        error: `idempotent answer not stored in KV, kept in its row if it fits: ${e}`,
      }),
    );
    return keepBody(c.env.KV, kvKey, bytes, options);
  });
  const now = Date.now();
  await db
    .prepare(
      `UPDATE idempotent_results SET status = 'done', http_status = ?3, headers = ?4, body = ?5, body_kv = ?6, updated_at = ?7
       WHERE key = ?1 AND request_id = ?2`,
    )
    .bind(key, requestId, res.status, JSON.stringify(headers), body, bodyKv, now)
    .run();
  // Expired rows are dead weight; deleting them after the answer keeps the table at one window
  // whatever the traffic (about one row expires for each stored). The Cron deletes them too, in
  // chunks (ops/database.ts): this delete runs only after a store, which a full D1 refuses.
  // A delete D1 refuses is only logged: the next store or the Cron deletes those rows, and a
  // rejection handed to waitUntil would be an unhandled error of the request.
  const expire = expiredResults(db, now, EXPIRED_PER_STORE)
    .run()
    .then(
      () => undefined,
      (e) =>
        console.error(
          JSON.stringify({
            level: "warn",
            request_id: requestId,
            error: `expired idempotent answers delete: ${e}`,
          }),
        ),
    );
  await afterResponse(c, expire);
}

/**
 * The delete of up to `limit` rows past the window as of `now` (the oldest first, by the
 * created_at index): D1 has no DELETE … LIMIT, and one unbounded delete after a backlog held the
 * database, and every buyer's claim behind it, for as long as it ran.
 */
export function expiredResults(db: D1Database, now: number, limit: number) {
  return db
    .prepare(
      `DELETE FROM idempotent_results WHERE rowid IN
         (SELECT rowid FROM idempotent_results WHERE created_at < ?1 LIMIT ?2)`,
    )
    .bind(now - IDEMPOTENCY_WINDOW_MS, limit);
}

/** When a retry whose stored answer could not be read just now is told to come back. */
const KV_RETRY_AFTER_SECONDS = 2;
/**
 * How long after its store a KV answer that reads as missing may be one not yet seen where the
 * retry runs: KV takes up to 60 s to spread a write, and caches a miss up to 60 s more. Past it a
 * miss is a lost answer (deleted by hand, a purged namespace), and retrying cannot bring it back.
 */
const KV_VISIBLE_AFTER_MS = 120_000;

export async function replay(c: Context<AppEnv>, row: Stored) {
  // Whatever this answers (the stored answer, or why it cannot be read now), no call runs: the
  // call log counts it as a replay, never as the skill's failure (stats/record.ts).
  c.set("storedCallRetry", true);
  let body: ArrayBuffer | string | null = row.body;
  if (row.body_kv) {
    try {
      body = await c.env.KV.get(row.body_kv, "arrayBuffer");
      // The row is inside the window and KV keeps the answer a little longer (its TTL starts at
      // the store, the window at the claim), so a miss soon after the store is a write not yet
      // seen where this runs: come back for it. Later, the answer is lost (answered below).
      if (body === null && Date.now() - (row.updated_at ?? 0) < KV_VISIBLE_AFTER_MS)
        throw new Error("not found (not yet visible here)");
    } catch (e) {
      // The answer is still stored (KV is only unreachable): the retry is told to come back for it,
      // never given a 500 that reads as a lost paid answer, and nothing is charged again.
      console.error(
        JSON.stringify({
          level: "error",
          request_id: c.get("requestId"),
          error: `idempotent answer read (${row.body_kv}): ${e}`,
        }),
      );
      return detail(
        c,
        503,
        "The stored answer for this idempotency key could not be read just now. Retry shortly with the same key to get it; nothing more is charged.",
        { reason: "idempotent_result_unavailable", request_id: row.request_id },
        { "Retry-After": String(KV_RETRY_AFTER_SECONDS) },
      );
    }
  }
  if (body === null) {
    if (row.body_kv)
      console.error(
        JSON.stringify({
          level: "error",
          request_id: c.get("requestId"),
          error: `idempotent answer lost: ${row.body_kv} missing from KV inside its window (request ${row.request_id})`,
        }),
      );
    return detail(c, 409, "The stored answer for this idempotency key has expired.", {
      reason: "idempotent_result_expired",
      request_id: row.request_id,
    });
  }
  const headers = new Headers(JSON.parse(row.headers ?? "[]") as [string, string][]);
  headers.set(REPLAY_HEADER, "true");
  headers.set("X-Original-Request-Id", row.request_id);
  return new Response(body, { status: row.http_status ?? 200, headers });
}
