import type Stripe from "stripe";
import { followRefunds, type PaymentRefunds } from "./card-refunds";
import { chargedAmount, logStripeFailure, refundedTotal } from "./stripe";

/** What a refund event acts on: Stripe's state of the payment now, read back after the write too. */
export type RefundsRead = PaymentRefunds | { unreadable: string };

/**
 * A payment's refunds and amount as Stripe reports them now (card-refunds.ts applyRefund), or why
 * they could not be had: the webhook answers that 502 and records nothing, Stripe redelivers and
 * the next attempt decides. A session that states no amount in the refunds' currency is logged
 * and refused too: a share computed against another currency's amount would revoke the wrong
 * number of calls.
 */
export async function refundsNow(stripe: Stripe, paymentIntent: string): Promise<RefundsRead> {
  let refunds: Awaited<ReturnType<typeof refundedTotal>>;
  try {
    refunds = await refundedTotal(stripe, paymentIntent);
  } catch (e) {
    logStripeFailure(e, "readRefunds", { msg: "stripe refund list failed", payment_intent: paymentIntent });
    return { unreadable: "Could not read the payment's refunds from Stripe; retry later." };
  }
  let amount: number | null;
  try {
    amount = await chargedAmount(stripe, paymentIntent, refunds.currency);
  } catch (e) {
    logStripeFailure(e, "readSession", { msg: "stripe list failed", payment_intent: paymentIntent });
    return { unreadable: "Could not read the payment's checkout from Stripe; retry later." };
  }
  if (amount === null) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "refund currency not found on the payment's checkout session",
        payment_intent: paymentIntent,
        currency: refunds.currency,
      }),
    );
    return { unreadable: "Could not tell what the payment charged in its refunds' currency." };
  }
  return { refunded: refunds.refunded, amount };
}

/** How many times a refund event reads Stripe again after its write (followRefundsNow). */
const REFUND_FOLLOW_ROUNDS = 3;

/**
 * After a refund event's write: reads the payment's refunds again and, while Stripe's total differs
 * from the one just applied, applies it (card-refunds.ts followRefunds), at most
 * REFUND_FOLLOW_ROUNDS times. Two refund events handled at once each read Stripe and then write;
 * the one whose read is older could write last and leave the key in the older state for good:
 * calls handed back though the buyer got the money ($0.34 refunded, 57 calls revoked instead of
 * 114), or taken back though the refund failed. Now whichever handler writes last reads Stripe
 * after that write and follows it, so the key ends in Stripe's state either way. The charge's
 * amount does not change: only the refunds are read. A read that fails is logged and the event's
 * answer stands (it is recorded: a 502 would only bring back a duplicate). The outcome is
 * `refund_applied` when any round changed the key.
 */
export async function followRefundsNow(
  db: D1Database,
  stripe: Stripe,
  paymentIntent: string,
  applied: PaymentRefunds,
  outcome: string,
) {
  let last = applied;
  for (let round = 0; round < REFUND_FOLLOW_ROUNDS; round++) {
    let refunded: number;
    try {
      refunded = (await refundedTotal(stripe, paymentIntent)).refunded;
    } catch (e) {
      logStripeFailure(e, "readRefunds", {
        msg: "stripe refund list failed after the refund's write",
        payment_intent: paymentIntent,
      });
      return outcome;
    }
    if (refunded === last.refunded) return outcome;
    last = { ...last, refunded };
    if (await followRefunds(db, paymentIntent, last)) outcome = "refund_applied";
  }
  console.error(
    JSON.stringify({
      level: "warn",
      msg: "refunds changed on every re-read after the refund's write; the last total read is applied",
      payment_intent: paymentIntent,
    }),
  );
  return outcome;
}
