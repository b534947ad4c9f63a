import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import { sha256Hex } from "../digest";
import { ERROR, json, operation, ref, VALIDATION } from "../discovery/operation";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { detail } from "../http/errors";
import { HOLDING_BODY_BOUNDS } from "../http/json-text";
import { validationResponse, zodItems } from "../http/validation";
import { callerNetwork } from "../net/ip-ranges";
import {
  keyedSessionRecorded,
  recordSession,
  rememberKeyedSession,
  storedPayload,
  UNPAID_PAYLOADS_MAX_BYTES,
  unpaidPayloadRoom,
} from "../payments/checkout-ledger";
import {
  checkoutRequest,
  IDEMPOTENCY_KEY_PATTERN,
  idempotencyHeader,
  payloadInvalid,
  payloadTooLarge,
} from "../payments/checkout-request";
import { bearerKey, cardKeyAuthorization, findKey, hashKey, keyRefusal, packSize } from "../payments/credits";
import { freeQuota } from "../payments/quotas";
import { logStripeFailure, stripeClient, stripeErrors } from "../payments/stripe";
import { skillById } from "../skills/registry";
import { checkoutPageRoutes } from "./checkout-pages";
import { checkoutWebhookRoutes, webhookOperation } from "./checkout-webhook";

/** Card payments: checkout, its Stripe webhook, the credit balance and the pages Stripe returns to. */
export const checkoutRoutes = new Hono<AppEnv>();

const createCheckout = operation({
  method: "post",
  path: "/api/cardpay/checkout",
  operationId: "create_card_checkout",
  summary: "Buy a pack of calls of one skill by card (Stripe Checkout)",
  tags: ["checkout"],
  // Read by the handler itself (its 422 is on ["header","idempotency-key"]); the pattern is the one
  // it checks, so the document cannot drift from it.
  headers: [
    {
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "A random UUID: a retry with the same key and body from the same network returns the same session; the same key with another body is a 409. Without it every request is a new checkout.",
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    },
  ],
  body: checkoutRequest,
  // The first call's payload reaches json_sort or json_flatten as written, as over HTTP and MCP,
  // and may be as deep and hold as many containers as the skill's own body (one level down here).
  exactIntegers: true,
  bodyBounds: HOLDING_BODY_BOUNDS,
  example: { skill_id: "json_sort" },
  responses: {
    "200": json("Checkout created", ref("CheckoutCreated")),
    "404": ERROR("Unknown skill_id"),
    "409": ERROR("This Idempotency-Key was already used for a different checkout; use a new key"),
    "422": VALIDATION,
    "429": ERROR("Rate limited (Retry-After): too many checkouts from your IP address"),
    "502": ERROR(
      "Stripe did not create the checkout session: retry with a new Idempotency-Key (Stripe replays a failure for the same key for at least 24 hours), or, without one, try again",
    ),
    "503": ERROR(
      "Card payments not configured, or (reason unpaid_payloads_full, with Retry-After) unpaid checkouts hold all the first-call payloads we keep: buy without a payload, or retry later",
    ),
  },
});

const creditsOperation = operation({
  method: "get",
  path: "/api/credits",
  operationId: "get_credits",
  summary: "Calls left on a card-credit key",
  tags: ["checkout"],
  security: [{ CardCredits: [] }],
  responses: { "200": json("Credit balance"), "401": ERROR("Missing or unknown key") },
});

export const checkoutOperations = [createCheckout, webhookOperation, creditsOperation];

/** When a checkout refused for UNPAID_PAYLOADS_MAX_BYTES is told to try again: room comes back as sessions are paid or expire. */
const PAYLOADS_FULL_RETRY_AFTER_S = 900;

/**
 * The 503 of a checkout whose payload would take unpaid sessions past UNPAID_PAYLOADS_MAX_BYTES
 * (payments/checkout-ledger.ts): the same checkout without a payload is sold.
 */
function payloadsFull(c: Context<AppEnv>) {
  return detail(
    c,
    503,
    `Checkouts not yet paid hold all the first-call payloads we keep (${UNPAID_PAYLOADS_MAX_BYTES} bytes). Buy without a payload and make the first call with the key, or retry later. Nothing was charged.`,
    { reason: "unpaid_payloads_full" },
    { "Retry-After": String(PAYLOADS_FULL_RETRY_AFTER_S) },
  );
}

