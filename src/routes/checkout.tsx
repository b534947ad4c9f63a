import type { Context } from "hono";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { jsonBody, queryParams, validationResponse, zodItems } from "../http/validation";
import { CancelPage, type RevealState, SuccessPage, successRefresh } from "../pages/checkout";
import { applyRefund, closeDispute, openDispute } from "../payments/card-refunds";
import {
  failSession,
  findSession,
  firstPayloadResult,
  recordSession,
  runFirstPayload,
  type SessionRow,
  settleSession,
  takeKeyReveal,
} from "../payments/checkout-ledger";
import {
  bearerKey,
  cardKeyAuthorization,
  findKey,
  hashKey,
  keyRefusal,
  MAX_CALLS,
  packSize,
} from "../payments/credits";
import { checkRevealToken, revealToken } from "../payments/key-reveal";
import { freeQuota } from "../payments/quotas";
import { fetchSession, type RemoteSession, StripeErrors, stripeClient, webCrypto } from "../payments/stripe";
import { eventSeen, recordEvent } from "../payments/webhook-events";
import { skillById } from "../skills/registry";

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

// An Idempotency-Key as clients send it (IETF draft): printable ASCII, at most 255 characters.
const idempotencyHeader = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key must be 1 to 255 printable ASCII characters");

async function sha256Hex(text: string) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

checkoutRoutes.post("/api/cardpay/checkout", freeQuota("checkout"), jsonBody(checkoutRequest), async (c) => {
  const body = c.get("body") as z.infer<typeof checkoutRequest>;
  const rawIdem = c.req.header("idempotency-key");
  const idem =
    rawIdem === undefined ? undefined : idempotencyHeader.safeParse(rawIdem, { reportInput: true });
  if (idem && !idem.success) {
    return validationResponse(c, zodItems(idem.error, rawIdem, ["header", "idempotency-key"]));
  }
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
  // A client's Idempotency-Key makes its retries return the same session (Stripe replays the
  // create); the body's hash rides in client_reference_id, so reusing the key for a different
  // checkout changes the parameters and Stripe refuses it (409 here). Without the header each
  // request is a new checkout: nothing else identifies "the same" purchase of an anonymous buyer.
  const clientKey = idem?.data;
  const reference = clientKey
    ? `idem_${(await sha256Hex(`${clientKey}\n${JSON.stringify(body)}`)).slice(0, 48)}`
    : c.get("requestId");
  const idempotencyKey = clientKey
    ? `checkout:client:${await sha256Hex(clientKey)}`
    : `checkout:${c.get("requestId")}`;
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
    if (e instanceof StripeErrors.StripeIdempotencyError) {
      return detail(c, 409, "This Idempotency-Key was already used for a different checkout; use a new key.");
    }
    console.error(JSON.stringify({ level: "error", msg: "stripe session create failed", error: String(e) }));
    return detail(c, 502, "Stripe did not create the checkout session; try again.");
  }
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
        console.error(JSON.stringify({ level: "error", msg: "stripe retrieve failed", error: String(e) }));
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
    case "charge.refunded": {
      const charge = event.data.object;
      const pi =
        typeof charge.payment_intent === "string" ? charge.payment_intent : charge.payment_intent?.id;
      const outcome = await applyRefund(
        db,
        { payment_intent: pi, amount: charge.amount, amount_refunded: charge.amount_refunded },
        ref,
      );
      return c.json({ received: true, outcome });
    }
    case "charge.dispute.created":
    case "charge.dispute.closed": {
      const d = event.data.object;
      const pi = typeof d.payment_intent === "string" ? d.payment_intent : d.payment_intent?.id;
      const outcome =
        event.type === "charge.dispute.created"
          ? await openDispute(db, { id: d.id, payment_intent: pi }, ref)
          : await closeDispute(db, { id: d.id, status: d.status, payment_intent: pi }, ref);
      return c.json({ received: true, outcome });
    }
    default:
      await recordEvent(db, ref);
      return c.json({ received: true, ignored: event.type });
  }
});

checkoutRoutes.get("/api/credits", async (c) => {
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

export const successQuery = z.object({ session_id: z.string().min(1).max(255) });
export const cancelQuery = z.object({ skill_id: z.string().max(255).default("") });
export const revealForm = z.object({ token: z.string().min(1).max(128) });

/**
 * Stripe's view of an open session D1 has not granted yet (late webhook); read only. Ids D1 does
 * not know are never looked up here (no free Stripe calls for made-up ids): the webhook rebuilds a
 * paid session missing from D1.
 */
async function stripeView(c: Context<AppEnv>, session: SessionRow | null, sessionId: string) {
  const stripe = stripeClient(c.env);
  if (!stripe || session?.status !== "open") return undefined;
  try {
    return (await fetchSession(stripe, sessionId)) ?? undefined;
  } catch (e) {
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "stripe retrieve failed",
        session_id: sessionId,
        error: String(e),
      }),
    );
    return undefined;
  }
}

