import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import Stripe from "stripe";
import { expect } from "vitest";
import { createApp } from "../../src/app";
import worker from "../../src/index";
import { call, ORIGIN, postJson } from "../helpers";

/** Card-checkout test helpers: real sessions on the Stripe emulator, events signed like Stripe's. */
const cryptoProvider = Stripe.createSubtleCryptoProvider();
export const SECRET = env.STRIPE_WEBHOOK_SECRET as string;
export const EMULATOR = env.STRIPE_API_BASE as string;
export const stripe = new Stripe(env.STRIPE_SECRET_KEY as string, {
  httpClient: Stripe.createFetchHttpClient(),
  host: "127.0.0.1",
  port: Number(new URL(EMULATOR).port),
  protocol: "http",
});

export async function signed(event: unknown, secret = SECRET) {
  const payload = JSON.stringify(event, null, 2);
  const header = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret, cryptoProvider });
  return { payload, header };
}

/**
 * The tests' Worker runs in free beta, where no call takes a credit, a card pack's first call
 * included. cardEnv is a deployment that sells (by card only), where each call takes one.
 */
export const cardEnv = { ...env, FREE_BETA: "false", X402_ENABLED: "false" };

/**
 * Both, for tests of what a first call spends: the credits a first call that succeeds takes there,
 * and what the success page then says of it.
 */
export const FIRST_CALL_COSTS = [
  {
    mode: "payments on",
    bindings: cardEnv,
    spent: 1,
    ran: "Ran with the payload you sent (one credit spent).",
  },
  {
    mode: "free beta",
    bindings: env,
    spent: 0,
    ran: "Ran with the payload you sent (free during the beta: no credit spent).",
  },
];

/**
 * A request to the Worker's entry point with `bindings`, and the wait for what it hands to
 * waitUntil (the first call a webhook or Reveal POST starts after its answer).
 */
export async function callIn(bindings: object, path: string, init?: RequestInit) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`${ORIGIN}${path}`, init), bindings as typeof env, ctx);
  return { res, after: () => waitOnExecutionContext(ctx) };
}

/** As callIn, its work after the answer done when it returns (the answer read first). */
async function settledIn(bindings: object, path: string, init?: RequestInit) {
  const { res, after } = await callIn(bindings, path, init);
  const body = await res.arrayBuffer();
  await after();
  return new Response(body, res);
}

/**
 * A signed event to the webhook; with `bindings`, through the entry point with those, its first
 * call (run after the answer) finished when it returns.
 */
export const deliver = async (event: unknown, secret?: string, bindings?: object) => {
  const { payload, header } = await signed(event, secret);
  const init = { method: "POST", headers: { "stripe-signature": header }, body: payload };
  return bindings ? settledIn(bindings, "/api/cardpay/webhook", init) : call("/api/cardpay/webhook", init);
};

export const newEventId = () => `evt_${crypto.randomUUID().replaceAll("-", "")}`;

export function eventOf(type: string, object: unknown, id = newEventId()) {
  return { id, object: "event", type, api_version: Stripe.API_VERSION, data: { object } };
}

/** A Checkout Session created through the app (so D1 and the emulator both hold it). */
export async function createCheckout(skill_id = "sha256", quantity?: number, payload?: unknown) {
  const res = await postJson("/api/cardpay/checkout", { skill_id, quantity, payload });
  if (res.status !== 200) throw new Error(`checkout ${res.status}: ${await res.text()}`);
  return (await res.json<{ session_id: string }>()).session_id;
}

/**
 * Submits the emulator's hosted page, as the buyer's Pay click does: paid, a delayed debit that
 * fails (`async_failed`) or clears when the test control says so (`async_succeeded`), with the
 * page's other fields in `fields` (e.g. Adaptive Pricing's presentment currency).
 */
export async function pay(
  sessionId: string,
  outcome: "paid" | "async_failed" | "async_succeeded" = "paid",
  fields: Record<string, string> = {},
) {
  const res = await fetch(`${EMULATOR}/pay/${sessionId}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email: "t@example.com", outcome, ...fields }).toString(),
    redirect: "manual",
  });
  if (res.status !== 303) throw new Error(`pay ${res.status}`);
  await res.arrayBuffer();
}

/** A session created through the app and (by default) paid on the emulator. */
export async function seedSession(skill = "sha256", calls = 170, payload: unknown = undefined, paid = true) {
  const id = await createCheckout(skill, calls, payload ?? undefined);
  if (paid) await pay(id);
  return id;
}

export const remote = (id: string) => stripe.checkout.sessions.retrieve(id);

/** The event Stripe sends for the session as it stands now. */
export async function sessionEvent(type: string, sessionId: string, id?: string) {
  return eventOf(type, await remote(sessionId), id);
}

/** Events the emulator generated (unit tests have no webhook target, so they deliver them). */
export async function emulatorEvents(type: string) {
  const res = await fetch(`${EMULATOR}/_emulator/events?type=${encodeURIComponent(type)}`);
  return (
    await res.json<{ data: { id: string; type: string; data: { object: Record<string, unknown> } }[] }>()
  ).data;
}

export async function emulatorPost(path: string, form: Record<string, string>) {
  const res = await fetch(`${EMULATOR}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${env.STRIPE_SECRET_KEY}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams(form).toString(),
  });
  const body = await res.json<Record<string, unknown>>();
  if (res.status !== 200) throw new Error(`${path} ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

export const keysFor = (sessionId: string) =>
  env.DB.prepare("SELECT calls_left, calls_total FROM api_keys WHERE session_id = ?1")
    .bind(sessionId)
    .all<{ calls_left: number; calls_total: number }>();

export const sessionRow = (id: string) =>
  env.DB.prepare("SELECT * FROM checkout_sessions WHERE id = ?1").bind(id).first<Record<string, unknown>>();

/** Polls until the first-call answer (run after the webhook's response) is stored. */
export async function firstCallResult(id: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await sessionRow(id);
    if (row?.payload_result)
      return JSON.parse(row.payload_result as string) as { status: number; body: unknown };
    if (Date.now() > deadline) throw new Error(`no first-call result for ${id}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The reveal form's token as the success page shows it. */
export async function revealTokenFromPage(id: string) {
  const html = await (await call(`/checkout/success?session_id=${id}`)).text();
  return /name="token" value="([A-Za-z0-9_-]+)"/.exec(html)?.[1];
}

/** The Reveal POST; with `bindings`, as deliver sends it (the first call it starts finished). */
export const revealPost = (
  id: string,
  token: string,
  headers: Record<string, string> = {},
  bindings?: object,
) => {
  const path = `/checkout/success?session_id=${encodeURIComponent(id)}`;
  const init = {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ token }).toString(),
  };
  return bindings ? settledIn(bindings, path, init) : call(path, init);
};

