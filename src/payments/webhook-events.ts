/**
 * Stripe webhook events we have handled (webhook_events): a redelivered event finds its id here,
 * and an event is recorded in the same D1 transaction as what it changes, so it acts once.
 */

/**
 * How long a handled event's id is kept: Stripe redelivers an event for up to 3 days, and lists
 * (so lets a person resend, from the Dashboard or the CLI) only events created in the last 30
 * days; an event is received after it is created, so 35 days from its receipt is past both, with
 * days to spare for clocks. Kept for ever before, every free checkout left a row for good (its
 * `checkout.session.expired`). An event older than that which still came would change nothing
 * twice all the same: each handler sets a state rather than adding to it (a grant only where the
 * session has no api_key_id yet, a refund revokes up to what Stripe reports refunded now, a
 * dispute's state is set only from the one before it).
 */
export const WEBHOOK_EVENT_RETENTION_DAYS = 35;

export interface StripeEventRef {
  id: string;
  type: string;
}

export async function eventSeen(db: D1Database, eventId: string) {
  return (
    (await db.prepare("SELECT 1 FROM webhook_events WHERE event_id = ?1").bind(eventId).first()) !== null
  );
}

const insertEvent = (db: D1Database, event: StripeEventRef) =>
  db
    .prepare("INSERT INTO webhook_events (event_id, type, received_at) VALUES (?1, ?2, ?3)")
    .bind(event.id, event.type, Date.now());

const isDuplicateEvent = (e: unknown) => /UNIQUE constraint failed: webhook_events/.test(String(e));

/** Records an event that grants nothing; false when seen before. */
export async function recordEvent(db: D1Database, event: StripeEventRef) {
  const r = await db
    .prepare(
      "INSERT INTO webhook_events (event_id, type, received_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )
    .bind(event.id, event.type, Date.now())
    .run();
  return r.meta.changes === 1;
}

/** Runs the statements after recording the event, in one transaction; false when the event was seen. */
export async function withEvent(
  db: D1Database,
  event: StripeEventRef | undefined,
  statements: D1PreparedStatement[],
): Promise<D1Result[] | null> {
  if (!event && statements.length === 0) return [];
  try {
    return await db.batch(event ? [insertEvent(db, event), ...statements] : statements);
  } catch (e) {
    if (event && isDuplicateEvent(e)) return null;
    throw e;
  }
}

/**
 * The delete of up to `limit` event ids received before the retention as of `now` (the oldest
 * first, by the webhook_events_received_at index, migration 0021): D1 has no DELETE … LIMIT. Run
 * in chunks by the Cron (ops/database.ts).
 */
export function expiredEvents(db: D1Database, now: number, limit: number) {
  return db
    .prepare(
      "DELETE FROM webhook_events WHERE rowid IN (SELECT rowid FROM webhook_events WHERE received_at < ?1 LIMIT ?2)",
    )
    .bind(now - WEBHOOK_EVENT_RETENTION_DAYS * 86_400_000, limit);
}
