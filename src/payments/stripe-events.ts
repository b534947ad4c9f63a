import type Stripe from "stripe";
import type { Bindings } from "../env";
import { sessionRef } from "../redact";
import { followRefundsNow, refundsNow } from "./card-refund-sync";
import { applyRefund, closeDispute, openDispute, paymentGranted } from "./card-refunds";
import { runFirstPayload, runPaymentFirstPayload } from "./checkout-first-call";
import { failSession, settleSession } from "./checkout-sessions";
import { fetchDisputeStatus, fetchSession, logStripeFailure, type RemoteSession } from "./stripe";
import { eventSeen, recordEvent } from "./webhook-events";

/**
 * What a verified Stripe event does to our ledger, whatever carried it: the webhook route only
 * checks the signature and writes the answer this returns. Every event is decided on Stripe's
 * state now (an event body may be stale or arrive out of order), acts once (webhook_events), and
 * an event Stripe must send again (Stripe could not be read) is answered 502 with nothing recorded.
 */

/** The webhook's answer to an event: its status and JSON body. */
export interface EventAnswer {
  status: 200 | 400 | 502;
  body: Record<string, unknown>;
}

/**
 * Work that must not hold the answer (Stripe times out on a slow webhook): a pack's first call,
 * started here and run past the answer by the caller.
 */
export type RunAfterAnswer = (run: Promise<void>) => void;

const received = (fields: Record<string, unknown>): EventAnswer => ({
  status: 200,
  body: { received: true, ...fields },
});
const failed = (status: 400 | 502, detail: string): EventAnswer => ({ status, body: { detail } });

/** Dispute statuses after which nothing more happens to the charge (`charge.dispute.closed` names three). */
const DECIDED_DISPUTE = new Set(["won", "lost", "warning_closed", "prevented"]);

/** A PaymentIntent as a charge or dispute names it: an id, or the expanded object. */
const intentId = (pi: string | { id: string } | null) => (typeof pi === "string" ? pi : pi?.id);

/** The Checkout Session a PaymentIntent paid, as Stripe reports it now; null when none did. */
async function sessionOfPayment(stripe: Stripe, paymentIntent: string) {
  const { data } = await stripe.checkout.sessions.list({ payment_intent: paymentIntent, limit: 1 });
  return data[0] ? fetchSession(stripe, data[0].id) : null;
}

/**
 * A refund or dispute can arrive before the pack it takes from is granted: the completed webhook
 * got a 5xx, Stripe's retries back off for hours, and the buyer has not pressed Reveal. The
 * PaymentIntent is stored only at grant time, so such an event found no key; recorded as
 * `unknown_payment` it was never applied, and the late grant handed out the whole pack.
 *
 * So before a charge event is applied, a PaymentIntent no key holds is looked up in Stripe: if a
 * Checkout Session it paid is ours and Stripe reports it paid, the session is granted first (the
 * same idempotent grant as the webhook and the Reveal POST, one key whichever runs first), and the
 * event then applies to that key in its own transaction. The grant has committed before the event
 * looks the key up again, so whatever the order of the events, the late grant and the Reveal POST,
 * the event finds the key; and a grant that runs later finds the session granted and adds nothing.
 * Keeping unknown events pending in D1 instead would need the grant batch to replay them; asking
 * Stripe reuses the grant rule and its one writer. If Stripe cannot be asked, the answer is 502 and
 * nothing is recorded: Stripe redelivers and the next attempt decides. A PaymentIntent that paid no
 * session of ours (another product on the account) is still acknowledged as `unknown_payment`.
 *
 * Returns the session granted here (its first call then runs after the answer), or the 502.
 */