/** The success page's GET as a deployment with `bindings` shows it (FREE_BETA changes its words). */
export const successPage = async (id: string, bindings: object = env) =>
  (await settledIn(bindings, `/checkout/success?session_id=${encodeURIComponent(id)}`)).text();

export const keyIn = (html: string) => /<code id="api-key">(mk_[A-Za-z0-9_-]+)<\/code>/.exec(html)?.[1];

/** The webhook's outcome for an event it accepted (200). */
export const outcomeOf = async (res: Response) => {
  expect(res.status).toBe(200);
  return (await res.json<{ outcome: string }>()).outcome;
};

/** Grants a paid session through the webhook; returns its PaymentIntent. */
export async function grant(id: string) {
  expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
    "granted",
  );
  return (await remote(id)).payment_intent as string;
}

/** A granted pack of 170 sha256 calls for $0.51, and its PaymentIntent. */
export async function granted() {
  const id = await seedSession("sha256", 170);
  return { id, pi: await grant(id) };
}

/** What a card key holds: calls left, calls taken back by refunds, and spent calls still owed. */
export const keyState = (id: string) =>
  env.DB.prepare("SELECT calls_left, calls_revoked, revoke_debt FROM api_keys WHERE session_id = ?1")
    .bind(id)
    .first<{ calls_left: number; calls_revoked: number; revoke_debt: number }>();

/** Makes a refund of `amount` cents (all that is left without it); returns it and the charge.refunded Stripe sent. */
export async function makeRefund(pi: string, amount?: string) {
  const made = await emulatorPost("/v1/refunds", { payment_intent: pi, ...(amount ? { amount } : {}) });
  const event = (await emulatorEvents("charge.refunded"))
    .filter((e) => e.data.object.payment_intent === pi)
    .at(-1);
  return { id: made.id as string, event };
}

/** Fails a refund on the emulator (the card was closed); returns the charge.refund.updated Stripe sent. */
export async function failRefund(refundId: string) {
  await emulatorPost(`/_emulator/refunds/${refundId}/fail`, {});
  return (await emulatorEvents("charge.refund.updated")).find((e) => e.data.object.id === refundId);
}

/** Delivers a signed event to a Worker whose Stripe API cannot be reached (a closed port). */
export async function deliverWithStripeDown(event: unknown) {
  const { payload, header } = await signed(event);
  return createApp().fetch(
    new Request("https://skills.test/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    }),
    { ...env, STRIPE_API_BASE: "http://127.0.0.1:9" },
  );
}

/**
 * Sends a checkout (its body as text) and lists the requests it sent to Stripe (the emulator).
 * payments/stripe.ts keeps one client per STRIPE_API_BASE and a client keeps the fetch it was
 * built with, so a spy on globalThis.fetch never saw the shared client's requests; a base of its
 * own (a fragment the client ignores) makes this checkout build its client with the recording fetch.
 */
export async function checkoutSeeingStripe(body: string, headers: Record<string, string> = {}) {
  const real = globalThis.fetch;
  const sent: string[] = [];
  globalThis.fetch = (input, init) => {
    const req = new Request(input, init);
    if (req.url.startsWith(EMULATOR)) sent.push(`${req.method} ${new URL(req.url).pathname}`);
    return real(input, init);
  };
  try {
    const res = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      }),
      { ...env, STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}` },
    );
    return { res, sent };
  } finally {
    globalThis.fetch = real;
  }
}

/** One sha256 call (of `body`) paid by a card key, with payments on (the tests' default is free beta). */
const paidApp = createApp();
export const spendCall = (key: string, body: unknown = { text: "abc" }) =>
  paidApp.fetch(
    new Request("https://skills.test/api/skills/sha256", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    }),
    cardEnv,
  );
/** What GET /api/credits says of a key. */
export const credits = async (key: string) =>
  (await call("/api/credits", { headers: { authorization: `Bearer ${key}` } })).json<{
    calls_left: number;
    status: string;
  }>();
