import type Stripe from "stripe";
import type * as z from "zod";
import { sha256Hex } from "../digest";
import type { Bindings } from "../env";
import { sessionRef } from "../redact";
import type { Skill } from "../skills/types";
import type { checkoutRequest } from "./checkout-request";
import {
  keyedSessionRecorded,
  recordSession,
  rememberKeyedSession,
  storedPayload,
  unpaidPayloadRoom,
} from "./checkout-sessions";
import { packPrice } from "./credits";
import { logStripeFailure, stripeErrors } from "./stripe";

/**
 * The making of a card checkout once its request is valid: the pack priced, the Stripe Checkout
 * Session asked for under an idempotency key, and the session recorded with its first-call payload.
 * Apart from the route because each step is a rule of the money and of Stripe (what a retry gets
 * back, what a full payload cap refuses, which Stripe failures a retry would only replay), and the
 * route only turns the outcome into an answer.
 */

/** A valid checkout: what it buys and who asks (their network scopes their Idempotency-Key). */
export interface CheckoutOrder {
  /** The request's body as validated; its JSON is the checkout's identity under a client key. */
  request: z.output<typeof checkoutRequest>;
  /** The skill it names. */
  skill: Skill;
  /** The client's Idempotency-Key, already checked (IDEMPOTENCY_KEY_PATTERN). */
  clientKey?: string;
  /** The caller's network (net/ip-ranges.ts callerNetwork). */
  network: string;
  /** The request's id: the session's reference and Stripe key when no client key is sent. */
  requestId: string;
  /** Where Stripe sends the buyer back (the success and cancel pages). */
  baseUrl: string;
}

export type CheckoutOutcome =
  | { created: { id: string; url: string | null }; calls: number; amountCents: number }
  /** Unpaid sessions hold all the first-call payloads we keep (UNPAID_PAYLOADS_MAX_BYTES). */
  | { refused: "payloads_full" }
  /** The client's Idempotency-Key was used for a different checkout. */
  | { refused: "key_reused" }
  /**
   * D1 failed a read or the recording (a Stripe session made then is left unreturned: nobody can
   * pay it, and Stripe expires it within 24 h). Nothing was charged; the same request may be sent again.
   */
  | { refused: "storage_unavailable" }
  /**
   * Stripe did not make the session; `replayed`: Stripe saved the failure under the client's key
   * and answers a retry with it (a new key is needed).
   */
  | { refused: "stripe_failed"; replayed: boolean };

/**
 * Creates the checkout's Stripe session and records it. `afterAnswer` is handed the work the answer
 * need not wait for (remembering a keyed session for its retries).
 */