async function grantBeforeCharge(
  env: Bindings,
  stripe: Stripe,
  paymentIntent: string | undefined,
  eventId: string,
): Promise<{ answer: EventAnswer } | { granted?: string }> {
  const db = env.DB;
  if (!paymentIntent || (await paymentGranted(db, paymentIntent)) || (await eventSeen(db, eventId))) {
    return {};
  }
  let remote: RemoteSession | null;
  try {
    remote = await sessionOfPayment(stripe, paymentIntent);
  } catch (e) {
    logStripeFailure(e, "readSession", {
      msg: "stripe list failed",
      event_id: eventId,
      payment_intent: paymentIntent,
    });
    return { answer: failed(502, "Could not find the payment's checkout with Stripe; retry later.") };
  }
  if (!remote?.paid) return {};
  return { granted: (await settleSession(env, remote)) === "granted" ? remote.id : undefined };
}

/** The event types acted on (the switch below): each reads its object's `id`. */
const ACTED_ON = new Set([
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.expired",
  "checkout.session.async_payment_failed",
  "charge.refunded",
  "charge.refund.updated",
  "charge.dispute.created",
  "charge.dispute.closed",
]);

/**
 * Why a correctly signed event is not one Stripe sends (its id, type or object missing or of
 * another type), if it is not. Only the holder of the webhook secret can sign one, but its fields
 * go into D1 and into Stripe reads: refused with a 400, nothing recorded, never a 500.
 */
function malformedEvent(event: unknown): string | undefined {
  if (!event || typeof event !== "object") return "not an object";
  const { id, type, data } = event as { id?: unknown; type?: unknown; data?: { object?: unknown } | null };
  if (typeof id !== "string" || !id) return "id must be a non-empty string";
  if (typeof type !== "string" || !type) return "type must be a non-empty string";
  const object = data?.object;
  if (!object || typeof object !== "object") return "data.object must be an object";
  if (ACTED_ON.has(type) && typeof (object as { id?: unknown }).id !== "string")
    return "data.object.id must be a string";
  return undefined;
}

/** Outcomes after which a pack may call again: a dispute won, a refund that failed or was canceled. */
const MAY_CALL_AGAIN = new Set(["restored", "refund_applied"]);

/**
 * A charge event's answer. A pack granted for it runs its first call now, after the event applied,
 * and so does one the event may have let call again, whose first call was held back while it could
 * not (a dispute won). runFirstPayload claims the call only while the pack can make it and it has
 * not run, so it runs at most once whichever of this and the Reveal POST comes first, and never on
 * a frozen or refunded pack (its answer would be a 402 stored for good).
 */
function chargeAnswer(
  env: Bindings,
  runAfter: RunAfterAnswer,
  first: { granted?: string },
  outcome: string,
  paymentIntent: string | undefined,
) {
  if (first.granted) runAfter(runFirstPayload(env, first.granted));
  else if (paymentIntent && MAY_CALL_AGAIN.has(outcome)) {
    runAfter(runPaymentFirstPayload(env, paymentIntent));
  }
  return received({ outcome });
}

/**
 * Acts on a Stripe event whose signature was verified; a first call it starts (a pack granted, or
 * let call again) is handed to `runAfter`, never awaited.
 */
