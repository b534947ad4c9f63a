import type Stripe from "stripe";
import type { Bindings } from "../env";
import { followRefundsNow, REFUND_FOLLOW_ROUNDS, refundsNow } from "./card-refund-sync";
import { followDisputes, followRefunds, type PaymentRefunds } from "./card-refunds";
import { type SessionOutcome, settleSession } from "./checkout-sessions";
import { keyRefused, logStripeFailure, type RemoteSession } from "./stripe";

/**
 * A grant with what Stripe says of the payment besides the session: its refunds and disputes. The
 * Cron's sweep grants a pack only when every webhook of it was lost; then its refund and dispute
 * events were most likely lost too (or came
 * before the grant, when no key was there to take from: recorded as `unknown_payment`), and a D1
 * restore to before the grant loses them for good. Granted on the session alone, a pack Stripe had
 * fully refunded came back with all its calls. So these grants read the payment's state first and put it on the key
 * right after the grant, as the charge events would have (card-refunds.ts), with no Stripe round
 * trip in between: the key is revealed and used only after the grant commits, and what a call that
 * slips into those few milliseconds holds is settled by revoke_debt like any refund that lands
 * while credits are in flight. The webhook's completed event grants on the session alone: it comes
 * first, and the charge events after it act on the key.
 */

/** A payment's refunds and disputes as Stripe reports them now. */
export interface PaymentState {
  refunds: PaymentRefunds;
  disputes: { id: string; status: string }[];
}

/** Stripe reads of paymentStateNow: the refunds, the checkout's amount (refundsNow), the disputes. */
export const PAYMENT_STATE_READS = 3;

/**
 * The most Stripe reads a sweep grant costs beyond its session's own: PAYMENT_STATE_READS, and the
 * re-reads after a refund is put on the key (followRefundsNow, REFUND_FOLLOW_ROUNDS at most; one
 * when Stripe's refunds hold still, none when there were none to put). The sweep grants a pack
 * only while its read budget still holds this many.
 */
export const SWEEP_GRANT_READS = PAYMENT_STATE_READS + REFUND_FOLLOW_ROUNDS;

/** How many disputes of a payment are read: a charge has one, or an inquiry and then a chargeback. */
const DISPUTES_READ = 10;

/** The payment's refunds and disputes now, or why they could not be read (logged). */
export async function paymentStateNow(
  stripe: Stripe,
  paymentIntent: string,
): Promise<PaymentState | { unreadable: string; keyRefused?: boolean }> {
  const refunds = await refundsNow(stripe, paymentIntent);
  if ("unreadable" in refunds) return refunds;
  try {
    const { data } = await stripe.disputes.list({ payment_intent: paymentIntent, limit: DISPUTES_READ });
    return { refunds, disputes: data.map((d) => ({ id: d.id, status: d.status })) };
  } catch (e) {
    logStripeFailure(e, "readDispute", { msg: "stripe dispute list failed", payment_intent: paymentIntent });
    return {
      unreadable: "Could not read the payment's disputes from Stripe; retry later.",
      keyRefused: keyRefused(e),
    };
  }
}

/** What grantWithPayment did: the grant's outcome and what it put on the key, or why Stripe could not be read. */
export type PaidGrant =
  | { unreadable: string }
  | {
      outcome: SessionOutcome;
      applied?: Awaited<ReturnType<typeof applyPaymentState>>;
      /** Why the refunds and disputes were not read: the key may not read them, granted on the session alone. */
      unread?: string;
    };

/**
 * Grants a session Stripe reports paid (settleSession) with its payment's refunds and disputes,
 * read before the grant and put on the key right after it. When Stripe cannot be read about them,
 * nothing is granted (a warn line; the sweep asks again in a later run), except when Stripe refuses
 * the key itself (a restricted key without those permissions): then on the session alone, as the
 * webhook grants. A session already
 * granted is left as it is (its events act on its key).
 */
export async function grantWithPayment(
  env: Bindings,
  stripe: Stripe,
  remote: RemoteSession,
): Promise<PaidGrant> {
  const payment = remote.paymentIntent;
  // A paid session names its PaymentIntent (payment mode); one that did not would have nothing to read.
  if (!payment) return { outcome: await settleSession(env, remote) };
  const state = await paymentStateNow(stripe, payment);
  if ("unreadable" in state && !state.keyRefused) {
    // A passing failure: asked again by a later run, never granted with the refunds unseen (the
    // sweep's grants are those whose refund events were most likely lost too).
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "paid session not granted yet: its refunds or disputes could not be read",
        session_id: remote.id,
        payment_intent: payment,
      }),
    );
    return { unreadable: state.unreadable };
  }
  if ("unreadable" in state) {
    // The key may not read them (no Refunds: Read or Disputes: Read; the configuration error is
    // logged): asking again changes nothing, so granted on the session alone, as the webhook
    // grants: a paid buyer is not held back by our key; the charge events act on the key.
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "paid session granted without its refunds or disputes: the Stripe key may not read them",
        session_id: remote.id,
        payment_intent: payment,
      }),
    );
    return { outcome: await settleSession(env, remote), unread: state.unreadable };
  }
  const outcome = await settleSession(env, remote);
  if (outcome !== "granted") return { outcome };
  return { outcome, applied: await applyPaymentState(env.DB, stripe, payment, state) };
}

/**
 * Puts a payment's state, read before its key was granted, on that key: the refunded share of the
 * pack revoked (card-refunds.ts followRefunds: no event came, so none is recorded) and a lost or
 * open dispute applied (followDisputes). A refund event handled meanwhile may have written a newer
 * state than this read: when this write changed the key, Stripe's refunds are read again and
 * followed (followRefundsNow), as a refund event does after its own write, so whichever writes last
 * ends in Stripe's state. What changed, for the sweep's log line.
 */
export async function applyPaymentState(
  db: D1Database,
  stripe: Stripe,
  paymentIntent: string,
  state: PaymentState,
) {
  let refund = (await followRefunds(db, paymentIntent, state.refunds)) ? "refund_applied" : "unchanged";
  if (refund === "refund_applied") {
    refund = await followRefundsNow(db, stripe, paymentIntent, state.refunds, refund);
  }
  const dispute = (await followDisputes(db, paymentIntent, state.disputes)) ? "dispute_applied" : "unchanged";
  return { refund, dispute };
}

/**
 * Puts a session the sweep claimed at `claimedAt` (checkout-sessions.ts claimSweep) back where it
 * was in the sweep's queue (`checkedAt`, as read then): a paid session whose grant reads did not
 * fit in the run's budget is then asked first by the next run, not hours later at the back. Only
 * checked_at is written, and only while this run's claim stands.
 */
export async function unclaimSweep(db: D1Database, id: string, claimedAt: number, checkedAt: number | null) {
  await db
    .prepare("UPDATE checkout_sessions SET checked_at = ?3 WHERE id = ?1 AND checked_at = ?2")
    .bind(id, claimedAt, checkedAt)
    .run();
}
