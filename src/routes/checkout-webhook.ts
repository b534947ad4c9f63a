import { type Context, Hono } from "hono";
import { ERROR, json, operation } from "../discovery/operation";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { followRefundsNow, refundsNow } from "../payments/card-refund-sync";
import { applyRefund, closeDispute, openDispute, paymentGranted } from "../payments/card-refunds";
import {
  failSession,
  runFirstPayload,
  runPaymentFirstPayload,
  settleSession,
} from "../payments/checkout-ledger";
import {
  fetchDisputeStatus,
  fetchSession,
  logStripeFailure,
  type RemoteSession,
  stripeClient,
  webCrypto,
} from "../payments/stripe";
import { eventSeen, recordEvent } from "../payments/webhook-events";

/** Stripe's signed webhook: grants, refunds and disputes of card checkouts (payments/checkout-ledger.ts). */
export const checkoutWebhookRoutes = new Hono<AppEnv>();

export const webhookOperation = operation({
  method: "post",
  path: "/api/cardpay/webhook",
  operationId: "stripe_webhook",
  summary: "Stripe webhook (verified with the Stripe-Signature header)",
  tags: ["checkout"],
  headers: [{ name: "Stripe-Signature", in: "header", required: true, schema: { type: "string" } }],
  responses: {
    "200": json("Event received"),
    "400": ERROR("Missing or invalid signature, or a signed event of a shape Stripe never sends"),
    "502": ERROR(
      "Stripe could not be read (session, payment, refunds or dispute); nothing recorded, Stripe redelivers",
    ),
    "503": ERROR("Not configured"),
  },
});

/** Dispute statuses after which nothing more happens to the charge (`charge.dispute.closed` names three). */
const DECIDED_DISPUTE = new Set(["won", "lost", "warning_closed", "prevented"]);

/** After the response: the first call must not hold the webhook answer (Stripe times out). */
function afterResponse(c: Context<AppEnv>, work: Promise<unknown>) {
  const logged = work.catch((e) =>
    console.error(JSON.stringify({ level: "error", msg: "first payload failed", error: String(e) })),
  );
  try {
    c.executionCtx.waitUntil(logged);
  } catch {
    // No execution context (app.fetch without one, in tests): the promise still runs.
  }
}

type StripeClient = NonNullable<Awaited<ReturnType<typeof stripeClient>>>;

/** A PaymentIntent as a charge or dispute names it: an id, or the expanded object. */
const intentId = (pi: string | { id: string } | null) => (typeof pi === "string" ? pi : pi?.id);

/** The Checkout Session a PaymentIntent paid, as Stripe reports it now; null when none did. */
async function sessionOfPayment(stripe: StripeClient, paymentIntent: string) {
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
  c: Context<AppEnv>,
  stripe: StripeClient,
  paymentIntent: string | undefined,
  eventId: string,
): Promise<Response | { granted?: string }> {
  const db = c.env.DB;
  if (!paymentIntent || (await paymentGranted(db, paymentIntent)) || (await eventSeen(db, eventId))) {
    return {};
  }
  let remote: RemoteSession | null;
  try {
    remote = await sessionOfPayment(stripe, paymentIntent);
  } catch (e) {
    logStripeFailure(e, "readSession", { msg: "stripe list failed" });
    return detail(c, 502, "Could not find the payment's checkout with Stripe; retry later.");
  }
  if (!remote?.paid) return {};
  return { granted: (await settleSession(c.env, remote)) === "granted" ? remote.id : undefined };
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
  c: Context<AppEnv>,
  first: { granted?: string },
  outcome: string,
  paymentIntent: string | undefined,
) {
  if (first.granted) afterResponse(c, runFirstPayload(c.env, first.granted));
  else if (paymentIntent && MAY_CALL_AGAIN.has(outcome)) {
    afterResponse(c, runPaymentFirstPayload(c.env, paymentIntent));
  }
  return c.json({ received: true, outcome });
}

