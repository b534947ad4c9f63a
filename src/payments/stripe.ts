import type Stripe from "stripe";
import { stripeSetupProblem } from "../config";
import type { Bindings } from "../env";
import { logOncePerValue } from "../http/log-once";
import { varText } from "../var-text";

/**
 * Stripe's library (~250 KiB of resource classes) is imported by the first card-payment request
 * of an isolate, not at start-up.
 */
const stripeLibrary = async () => (await import("stripe")).default;

/** Clients built so far in this isolate, by key, API base and network options. */
const cached = new Map<string, Stripe>();

/**
 * How a client's requests wait on Stripe: by default 15 s a request and two retries, so a request
 * a buyer waits on outlasts a brief blip. A caller that tries again on its own later (the Cron's
 * sweep) asks for less.
 */
export interface StripeNetwork {
  maxNetworkRetries: number;
  timeoutMs: number;
}
const BUYER_WAITING: StripeNetwork = { maxNetworkRetries: 2, timeoutMs: 15_000 };

/**
 * Stripe's official client on the fetch transport and SubtleCrypto (no Node http on Workers),
 * built once per isolate (and per `network`). STRIPE_API_BASE points it at the local emulator in
 * tests and `npm start`. None for a key of the other mode than STRIPE_MODE (config.ts): every card
 * route then answers as unconfigured (503), and the Cron's sweep skips.
 */
export async function stripeClient(
  env: Bindings,
  network: StripeNetwork = BUYER_WAITING,
): Promise<Stripe | undefined> {
  const secret = varText(env.STRIPE_SECRET_KEY);
  if (!secret) return undefined;
  const problem = stripeSetupProblem(env);
  if (problem) {
    // Each line a literal of its own: test/scripts/log-lines-documented.test.ts reads their msgs.
    logOncePerValue(
      "STRIPE_MODE",
      `${env.STRIPE_MODE}|${secret}|${env.STRIPE_API_BASE ?? ""}`,
      problem.kind === "api base"
        ? { level: "error", msg: "stripe api base refused: card payments are off", error: problem.error }
        : { level: "error", msg: "stripe key mode mismatch: card payments are off", error: problem.error },
    );
    return undefined;
  }
  // Trimmed as stripeKeyProblem read it: the origin it approved is the one the key goes to.
  const apiBase = varText(env.STRIPE_API_BASE).trim();
  const base = apiBase ? new URL(apiBase) : undefined;
  const key = `${secret}|${apiBase}|${network.maxNetworkRetries}|${network.timeoutMs}`;
  const known = cached.get(key);
  if (known) return known;
  const Stripe = await stripeLibrary();
  const client = new Stripe(secret, {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: network.maxNetworkRetries,
    timeout: network.timeoutMs,
    ...(base
      ? {
          host: base.hostname,
          port: Number(base.port || (base.protocol === "https:" ? 443 : 80)),
          protocol: base.protocol.replace(":", "") as "http" | "https",
        }
      : {}),
  });
  cached.set(key, client);
  return client;
}

let subtleProvider: ReturnType<typeof Stripe.createSubtleCryptoProvider> | undefined;
/** SubtleCrypto for webhook signatures (no Node crypto on Workers), made once per isolate. */
export async function webCrypto() {
  subtleProvider ??= (await stripeLibrary()).createSubtleCryptoProvider();
  return subtleProvider;
}

/** What the grant rule reads of a Checkout Session, as Stripe reports it now. */
export interface RemoteSession {
  id: string;
  /** "open", "complete" or "expired". */
  status: string | null;
  paid: boolean;
  paymentIntent: string | null;
  amountCents: number | null;
  metadata: Record<string, string>;
}

/**
 * A dispute's status as Stripe has it now (`needs_response`, `won`, `lost`, `warning_closed`, …);
 * null when Stripe does not know the id; throws when Stripe could not be asked, or refused our
 * key (a restricted key without Disputes: Read: logStripeFailure names it). Webhooks may arrive in
 * any order: the current state decides, not the event.
 */
export async function fetchDisputeStatus(stripe: Stripe, id: string): Promise<string | null> {
  try {
    return (await stripe.disputes.retrieve(id)).status;
  } catch (e) {
    if (e instanceof (await stripeLibrary()).errors.StripeInvalidRequestError && e.statusCode === 404)
      return null;
    throw e;
  }
}

/**
 * Stripe's current view of a session: the only thing a grant is decided on (an event body may be
 * stale or arrive out of order). `null` when Stripe does not know the id; throws when Stripe could
 * not be asked (the caller answers 5xx so Stripe redelivers).
 */