checkoutRoutes.post(createCheckout.route, freeQuota("checkout"), createCheckout.validate, async (c) => {
  const body = c.req.valid("json");
  const rawIdem = c.req.header("idempotency-key");
  const idem =
    rawIdem === undefined ? undefined : idempotencyHeader.safeParse(rawIdem, { reportInput: true });
  if (idem && !idem.success) {
    return validationResponse(c, zodItems(idem.error, rawIdem, ["header", "idempotency-key"]));
  }
  // Before Stripe: a payload the session's D1 row cannot hold failed only after the session existed.
  const tooLarge = payloadTooLarge(body.payload);
  if (tooLarge) return validationResponse(c, [tooLarge]);
  const skill = skillById(body.skill_id);
  if (!skill) return detail(c, 404, `Unknown skill_id "${body.skill_id}"; see /api/catalog.`);
  // Before Stripe too: a payload the skill refuses was a 422 only on the success page, once paid.
  const invalid = payloadInvalid(skill, body.payload);
  if (invalid) return validationResponse(c, invalid);
  const cfg = publicConfig(c.env, c.req.url);
  const stripe = await stripeClient(c.env);
  if (!cfg.cardpayEnabled || !stripe) {
    return detail(
      c,
      503,
      "Card payments are not configured on this deployment; pay per call with x402 instead.",
    );
  }
  const calls = packSize(skill.price_atomic, body.quantity);
  const amountCents = Number((BigInt(calls) * skill.price_atomic) / 10_000n);
  // A client's Idempotency-Key makes its retries return the same session (Stripe replays the
  // create); the body's hash rides in client_reference_id, so reusing the key for a different
  // checkout changes the parameters and Stripe refuses it (409 here). Without the header each
  // request is a new checkout: nothing else identifies "the same" purchase of an anonymous buyer.
  // The key is scoped to the caller's network: the session id is the capability that reveals the
  // key, and unscoped, two buyers who picked the same key ("checkout-1", a hash of the body) got
  // one session, so the second could reveal the first's paid key. A retry from another network
  // makes a new, unpaid session instead, which costs nobody anything.
  const clientKey = idem?.data;
  const scope = clientKey ? `${callerNetwork(c.req.header("cf-connecting-ip"))}\n${clientKey}` : undefined;
  const reference = scope
    ? `idem_${(await sha256Hex(`${scope}\n${JSON.stringify(body)}`)).slice(0, 48)}`
    : c.get("requestId");
  const idempotencyKey = scope
    ? `checkout:client:${await sha256Hex(scope)}`
    : `checkout:${c.get("requestId")}`;
  // Before Stripe: past the cap on what unpaid sessions hold, a checkout with a payload is refused
  // without creating a session. recordSession checks again, atomically, once Stripe answered. A
  // retry under the client's Idempotency-Key of a session recorded already passes: Stripe replays
  // that session, whose bytes are in the sum, so the check would refuse it its own URL. Any other
  // keyed checkout is checked like one without a key: it skipped the check, and under a full cap
  // Stripe made a session recordSession then refused, which nobody was given.
  const stored = storedPayload(body.payload);
  if (
    stored &&
    !(await unpaidPayloadRoom(c.env.DB, stored.bytes)) &&
    !(clientKey && (await keyedSessionRecorded(c.env, reference)))
  ) {
    return payloadsFull(c);
  }
  let session: Awaited<ReturnType<typeof stripe.checkout.sessions.create>>;
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
        success_url: `${cfg.baseUrl}/checkout/success?session_id={CHECKOUT_SESSION_ID}`,
        cancel_url: `${cfg.baseUrl}/checkout/cancel?skill_id=${encodeURIComponent(skill.id)}`,
        metadata: { skill_id: skill.id, calls: String(calls) },
        client_reference_id: reference,
      },
      { idempotencyKey },
    );
  } catch (e) {
    const errors = await stripeErrors();
    if (e instanceof errors.StripeIdempotencyError) {
      return detail(c, 409, "This Idempotency-Key was already used for a different checkout; use a new key.");
    }
    logStripeFailure(e, "createSession", { msg: "stripe session create failed" });
    // Stripe saves the result of every request it began under its idempotency key, a 500 included,
    // and replays it for at least 24 h: a retry with the same client key gets this same failure.
    // Only an answer below 500 (refused before it ran: rate limit, auth) was not saved; a dropped
    // connection may have been. Without a client key every try has a key of its own.
    const refusedBeforeRun =
      e instanceof errors.StripeError && e.statusCode !== undefined && e.statusCode < 500;
    if (clientKey && !refusedBeforeRun) {
      return detail(
        c,
        502,
        "Stripe did not create the checkout session; retry with a new Idempotency-Key (Stripe answers this key with the same failure for at least 24 hours).",
      );
    }
    return detail(c, 502, "Stripe did not create the checkout session; try again.");
  }
  const recorded = await recordSession(c.env.DB, {
    id: session.id,
    skillId: skill.id,
    calls,
    amountCents,
    payload: body.payload,
    stored,
  });
  // Concurrent checkouts filled the room since the check above. The session is left unreturned:
  // nobody holds its URL, so nobody can pay it, it costs nothing and Stripe expires it within 24 h
  // (its expired event finds no row). A retry with the same Idempotency-Key gets the same session
  // from Stripe and records it once there is room.
  if (!recorded) return payloadsFull(c);
  // So a retry under the key still gets this session once the cap is full (see the check above).
  if (clientKey && stored) {
    await afterResponse(c, rememberKeyedSession(c.env.KV, reference, session.id, session.created));
  }
  return c.json({
    session_id: session.id,
    checkout_url: session.url,
    skill_id: skill.id,
    calls,
    amount_usd: amountCents / 100,
  });
});

checkoutRoutes.get(creditsOperation.route, async (c) => {
  // A key's standing, whichever header carried the key (X-API-Key is not one shared caches know
  // to keep private): no cache keeps it for another client.
  c.header("Cache-Control", "private, no-store");
  const key = bearerKey(cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key")));
  const row = key ? await findKey(c.env.DB, await hashKey(key)) : null;
  if (!row) {
    return detail(
      c,
      401,
      key ? "Unknown card-credit key" : "Send Authorization: Bearer mk_...",
      {},
      { "WWW-Authenticate": "Bearer" },
    );
  }
  const refused = keyRefusal(row);
  return c.json({
    skill_id: row.skill_id,
    calls_total: row.calls_total,
    calls_left: row.calls_left,
    status: row.dispute_status === "open" ? "frozen" : row.dispute_status === "lost" ? "revoked" : "active",
    ...(refused ? { note: refused } : {}),
    created_at: new Date(row.created_at).toISOString(),
  });
});

checkoutRoutes.route("/", checkoutWebhookRoutes);
checkoutRoutes.route("/", checkoutPageRoutes);
