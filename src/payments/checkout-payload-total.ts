/**
 * What unpaid checkouts' first-call payloads hold, kept as one running total (migration 0025's
 * checkout_payload_total) so that a checkout reads one row, not every unpaid session: summed per
 * checkout, 200,000 unpaid rows (free to create) made each checkout read 400,002 rows (the sum ran twice), and D1 bills
 * rows read. The total moves in the same D1 batch (a transaction, which D1 runs one at a time) as
 * every write that sets or clears an unpaid payload (checkout-sessions.ts), by what that write
 * really changes: a statement placed just before it sums the same rows under the same condition,
 * so a row two writers clear is subtracted once, by the first. No trigger: its writes would count
 * in D1's meta.changes, which the previous version reads to tell its own writes apart while a
 * deploy migrates (or after a rollback). That version does not move the total; the Cron recounts
 * it from the real sum every run (recountPayloadTotal), so its drift lasts until the next run.
 */

/**
 * The rows the total counts: measured payloads of sessions never granted. As a whole they are read
 * (through the checkout_sessions_unpaid_payload index alone: its condition is this; migration
 * 0015) only by the migration and the Cron's recount; writes read their own rows under it.
 */
const UNPAID = "payload_bytes IS NOT NULL AND api_key_id IS NULL";

/** The total as of the last write; null if its row is missing (the Cron's recount makes it again). */
export function payloadTotal(db: D1Database) {
  return db.prepare("SELECT bytes FROM checkout_payload_total WHERE id = 1").first<number>("bytes");
}

/**
 * The statement that takes `bytes` of room for a new session `id` (bound ?1 to ?4: id, bytes,
 * claim, cap), when the total stays within the cap and no row has that id yet (a session Stripe
 * replayed is recorded already, and counted). It writes `claim`, a token of this checkout's own, so
 * the INSERT after it in the batch can tell the room was taken for it: roomTakenFor(its claim).
 */
export const TAKE_ROOM = `UPDATE checkout_payload_total SET bytes = bytes + ?2, claim = ?3
  WHERE id = 1 AND bytes + ?2 <= ?4 AND NOT EXISTS (SELECT 1 FROM checkout_sessions WHERE id = ?1)`;
export const roomTakenFor = (param: string) =>
  `EXISTS (SELECT 1 FROM checkout_payload_total WHERE id = 1 AND claim = ${param})`;

/**
 * The statement that moves the total by `delta`, an SQL expression of one number (the sum of the
 * rows a write is about to change, read by the same condition as that write), bound to `params`.
 * Placed just before the write in its batch.
 */
export function moveTotal(db: D1Database, delta: string, ...params: unknown[]) {
  return db
    .prepare(`UPDATE checkout_payload_total SET bytes = bytes + (${delta}) WHERE id = 1`)
    .bind(...params);
}

/**
 * The negated sum of the counted payload bytes of the rows `where` names: what a write with that
 * condition that clears their payloads (or grants them a key) takes off the total.
 */
export const releasedBy = (where: string) =>
  `SELECT -coalesce(sum(payload_bytes), 0) FROM checkout_sessions WHERE ${UNPAID} AND (${where})`;

/**
 * The Cron's recount (ops/database.ts, every run): the total set to the real sum, one scan of the
 * index, by one UPDATE, so no write lands between the read and the set. It heals what the
 * previous version left (its writes do not move the total). An UPDATE: the Cron frees space when
 * D1 is full, where a statement that may add a row is refused; only a missing row is made again.
 * `drift`: what the total was off by (0 when every writer kept it); logged with the run.
 */
export async function recountPayloadTotal(db: D1Database) {
  const real = `SELECT coalesce(sum(payload_bytes), 0) FROM checkout_sessions WHERE ${UNPAID}`;
  const [before, after] = await db.batch<{ bytes: number }>([
    db.prepare("SELECT bytes FROM checkout_payload_total WHERE id = 1"),
    db.prepare(`UPDATE checkout_payload_total SET bytes = (${real}) WHERE id = 1 RETURNING bytes`),
  ]);
  let bytes = after?.results[0]?.bytes;
  if (bytes === undefined) {
    const made = await db
      .prepare(
        `INSERT INTO checkout_payload_total (id, bytes) SELECT 1, (${real})
         ON CONFLICT (id) DO UPDATE SET bytes = excluded.bytes RETURNING bytes`,
      )
      .first<number>("bytes");
    bytes = made ?? 0;
  }
  return { bytes, drift: bytes - (before?.results[0]?.bytes ?? 0) };
}