export async function fetchSession(stripe: Stripe, id: string): Promise<RemoteSession | null> {
  try {
    const s = await stripe.checkout.sessions.retrieve(id);
    return {
      id: s.id,
      status: s.status,
      paid: s.status === "complete" && s.payment_status === "paid",
      paymentIntent: typeof s.payment_intent === "string" ? s.payment_intent : (s.payment_intent?.id ?? null),
      amountCents: s.amount_total,
      metadata: s.metadata ?? {},
    };
  } catch (e) {
    if (e instanceof (await stripeLibrary()).errors.StripeInvalidRequestError && e.statusCode === 404)
      return null;
    throw e;
  }
}

/**
 * What Stripe has refunded of a payment now: the sum of its refunds that did not fail and were not
 * canceled (a failed refund gave the buyer nothing back), and their currency, the charge's (null
 * when the payment has no refunds). Throws when Stripe could not be asked.
 */
export async function refundedTotal(
  stripe: Stripe,
  paymentIntent: string,
): Promise<{ refunded: number; currency: string | null }> {
  let refunded = 0;
  let currency: string | null = null;
  for await (const refund of stripe.refunds.list({ payment_intent: paymentIntent, limit: 100 })) {
    currency ??= refund.currency;
    if (refund.status !== "failed" && refund.status !== "canceled") refunded += refund.amount;
  }
  return { refunded, currency };
}

/**
 * What the payment charged in `currency` (its refunds' currency), read from the Checkout Session it
 * paid as Stripe reports it now (Checkout Sessions: Read, which the Worker already holds; the
 * PaymentIntent would need one more permission). With Adaptive Pricing the buyer may pay in another
 * currency than the session's usd: from API version 2025-03-31 the session names that amount in
 * `presentment_details`; before, its own `currency` and `amount_total` were the buyer's. Null when
 * no session of the payment states an amount in that currency (or, with `currency` null, none at
 * all). Throws when Stripe could not be asked.
 */
export async function chargedAmount(
  stripe: Stripe,
  paymentIntent: string,
  currency: string | null,
): Promise<number | null> {
  const { data } = await stripe.checkout.sessions.list({ payment_intent: paymentIntent, limit: 1 });
  const s = data[0];
  if (!s) return null;
  if (currency === null || s.currency === currency) return s.amount_total;
  const shown = s.presentment_details;
  return shown?.presentment_currency === currency ? shown.presentment_amount : null;
}

export const stripeErrors = async () => (await stripeLibrary()).errors;

/**
 * What a restricted key (`rk_…`) must be granted for each Stripe call the Worker makes (README and
 * docs/CARD_PAYMENTS.md list the same): Write includes Read. Nothing else is called; refunds are
 * made in the dashboard (the Worker only lists them).
 */
export const STRIPE_PERMISSIONS = {
  createSession: "Checkout Sessions: Write",
  readSession: "Checkout Sessions: Read",
  readDispute: "Disputes: Read",
  readRefunds: "Refunds: Read",
} as const;

/**
 * Logs a failed Stripe call. A 401 or 403 is not an outage Stripe's redelivery will outlast: the
 * key is wrong or revoked, or a restricted key lacks the call's permission (one without Disputes:
 * Read made every `charge.dispute.created` a 502 until Stripe gave up on it, so no disputed key was
 * ever frozen). Those are logged as a configuration error naming the permission; the caller still
 * answers as for any failure (the webhook 502, so Stripe redelivers once the key is fixed).
 */
export function logStripeFailure(
  e: unknown,
  call: keyof typeof STRIPE_PERMISSIONS,
  log: { msg: string; level?: "error" | "warn"; [field: string]: unknown },
) {
  const type = (e as { type?: unknown } | null)?.type;
  const fix =
    type === "StripePermissionError"
      ? `STRIPE_SECRET_KEY is a restricted key without ${STRIPE_PERMISSIONS[call]}; grant it (the Worker needs ${Object.values(STRIPE_PERMISSIONS).join(", ")})`
      : type === "StripeAuthenticationError"
        ? "Stripe does not accept STRIPE_SECRET_KEY (wrong, rolled or expired): set a valid secret or restricted key of this account"
        : undefined;
  const { level = "error", ...fields } = log;
  console.error(
    JSON.stringify(
      fix
        ? { level: "error", ...fields, msg: `stripe configuration error: ${fix}`, call, error: String(e) }
        : { level, ...fields, error: String(e) },
    ),
  );
}