export async function handleStripeEvent(
  env: Bindings,
  stripe: Stripe,
  event: Stripe.Event,
  runAfter: RunAfterAnswer,
): Promise<EventAnswer> {
  const malformed = malformedEvent(event);
  if (malformed) return failed(400, `Malformed Stripe event: ${malformed}`);
  const ref = { id: event.id, type: event.type };
  const db = env.DB;
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
    case "checkout.session.expired": {
      if (await eventSeen(db, event.id)) return received({ outcome: "duplicate_event" });
      // The event body only says which session; Stripe's current state decides (issue 19.5).
      let remote: RemoteSession | null;
      try {
        remote = await fetchSession(stripe, event.data.object.id);
      } catch (e) {
        logStripeFailure(e, "readSession", {
          msg: "stripe retrieve failed",
          event_id: event.id,
          session_id: sessionRef(event.data.object.id),
        });
        // Not recorded: Stripe redelivers and the next attempt decides.
        return failed(502, "Could not confirm the session with Stripe; retry later.");
      }
      if (!remote) {
        await recordEvent(db, ref);
        return received({ outcome: "unknown_session" });
      }
      const outcome = await settleSession(env, remote, ref);
      if (outcome === "granted") runAfter(runFirstPayload(env, remote.id));
      return received({ outcome, granted: outcome === "granted" || outcome === "already_granted" });
    }
    case "checkout.session.async_payment_failed":
      return received({ outcome: await failSession(db, event.data.object.id, ref) });
    case "charge.refunded":
    case "charge.refund.updated": {
      const object = event.data.object;
      const pi = intentId(object.payment_intent);
      // A refund.updated that did not fail (nor was canceled) changes nothing the buyer holds: the
      // refund already counted when it was made.
      if (
        event.type === "charge.refund.updated" &&
        event.data.object.status !== "failed" &&
        event.data.object.status !== "canceled"
      ) {
        return received({ outcome: (await recordEvent(db, ref)) ? "unchanged" : "duplicate_event" });
      }
      // A redelivery acts once: Stripe need not be asked again.
      if (await eventSeen(db, event.id)) return received({ outcome: "duplicate_event" });
      const first = await grantBeforeCharge(env, stripe, pi, event.id);
      if ("answer" in first) return first.answer;
      // The event's own figures may be stale (a redelivery after its refund failed) or in another
      // API version's currency: what Stripe reports now decides. A payment no pack came from
      // (another product on the account) is only acknowledged, without asking.
      const now = pi && (await paymentGranted(db, pi)) ? await refundsNow(stripe, pi) : null;
      if (now && "unreadable" in now) return failed(502, now.unreadable);
      const outcome = await applyRefund(db, pi, now, ref);
      // A duplicate wrote nothing (its first delivery follows Stripe); nor did an unknown payment.
      if (!pi || !now || (outcome !== "refund_applied" && outcome !== "unchanged")) {
        return chargeAnswer(env, runAfter, first, outcome, pi);
      }
      return chargeAnswer(env, runAfter, first, await followRefundsNow(db, stripe, pi, now, outcome), pi);
    }
    case "charge.dispute.created": {
      const d = event.data.object;
      const pi = intentId(d.payment_intent);
      // Stripe does not promise event order: a `created` that arrives after its dispute was decided
      // must not freeze the key (its `closed` has come and gone). Stripe's current state decides.
      let status: string | null;
      try {
        status = await fetchDisputeStatus(stripe, d.id);
      } catch (e) {
        logStripeFailure(e, "readDispute", {
          msg: "stripe dispute retrieve failed",
          event_id: event.id,
          dispute: d.id,
          payment_intent: pi,
        });
        // Not recorded: Stripe redelivers and the next attempt decides (a 401/403 is logged as our
        // configuration: the dispute is applied once the key can read it).
        return failed(502, "Could not confirm the dispute with Stripe; retry later.");
      }
      if (status !== null && DECIDED_DISPUTE.has(status)) {
        const first = await recordEvent(db, ref);
        return received({ outcome: first ? "already_decided" : "duplicate_event" });
      }
      const first = await grantBeforeCharge(env, stripe, pi, event.id);
      if ("answer" in first) return first.answer;
      const outcome = await openDispute(db, { id: d.id, payment_intent: pi }, ref);
      return chargeAnswer(env, runAfter, first, outcome, pi);
    }
    case "charge.dispute.closed": {
      const d = event.data.object;
      const pi = intentId(d.payment_intent);
      const first = await grantBeforeCharge(env, stripe, pi, event.id);
      if ("answer" in first) return first.answer;
      const outcome = await closeDispute(db, { id: d.id, status: d.status, payment_intent: pi }, ref);
      return chargeAnswer(env, runAfter, first, outcome, pi);
    }
    default:
      await recordEvent(db, ref);
      return received({ ignored: event.type });
  }
}
