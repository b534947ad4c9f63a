import { type Context, Hono } from "hono";
import { publicConfig } from "../config";
import { ERROR, json, operation, ref, VALIDATION } from "../discovery/operation";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { bindingsPresent, dbBindingPresent } from "../http/bindings";
import { detail } from "../http/errors";
import { HOLDING_BODY_BOUNDS } from "../http/json-text";
import { validationResponse, zodItems } from "../http/validation";
import { callerNetwork } from "../net/ip-ranges";
import { createCheckout } from "../payments/checkout-create";
import {
  checkoutRequest,
  IDEMPOTENCY_KEY_PATTERN,
  idempotencyHeader,
  payloadInvalid,
  payloadTooLarge,
} from "../payments/checkout-request";
import { UNPAID_PAYLOADS_MAX_BYTES } from "../payments/checkout-sessions";
import { bearerKey, cardKeyAuthorization, findKey, hashKey, keyRefusal } from "../payments/credits";
import { freeQuota } from "../payments/quotas";
import { stripeClient } from "../payments/stripe";
import { skillById } from "../skills/registry";
import { checkoutPageRoutes } from "./checkout-pages";
import { checkoutWebhookRoutes, webhookOperation } from "./checkout-webhook";

/** Card payments: checkout, its Stripe webhook, the credit balance and the pages Stripe returns to. */
export const checkoutRoutes = new Hono<AppEnv>();

const checkoutOperation = operation({
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
      "Card payments not configured; or (reason unpaid_payloads_full, with Retry-After) unpaid checkouts hold all the first-call payloads we keep: buy without a payload, or retry later; or (reason checkout_unavailable, with Retry-After) our records did not answer: nothing was charged, send the same request again",
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
  responses: {
    "200": json("Credit balance"),
    "401": ERROR("Missing or unknown key"),
    "503": ERROR("This deployment is missing its DB storage binding"),
  },
});

export const checkoutOperations = [checkoutOperation, webhookOperation, creditsOperation];

/** When a checkout refused for UNPAID_PAYLOADS_MAX_BYTES is told to try again: room comes back as sessions are paid or expire. */
const PAYLOADS_FULL_RETRY_AFTER_S = 900;

/** When a checkout D1 failed (storage_unavailable) is told to try again. */
const CHECKOUT_RETRY_AFTER_S = 10;

/**
 * The 503 of a checkout whose payload would take unpaid sessions past UNPAID_PAYLOADS_MAX_BYTES
 * (payments/checkout-sessions.ts): the same checkout without a payload is sold.
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

// bindingsPresent first: the keyed session is kept in KV (checkout-create.ts), the session row in D1.
checkoutRoutes.post(
  checkoutOperation.route,
  bindingsPresent,
  freeQuota("checkout"),
  checkoutOperation.validate,
  async (c) => {
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
    const outcome = await createCheckout(
      c.env,
      stripe,
      {
        request: body,
        skill,
        clientKey: idem?.data,
        network: callerNetwork(c.req.header("cf-connecting-ip")),
        requestId: c.get("requestId"),
        baseUrl: cfg.baseUrl,
      },
      (work) => afterResponse(c, work),
    );
    if ("created" in outcome) {
      const { created, calls, amountCents } = outcome;
      return c.json({
        session_id: created.id,
        checkout_url: created.url,
        skill_id: skill.id,
        calls,
        amount_usd: amountCents / 100,
      });
    }
    if (outcome.refused === "payloads_full") return payloadsFull(c);
    if (outcome.refused === "storage_unavailable") {
      return detail(
        c,
        503,
        "Checkouts are temporarily unavailable: our records did not answer. Nothing was charged; send the same request again in a few seconds (with the same Idempotency-Key, if you sent one).",
        { reason: "checkout_unavailable" },
        { "Retry-After": String(CHECKOUT_RETRY_AFTER_S) },
      );
    }
    if (outcome.refused === "key_reused") {
      return detail(c, 409, "This Idempotency-Key was already used for a different checkout; use a new key.");
    }
    if (outcome.replayed) {
      return detail(
        c,
        502,
        "Stripe did not create the checkout session; retry with a new Idempotency-Key (Stripe answers this key with the same failure for at least 24 hours).",
      );
    }
    return detail(c, 502, "Stripe did not create the checkout session; try again.");
  },
);

checkoutRoutes.get(creditsOperation.route, dbBindingPresent, async (c) => {
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
