import { recordEvent, type StripeEventRef, withEvent } from "./webhook-events";

/**
 * What Stripe's refunds and disputes of a card pack take back from its key (charge.refunded,
 * charge.refund.updated, charge.dispute.*): each change is written with its event id in one D1
 * transaction.
 */

interface PackKey {
  id: string;
  calls_total: number;
}

async function keyOfPayment(db: D1Database, paymentIntent: string | null | undefined) {
  if (!paymentIntent) return null;
  return db
    .prepare(
      `SELECT k.id, k.calls_total FROM checkout_sessions s JOIN api_keys k ON k.id = s.api_key_id
       WHERE s.payment_intent = ?1`,
    )
    .bind(paymentIntent)
    .first<PackKey>();
}

/** Whether a granted pack came from this PaymentIntent: a charge event then has a key to act on. */
export async function paymentGranted(db: D1Database, paymentIntent: string) {
  return (await keyOfPayment(db, paymentIntent)) !== null;
}

/** The calls a refunded share of the pack stands for: rounded up, so no refunded call stays usable. */
export function refundedCalls(callsTotal: number, amount: number, amountRefunded: number) {
  if (amount <= 0) return 0;
  const share = Math.min(Math.max(amountRefunded, 0), amount);
  return Math.ceil((callsTotal * share) / amount);
}

/**
 * A payment's refunds as Stripe reports them now (re-read, never an event's copy): the total of
 * its refunds that did not fail and were not canceled, and the amount charged, both in the
 * charge's currency. The charge's own amount, not the pack's `amount_cents` in USD: with Stripe's
 * Adaptive Pricing a buyer may be charged (and refunded) in another currency.
 */
export interface PaymentRefunds {
  refunded: number;
  amount: number;
}

/**
 * The UPDATE that moves a key's revoked count (`calls_revoked`) to `target`, down as well as up.
 *
 * Going up, the calls come out of the unspent credits and what calls_left cannot cover goes to
 * revoke_debt: those credits are spent, but a spending call may not have finished, and if it fails
 * refundCredit pays the debt before giving anything back. Without it a refund landing while every
 * credit was in flight took nothing, and the failed calls then handed the revoked credits back. (A
 * call that succeeds keeps its credit: a buyer who used more than the kept share keeps what was
 * used.) Going down (a refund failed or was canceled: the buyer got nothing back), the debt is
 * cancelled first and only the rest goes back to calls_left, never above the pack less what is
 * still refunded: credits the buyer spent are not handed back twice. A key whose dispute was lost
 * stays revoked. One UPDATE: SQLite's SET reads the row as it was, so each column is computed from
 * the calls_left, calls_revoked and revoke_debt this statement found.
 */
const revokeTo = (db: D1Database, keyId: string, target: number) =>
  db
    .prepare(
      `UPDATE api_keys SET
         calls_left = CASE WHEN ?2 >= calls_revoked THEN max(0, calls_left - (?2 - calls_revoked))
           ELSE min(calls_total - ?2, calls_left + max(0, calls_revoked - ?2 - revoke_debt)) END,
         revoke_debt = CASE WHEN ?2 >= calls_revoked THEN revoke_debt + max(0, ?2 - calls_revoked - calls_left)
           ELSE max(0, revoke_debt - (calls_revoked - ?2)) END,
         calls_revoked = ?2
       WHERE id = ?1 AND calls_revoked <> ?2 AND (dispute_status IS NULL OR dispute_status <> 'lost')`,
    )
    .bind(keyId, target);

/**
 * charge.refunded and charge.refund.updated: the revoked count follows the share of the pack
 * Stripe has refunded now (revokeTo), down as well as up, so refund events in any order, late
 * redeliveries included, end in Stripe's state. (Trusting a charge.refunded's running total let a
 * redelivery that arrived after its refund failed take the calls back for good: the buyer got no
 * money back, and the count could only grow.) The event id is recorded in the same transaction.
 * Two events handled at once may write in the other order than they read Stripe: the webhook then
 * reads Stripe again after this write and follows it (followRefunds).
 *
 * `now` is null when Stripe was not asked (no pack came from the payment): the event is then only
 * acknowledged.
 */
