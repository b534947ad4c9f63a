/**
 * Stripe webhook events we have handled (webhook_events): a redelivered event finds its id here,
 * and an event is recorded in the same D1 transaction as what it changes, so it acts once.
 */

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