export async function createCheckout(
  env: Bindings,
  stripe: Stripe,
  order: CheckoutOrder,
  afterAnswer: (work: Promise<unknown>) => Promise<void>,
): Promise<CheckoutOutcome> {
  const { request, skill, clientKey } = order;
  const { calls, amountCents } = packPrice(skill.price_atomic, request.quantity);
  // A client's Idempotency-Key makes its retries return the same session (Stripe replays the
  // create); the body's hash rides in client_reference_id, so reusing the key for a different
  // checkout changes the parameters and Stripe refuses it (409 here). Without the header each
  // request is a new checkout: nothing else identifies "the same" purchase of an anonymous buyer.
  // The key is scoped to the caller's network: the session id is the capability that reveals the
  // key, and unscoped, two buyers who picked the same key ("checkout-1", a hash of the body) got
  // one session, so the second could reveal the first's paid key. A retry from another network
  // makes a new, unpaid session instead, which costs nobody anything.
  const scope = clientKey ? `${order.network}\n${clientKey}` : undefined;
  const reference = scope
    ? `idem_${(await sha256Hex(`${scope}\n${JSON.stringify(request)}`)).slice(0, 48)}`
    : order.requestId;
  const idempotencyKey = scope ? `checkout:client:${await sha256Hex(scope)}` : `checkout:${order.requestId}`;
  // Before Stripe: past the cap on what unpaid sessions hold, a checkout with a payload is refused
  // without creating a session. recordSession checks again, atomically, once Stripe answered. A
  // retry under the client's Idempotency-Key of a session recorded already passes: Stripe replays
  // that session, whose bytes are in the total, so the check would refuse it its own URL. Any other
  // keyed checkout is checked like one without a key: it skipped the check, and under a full cap
  // Stripe made a session recordSession then refused, which nobody was given.
  const stored = storedPayload(request.payload);
  try {
    if (
      stored &&
      !(await unpaidPayloadRoom(env.DB, stored.bytes)) &&
      !(clientKey && (await keyedSessionRecorded(env, reference)))
    ) {
      return { refused: "payloads_full" };
    }
  } catch (e) {
    return storageFailed(order, "checkout room read", e);
  }
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.create(
      {
        mode: "payment",
        line_items: [
          {
            quantity: 1,
            price_data: {
              currency: "usd",
              unit_amount: amountCents,
              product_data: { name: `${calls} calls of ${skill.id}`, description: skill.name },
            },
          },
        ],
        success_url: `${order.baseUrl}/checkout/success?session_id={CHECKOUT_SESSION_ID}`,
        cancel_url: `${order.baseUrl}/checkout/cancel?skill_id=${encodeURIComponent(skill.id)}`,
        metadata: { skill_id: skill.id, calls: String(calls) },
        client_reference_id: reference,
      },
      { idempotencyKey },
    );
  } catch (e) {
    const errors = await stripeErrors();
    if (e instanceof errors.StripeIdempotencyError) return { refused: "key_reused" };
    logStripeFailure(e, "createSession", {
      msg: "stripe session create failed",
      request_id: order.requestId,
      skill: skill.id,
    });
    // Stripe saves the result of every request it began under its idempotency key, a 500 included,
    // and replays it for at least 24 h: a retry with the same client key gets this same failure.
    // Only an answer below 500 (refused before it ran: rate limit, auth) was not saved; a dropped
    // connection may have been. Without a client key every try has a key of its own.
    const refusedBeforeRun =
      e instanceof errors.StripeError && e.statusCode !== undefined && e.statusCode < 500;
    return { refused: "stripe_failed", replayed: Boolean(clientKey) && !refusedBeforeRun };
  }
  // So a retry under the key still gets this session once the cap is full (see the check above).
  // Written on a failed recording too: D1 may have committed the batch before its error, and then
  // the payload counts against the cap, so without this the resend would be refused by its own
  // bytes (keyedSessionRecorded reads the row, so a recording that never ran is not taken for one).
  const rememberForRetry = async () => {
    if (clientKey && stored) {
      await afterAnswer(rememberKeyedSession(env.KV, reference, session.id, session.created));
    }
  };
  let recorded: boolean;
  try {
    recorded = await recordSession(env.DB, {
      id: session.id,
      skillId: skill.id,
      calls,
      amountCents,
      payload: request.payload,
      stored,
    });
  } catch (e) {
    // Its URL is not given out, so this session is left to expire, as one refused for room below.
    // Had D1 committed the row before its error, a retry under the same Idempotency-Key gets the
    // same session back from Stripe and finds it recorded; one without a key makes a new session,
    // and this row's payload is cleared with the unpaid ones (checkout-sessions.ts).
    await rememberForRetry();
    return storageFailed(order, "checkout session record", e, session.id);
  }
  // Concurrent checkouts filled the room since the check above. The session is left unreturned:
  // nobody holds its URL, so nobody can pay it, it costs nothing and Stripe expires it within 24 h
  // (its expired event finds no row). A retry with the same Idempotency-Key gets the same session
  // from Stripe and records it once there is room.
  if (!recorded) return { refused: "payloads_full" };
  await rememberForRetry();
  return { created: { id: session.id, url: session.url }, calls, amountCents };
}

function storageFailed(order: CheckoutOrder, what: string, e: unknown, sessionId?: string): CheckoutOutcome {
  console.error(
    JSON.stringify({
      level: "error",
      msg: `${what} failed`,
      request_id: order.requestId,
      ...(sessionId ? { session_id: sessionRef(sessionId) } : {}),
      error: String(e),
    }),
  );
  return { refused: "storage_unavailable" };
}