async function renderSuccess(
  c: Context<AppEnv>,
  sessionId: string,
  session: SessionRow | null,
  remote: RemoteSession | undefined,
  reveal: RevealState,
  apiKey?: string,
) {
  // Only GET pages refresh themselves (a refreshed POST would ask to resubmit the form).
  const refresh = c.req.method !== "POST" ? successRefresh(session, remote?.paid === true) : undefined;
  const left = session?.api_key_id
    ? await c.env.DB.prepare("SELECT calls_left FROM api_keys WHERE id = ?1")
        .bind(session.api_key_id)
        .first<{ calls_left: number }>()
    : null;
  const secret = c.env.STRIPE_SECRET_KEY;
  const page = (
    <SuccessPage
      sessionId={sessionId}
      session={session}
      remote={remote}
      skill={skillById(session?.skill_id ?? remote?.metadata.skill_id ?? "")}
      apiKey={apiKey}
      reveal={reveal}
      revealToken={secret ? await revealToken(secret, sessionId) : undefined}
      callsLeft={left?.calls_left}
      baseUrl={publicConfig(c.env, c.req.url).baseUrl}
    />
  );
  const known = session || remote?.paid;
  // The page may carry a secret: never cache it anywhere.
  return c.html(page, known ? 200 : 404, {
    "cache-control": "no-store",
    ...(refresh ? { refresh: String(refresh) } : {}),
  });
}

/**
 * The success page only reads: no grant, no reveal, no run (a GET or HEAD from a prefetcher or a
 * link scanner changes nothing). The key is revealed by the page's POST form below.
 */
checkoutRoutes.get("/checkout/success", queryParams(successQuery), async (c) => {
  const { session_id } = c.get("query") as z.infer<typeof successQuery>;
  const session = await findSession(c.env.DB, session_id);
  const remote = await stripeView(c, session, session_id);
  const reveal: RevealState =
    session?.api_key_reveal || (remote?.paid && !session?.api_key_id) ? "ready" : "shown";
  return renderSuccess(c, session_id, session, remote, reveal);
});

/**
 * "Reveal my key": an explicit POST with the page's token. Grants first when Stripe already says
 * paid but the webhook is late, lets the first call finish (briefly), then consumes the reveal.
 */
checkoutRoutes.post(
  "/checkout/success",
  bodyLimit({ maxSize: 4096, onError: (c) => detail(c, 413, "Form body larger than 4096 bytes") }),
  queryParams(successQuery),
  async (c) => {
    const { session_id } = c.get("query") as z.infer<typeof successQuery>;
    // Defence in depth besides the token: browsers say where a form post comes from.
    const site = c.req.header("sec-fetch-site");
    const origin = c.req.header("origin");
    const ours = [new URL(c.req.url).origin, new URL(publicConfig(c.env, c.req.url).baseUrl).origin];
    if (site === "cross-site" || (origin && origin !== "null" && !ours.includes(origin))) {
      return detail(c, 403, "The key reveal accepts only this site's own form.");
    }
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const parsed = revealForm.safeParse(form, { reportInput: true });
    if (!parsed.success) return validationResponse(c, zodItems(parsed.error, form, ["body"]));
    const secret = c.env.STRIPE_SECRET_KEY;
    const stripe = stripeClient(c.env);
    if (!secret || !stripe) return detail(c, 503, "Card payments are not configured on this deployment.");
    if (!(await checkRevealToken(secret, session_id, parsed.data.token))) {
      return detail(c, 403, "This reveal form is not valid for this checkout; reload the success page.");
    }
    let session = await findSession(c.env.DB, session_id);
    let remote: RemoteSession | undefined;
    if (!session?.api_key_id) {
      remote = await stripeView(c, session, session_id);
      if (remote?.paid) {
        await settleSession(c.env, remote);
        session = await findSession(c.env.DB, session_id);
      }
    }
    if (!session?.api_key_id) return renderSuccess(c, session_id, session, remote, "ready");
    // Wait briefly for the first call (run here if no run holds it), so the key page shows its answer.
    session = (await firstPayloadResult(c.env, session_id, 5_000)) ?? session;
    const key = await takeKeyReveal(c.env, session_id);
    return renderSuccess(c, session_id, session, undefined, key ? "just_shown" : "already_shown", key);
  },
);

checkoutRoutes.get("/checkout/cancel", queryParams(cancelQuery), (c) => {
  const { skill_id } = c.get("query") as z.infer<typeof cancelQuery>;
  return c.html(<CancelPage skill={skillById(skill_id)} skillId={skill_id} />);
});
