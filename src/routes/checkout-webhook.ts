import { type Context, Hono } from "hono";
import { stripeEventModeFits } from "../config";
import { ERROR, json, operation } from "../discovery/operation";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { webhookBindingsPresent } from "../http/bindings";
import { detail } from "../http/errors";
import { throttledLog } from "../http/log-once";
import { runLogged } from "../payments/checkout-first-call";
import { stripeClient, webCrypto } from "../payments/stripe";
import { handleStripeEvent } from "../payments/stripe-events";
import { varText } from "../var-text";

/** Stripe's signed webhook: the signature is checked here, the event acted on by payments/stripe-events.ts. */
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

/**
 * A first call an event starts runs past the answer (Stripe times out on a slow webhook): handed to
 * waitUntil and never awaited, here or without an execution context (app.fetch in tests).
 */
const firstCallPastAnswer = (c: Context<AppEnv>) => (run: Promise<void>) =>
  void afterResponse(c, runLogged(run));

/** Anyone can send a bad signature: one line a minute per isolate says the secret may be wrong. */
const signatureRefused = throttledLog(60_000);
const otherModeEvent = throttledLog(60_000);

checkoutWebhookRoutes.post(webhookOperation.route, webhookBindingsPresent, async (c) => {
  const stripe = await stripeClient(c.env);
  const secret = varText(c.env.STRIPE_WEBHOOK_SECRET);
  if (!stripe || !secret) return detail(c, 503, "Card payments are not configured on this deployment.");
  const signature = c.req.header("stripe-signature");
  if (!signature) return detail(c, 400, "Missing Stripe-Signature header");
  const raw = await c.req.text();
  let event: Awaited<ReturnType<typeof stripe.webhooks.constructEventAsync>>;
  try {
    event = await stripe.webhooks.constructEventAsync(raw, signature, secret, undefined, await webCrypto());
  } catch {
    // A wrong STRIPE_WEBHOOK_SECRET refuses every event, refunds and disputes (webhook-only)
    // included, while the Cron's sweep still grants sales: without this line nothing said so.
    // At warn: anyone can send a bad signature, and an error line would keep an alert firing.
    signatureRefused({
      level: "warn",
      msg: "stripe webhook signature invalid",
      request_id: c.get("requestId"),
    });
    return detail(c, 400, "Invalid Stripe-Signature");
  }
  // A test-mode event at a live deployment (or the reverse) is Stripe's, but not about our money:
  // acknowledged, so Stripe stops sending it, and not acted on.
  const livemode = (event as { livemode?: unknown } | null)?.livemode;
  if (!stripeEventModeFits(c.env, livemode)) {
    otherModeEvent({
      level: "warn",
      msg: "stripe webhook event of the other mode ignored",
      request_id: c.get("requestId"),
      event_id: (event as { id?: unknown }).id,
      livemode,
    });
    return c.json({ received: true, ignored: `livemode ${livemode}` }, 200);
  }
  const { status, body } = await handleStripeEvent(c.env, stripe, event, firstCallPastAnswer(c));
  return c.json(body, status);
});