checkoutWebhookRoutes.post(webhookOperation.route, async (c) => {
  const stripe = await stripeClient(c.env);
  const secret = c.env.STRIPE_WEBHOOK_SECRET;
  if (!stripe || !secret) return detail(c, 503, "Card payments are not configured on this deployment.");
  const signature = c.req.header("stripe-signature");
  if (!signature) return detail(c, 400, "Missing Stripe-Signature header");
  const raw = await c.req.text();
  let event: Awaited<ReturnType<typeof stripe.webhooks.constructEventAsync>>;
  try {
    event = await stripe.webhooks.constructEventAsync(raw, signature, secret, undefined, await webCrypto());
  } catch {
    return detail(c, 400, "Invalid Stripe-Signature");
  }
  const malformed = malformedEvent(event);
  if (malformed) return detail(c, 400, `Malformed Stripe event: ${malformed}`);
  const ref = { id: event.id, type: event.type };
  const db = c.env.DB;
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
    case "checkout.session.expired": {
      if (await eventSeen(db, event.id)) return c.json({ received: true, outcome: "duplicate_event" });
      // The event body only says which session; Stripe's current state decides (issue 19.5).
      let remote: RemoteSession | null;
      try {
        remote = await fetchSession(stripe, event.data.object.id);
      } catch (e) {
        logStripeFailure(e, "readSession", { msg: "stripe retrieve failed" });
        // Not recorded: Stripe redelivers and the next attempt decides.
        return detail(c, 502, "Could not confirm the session with Stripe; retry later.");
      }
      if (!remote) {
        await recordEvent(db, ref);
        return c.json({ received: true, outcome: "unknown_session" });
      }
      const outcome = await settleSession(c.env, remote, ref);
      if (outcome === "granted") afterResponse(c, runFirstPayload(c.env, remote.id));
      return c.json({
        received: true,
        outcome,
        granted: outcome === "granted" || outcome === "already_granted",
      });
    }
    case "checkout.session.async_payment_failed":
      return c.json({ received: true, outcome: await failSession(db, event.data.object.id, ref) });
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
        return c.json({
          received: true,
          outcome: (await recordEvent(db, ref)) ? "unchanged" : "duplicate_event",
        });
      }
      // A redelivery acts once: Stripe need not be asked again.
      if (await eventSeen(db, event.id)) return c.json({ received: true, outcome: "duplicate_event" });
      const first = await grantBeforeCharge(c, stripe, pi, event.id);
      if (first instanceof Response) return first;
      // The event's own figures may be stale (a redelivery after its refund failed) or in another
      // API version's currency: what Stripe reports now decides. A payment no pack came from
      // (another product on the account) is only acknowledged, without asking.
      const now = pi && (await paymentGranted(db, pi)) ? await refundsNow(stripe, pi) : null;
      if (now && "unreadable" in now) return detail(c, 502, now.unreadable);
      const outcome = await applyRefund(db, pi, now, ref);
      // A duplicate wrote nothing (its first delivery follows Stripe); nor did an unknown payment.
      if (!pi || !now || (outcome !== "refund_applied" && outcome !== "unchanged")) {
        return chargeAnswer(c, first, outcome, pi);
      }
      return chargeAnswer(c, first, await followRefundsNow(db, stripe, pi, now, outcome), pi);
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
        logStripeFailure(e, "readDispute", { msg: "stripe dispute retrieve failed", dispute: d.id });
        // Not recorded: Stripe redelivers and the next attempt decides (a 401/403 is logged as our
        // configuration: the dispute is applied once the key can read it).
        return detail(c, 502, "Could not confirm the dispute with Stripe; retry later.");
      }
      if (status !== null && DECIDED_DISPUTE.has(status)) {
        const first = await recordEvent(db, ref);
        return c.json({ received: true, outcome: first ? "already_decided" : "duplicate_event" });
      }
      const first = await grantBeforeCharge(c, stripe, pi, event.id);
      if (first instanceof Response) return first;
      return chargeAnswer(c, first, await openDispute(db, { id: d.id, payment_intent: pi }, ref), pi);
    }
    case "charge.dispute.closed": {
      const d = event.data.object;
      const pi = intentId(d.payment_intent);
      const first = await grantBeforeCharge(c, stripe, pi, event.id);
      if (first instanceof Response) return first;
      const outcome = await closeDispute(db, { id: d.id, status: d.status, payment_intent: pi }, ref);
      return chargeAnswer(c, first, outcome, pi);
    }
    default:
      await recordEvent(db, ref);
      return c.json({ received: true, ignored: event.type });
  }
});