export async function applyRefund(
  db: D1Database,
  paymentIntent: string | null | undefined,
  now: PaymentRefunds | null,
  event: StripeEventRef,
) {
  const key = await keyOfPayment(db, paymentIntent);
  if (!key || !now) return (await recordEvent(db, event)) ? "unknown_payment" : "duplicate_event";
  const target = refundedCalls(key.calls_total, now.amount, now.refunded);
  const r = await withEvent(db, event, [revokeTo(db, key.id, target)]);
  if (!r) return "duplicate_event";
  return r[1]?.meta.changes === 0 ? "unchanged" : "refund_applied";
}

/**
 * A later round of an applied refund event: the revoked count follows what Stripe reports after
 * the event's own write, with no event recorded (the event was, with its first write; this is not
 * a new one, so no dedupe may refuse it). Each handler that writes then reads Stripe again, so the
 * last write to land was made by a handler that read Stripe after its previous write. Whether the
 * key changed.
 */
export async function followRefunds(db: D1Database, paymentIntent: string, now: PaymentRefunds) {
  const key = await keyOfPayment(db, paymentIntent);
  if (!key) return false;
  const r = await revokeTo(db, key.id, refundedCalls(key.calls_total, now.amount, now.refunded)).run();
  return r.meta.changes > 0;
}

/**
 * charge.dispute.created: the key's credits are frozen until the dispute is decided. The webhook
 * calls this only for a dispute Stripe still has open: a `created` that arrives after its
 * `closed` would otherwise freeze the key for good.
 */
export async function openDispute(
  db: D1Database,
  dispute: { id: string; payment_intent?: string | null },
  event: StripeEventRef,
) {
  const key = await keyOfPayment(db, dispute.payment_intent);
  if (!key) return (await recordEvent(db, event)) ? "unknown_payment" : "duplicate_event";
  const r = await withEvent(db, event, [
    db
      .prepare(
        "UPDATE api_keys SET dispute_status = 'open', dispute_id = ?2 WHERE id = ?1 AND dispute_status IS NULL",
      )
      .bind(key.id, dispute.id),
  ]);
  if (!r) return "duplicate_event";
  // No row changed: the key is frozen by another dispute already, or revoked.
  return r[1]?.meta.changes === 0 ? "unchanged" : "frozen";
}

/**
 * charge.dispute.closed: `won` (and `warning_closed`, an inquiry that never became a chargeback)
 * unfreezes the credits; `lost` revokes what was left, for good. A `won` whose `created` has not
 * arrived finds nothing frozen (`unchanged`); the late `created` then finds the dispute decided.
 */
export async function closeDispute(
  db: D1Database,
  dispute: { id: string; status: string; payment_intent?: string | null },
  event: StripeEventRef,
) {
  const key = await keyOfPayment(db, dispute.payment_intent);
  if (!key) return (await recordEvent(db, event)) ? "unknown_payment" : "duplicate_event";
  const lost = dispute.status === "lost";
  const r = await withEvent(db, event, [
    lost
      ? db
          .prepare(
            `UPDATE api_keys SET dispute_status = 'lost', dispute_id = ?2, calls_left = 0, calls_revoked = calls_total
             WHERE id = ?1 AND (dispute_id IS NULL OR dispute_id = ?2)`,
          )
          .bind(key.id, dispute.id)
      : db
          .prepare(
            "UPDATE api_keys SET dispute_status = NULL, dispute_id = NULL WHERE id = ?1 AND dispute_id = ?2 AND dispute_status = 'open'",
          )
          .bind(key.id, dispute.id),
  ]);
  if (!r) return "duplicate_event";
  if (r[1]?.meta.changes === 0) return "unchanged";
  return lost ? "revoked" : "restored";
}
