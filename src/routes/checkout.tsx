import { Hono } from "hono";
import { z } from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { jsonBody, queryParams } from "../http/validation";
import { CancelPage, SuccessPage } from "../pages/checkout";
import {
  expireSession,
  findSession,
  grantCredits,
  recordEvent,
  recordSession,
  takeKeyReveal,
} from "../payments/checkout-ledger";
import { bearerKey, findKey, hashKey, MAX_CALLS, packSize } from "../payments/credits";
import { freeQuota } from "../payments/quotas";
import { stripeClient, webCrypto } from "../payments/stripe";
import { skillById } from "../skills/registry";
import { pageSecurity } from "./pages";

export const checkoutRoutes = new Hono<AppEnv>();

export const checkoutRequest = z.object({
  skill_id: z.string().min(1).max(64).meta({ description: "Skill id, e.g. json_sort." }),
  payload: z
    .looseObject({})
    .optional()
    .meta({ description: "Body of your first call; it runs once when the payment completes." }),
  quantity: z
    .int()
    .min(1)
    .max(MAX_CALLS)
    .optional()
    .meta({ description: "Calls to buy; raised to the smallest pack that reaches the $0.50 card minimum." }),
});

checkoutRoutes.post("/api/cardpay/checkout", freeQuota("checkout"), jsonBody(checkoutRequest), async (c) => {
  const body = c.get("body") as z.infer<typeof checkoutRequest>;
  const skill = skillById(body.skill_id);
  if (!skill) return detail(c, 404, `Unknown skill_id "${body.skill_id}"; see /api/catalog.`);
  const cfg = publicConfig(c.env, c.req.url);
  const stripe = stripeClient(c.env);
  if (!cfg.cardpayEnabled || !stripe) {
    return detail(
      c,
      503,
      "Card payments are not configured on this deployment; pay per call with x402 instead.",
    );
  }
  const calls = packSize(skill.price_atomic, body.quantity);
  const amountCents = Number((BigInt(calls) * skill.price_atomic) / 10_000n);
  const session = await stripe.checkout.sessions.create(
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
      client_reference_id: c.get("requestId"),
    },
    { idempotencyKey: `checkout:${c.get("requestId")}` },
  );
  await recordSession(c.env.DB, {
    id: session.id,
    skillId: skill.id,
    calls,
    amountCents,
    payload: body.payload,
  });
  return c.json({
    session_id: session.id,
    checkout_url: session.url,
    skill_id: skill.id,
    calls,
    amount_usd: amountCents / 100,
  });
});

checkoutRoutes.post("/api/cardpay/webhook", async (c) => {
  const stripe = stripeClient(c.env);
  const secret = c.env.STRIPE_WEBHOOK_SECRET;
  if (!stripe || !secret) return detail(c, 503, "Card payments are not configured on this deployment.");
  const signature = c.req.header("stripe-signature");
  if (!signature) return detail(c, 400, "Missing Stripe-Signature header");
  const raw = await c.req.text();
  let event: Awaited<ReturnType<typeof stripe.webhooks.constructEventAsync>>;
  try {
    event = await stripe.webhooks.constructEventAsync(raw, signature, secret, undefined, webCrypto);
  } catch {
    return detail(c, 400, "Invalid Stripe-Signature");
  }
  const ref = { id: event.id, type: event.type };
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = event.data.object;
      if (session.payment_status !== "paid") {
        // Delayed methods complete unpaid first; async_payment_succeeded grants later.
        return c.json({ received: true, granted: false, reason: "not paid yet" });
      }
      const outcome = await grantCredits(c.env, session.id, ref);
      return c.json({ received: true, outcome });
    }
    case "checkout.session.expired": {
      if (await recordEvent(c.env.DB, ref)) await expireSession(c.env.DB, event.data.object.id);
      return c.json({ received: true });
    }
    default:
      await recordEvent(c.env.DB, ref);
      return c.json({ received: true, ignored: event.type });
  }
});

checkoutRoutes.get("/api/credits", async (c) => {
  const key = bearerKey(c.req.header("authorization"));
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
  return c.json({
    skill_id: row.skill_id,
    calls_total: row.calls_total,
    calls_left: row.calls_left,
    created_at: new Date(row.created_at).toISOString(),
  });
});

export const successQuery = z.object({ session_id: z.string().min(1).max(255) });
export const cancelQuery = z.object({ skill_id: z.string().max(255).default("") });

checkoutRoutes.use("/checkout/*", pageSecurity);
checkoutRoutes.get("/checkout/success", queryParams(successQuery), async (c) => {
  const { session_id } = c.get("query") as z.infer<typeof successQuery>;
  let session = await findSession(c.env.DB, session_id);
  // The webhook may not have arrived yet: ask Stripe, and grant here if it already says paid.
  const stripe = stripeClient(c.env);
  if (session?.status === "open" && stripe) {
    try {
      const remote = await stripe.checkout.sessions.retrieve(session_id);
      if (remote.status === "complete" && remote.payment_status === "paid") {
        await grantCredits(c.env, session_id);
        session = await findSession(c.env.DB, session_id);
      } else if (remote.status === "expired") {
        await expireSession(c.env.DB, session_id);
        session = await findSession(c.env.DB, session_id);
      }
    } catch (e) {
      console.error(
        JSON.stringify({ level: "warn", msg: "stripe retrieve failed", session_id, error: String(e) }),
      );
    }
  }
  const key = session?.status === "complete" ? await takeKeyReveal(c.env, session_id) : undefined;
  const left = session?.api_key_id
    ? await c.env.DB.prepare("SELECT calls_left FROM api_keys WHERE id = ?1")
        .bind(session.api_key_id)
        .first<{ calls_left: number }>()
    : null;
  const page = (
    <SuccessPage
      sessionId={session_id}
      session={session}
      skill={session ? skillById(session.skill_id) : undefined}
      apiKey={key}
      callsLeft={left?.calls_left}
      baseUrl={publicConfig(c.env, c.req.url).baseUrl}
    />
  );
  // The page may carry a secret: never cache it anywhere.
  return c.html(page, session ? 200 : 404, { "cache-control": "no-store" });
});

checkoutRoutes.get("/checkout/cancel", queryParams(cancelQuery), (c) => {
  const { skill_id } = c.get("query") as z.infer<typeof cancelQuery>;
  return c.html(<CancelPage skill={skillById(skill_id)} skillId={skill_id} />);
});
