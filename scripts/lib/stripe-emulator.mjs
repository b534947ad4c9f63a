// A local stand-in for the part of the Stripe API the Worker calls, for `npm start` and the tests:
// create and retrieve a Checkout Session (`payment` mode, one-time `price_data` line items), list the
// session a PaymentIntent paid (`GET /v1/checkout/sessions?payment_intent=`), a hosted
// page whose Pay button completes it (or, as a delayed payment method would, completes it unpaid and
// then fails, or succeeds when the test control `POST /_emulator/sessions/:id/async_payment_succeeded`
// says so; or, as Adaptive Pricing would, charges another currency: `presentment_currency`),
// expiry after 24 hours or by `POST /v1/checkout/sessions/:id/expire`, refunds
// (`POST /v1/refunds`, listed by `GET /v1/refunds?payment_intent=`; made `pending` by the test control
// `POST /_emulator/refunds` and moved on to succeeded, failed or canceled by
// `POST /_emulator/refunds/:id/update`, `/fail` for short), and disputes (chargebacks and inquiries) opened, moved on and
// decided by a test control (`/_emulator/disputes`, standing in for Stripe's dispute test cards and
// evidence) and read back (`GET /v1/disputes/:id`). Every event it sends
// (`checkout.session.completed` / `.expired` / `.async_payment_failed` / `.async_payment_succeeded`, `charge.refunded`,
// `charge.refund.updated`, `charge.dispute.created` / `.updated` / `.closed`) is delivered signed by the `stripe` package itself, and kept
// for `GET /_emulator/events` so unit tests without a webhook target can deliver the very same events
// (`GET /_emulator/requests?match=` counts the API requests made, e.g. the reads of one session). It speaks Stripe's wire
// format (form-encoded bodies, Bearer keys, Idempotency-Key replay, forgotten after 24 h or at once by
// `POST /_emulator/forget-idempotency`, Stripe's error bodies and status
// codes), so the Worker's official client talks to it unchanged, and it refuses any parameter the
// app does not send rather than silently ignoring it.
import { randomBytes } from "node:crypto";
import http from "node:http";
import Stripe from "stripe";

const debug = (...args) => {
  if (process.env.STRIPE_EMULATOR_DEBUG) console.error("[stripe-emulator]", ...args);
};

// Events carry the API version the pinned `stripe` package was generated for.
const API_VERSION = Stripe.API_VERSION;
// Stripe's minimum and maximum charge for USD, the only currency a session is created in here.
const MIN_AMOUNT_USD = 50;
const MAX_AMOUNT_USD = 99_999_999;
const SESSION_LIFETIME_S = 24 * 3600;
// Stripe removes an idempotency key once it is at least 24 hours old: the key then starts afresh.
const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 3600 * 1000;
// Stripe retries failed deliveries for days; a few quick retries keep runs fast.
const WEBHOOK_RETRY_DELAYS_MS = [200, 500, 1000];
const WEBHOOK_TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1_000_000;

// Exactly the parameters src/routes/checkout.tsx sends, level by level.
const CREATE_PARAMS = ["cancel_url", "client_reference_id", "line_items", "metadata", "mode", "success_url"];
const REFUND_PARAMS = ["amount", "payment_intent"];
const MAX_EVENTS_KEPT = 500;
const MAX_REQUESTS_KEPT = 20_000;
const LINE_ITEM_PARAMS = ["price_data", "quantity"];
const PRICE_DATA_PARAMS = ["currency", "product_data", "unit_amount"];
const PRODUCT_DATA_PARAMS = ["description", "name"];

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const formatUsd = (cents) => usd.format(cents / 100);

const ALPHANUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const randomId = (prefix, length = 24) =>
  prefix + [...randomBytes(length)].map((b) => ALPHANUM[b % ALPHANUM.length]).join("");

const nowSeconds = () => Math.floor(Date.now() / 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A request Stripe would reject: carries the HTTP status and Stripe's `{ error }` body. */
class StripeApiError extends Error {
  constructor(status, error) {
    super(error.message);
    this.status = status;
    this.error = error;
  }
}

function invalid(message, param, code) {
  const error = { type: "invalid_request_error", message };
  if (code) {
    error.code = code;
    error.doc_url = `https://stripe.com/docs/error-codes/${code.replaceAll("_", "-")}`;
  }
  if (param) error.param = param;
  return new StripeApiError(400, error);
}

const missing = (param) => invalid(`Missing required param: ${param}.`, param, "parameter_missing");

function checkKeys(obj, prefix, allowed) {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key)) continue;
    const param = prefix ? `${prefix}[${key}]` : key;
    throw invalid(
      `Received unknown parameter: ${param} (the local Stripe emulator accepts only the parameters ` +
        "this app sends; extend scripts/lib/stripe-emulator.mjs to add one)",
      param,
      "parameter_unknown",
    );
  }
}

/** Parses Stripe's form encoding (`a[b][0][c]=v`) into nested objects; `asList` turns `[0]` keys into arrays. */
function parseForm(text) {
  const root = Object.create(null);
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const m = rawKey.match(/^([^[\]]+)((?:\[[^[\]]*\])*)$/);
    const path = m ? [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])] : [rawKey];
    let node = root;
    for (const [i, key] of path.entries()) {
      if (i === path.length - 1) {
        node[key] = value;
        break;
      }
      node[key] ??= Object.create(null);
      if (typeof node[key] !== "object") throw invalid("Invalid hash", path.slice(0, i + 1).join("."));
      node = node[key];
    }
  }
  return root;
}

function asList(value, param) {
  const keys = value && typeof value === "object" ? Object.keys(value) : null;
  if (!keys?.every((k) => /^\d+$/.test(k))) throw invalid("Invalid array", param);
  return keys.sort((a, b) => a - b).map((k) => value[k]);
}

function asHash(value, param) {
  if (value && typeof value === "object") return value;
  throw invalid("Invalid hash", param);
}

function asString(value, param, max = 5000) {
  if (typeof value !== "string") throw invalid(`Invalid string: ${JSON.stringify(value)}`, param);
  if (value === "") {
    throw invalid(
      `You passed an empty string for '${param}'. We assume empty values are an attempt to unset a ` +
        `parameter; however '${param}' cannot be unset. You should remove '${param}' from your request ` +
        "or supply a non-empty value.",
      param,
      "parameter_invalid_empty",
    );
  }
  if (value.length > max) {
    throw invalid(
      `Invalid string: ${value.slice(0, 20)}...; must be at most ${max} characters`,
      param,
      "string_length_exceeded",
    );
  }
  return value;
}

function asInteger(value, param, min) {
  const text = asString(value, param);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw invalid(`Invalid integer: ${text}`, param, "parameter_invalid_integer");
  }
  if (Number(text) < min) {
    throw invalid(`This value must be greater than or equal to ${min}.`, param, "parameter_invalid_integer");
  }
  return Number(text);
}

function asUrl(value, param) {
  const text = asString(value, param);
  let protocol = "";
  try {
    protocol = new URL(text).protocol;
  } catch {}
  if (protocol !== "http:" && protocol !== "https:") throw invalid("Not a valid URL", param, "url_invalid");
  // Kept as sent: `new URL` would percent-encode `{CHECKOUT_SESSION_ID}`.
  return text;
}

// Stripe's metadata limits: 50 keys, keys up to 40 characters, values up to 500; "" unsets a key.
function asMetadata(value, param) {
  const out = {};
  for (const [key, v] of Object.entries(asHash(value, param))) {
    if (typeof v !== "string") throw invalid("Invalid metadata value: must be a string", `${param}[${key}]`);
    if (key.length > 40) {
      throw invalid(
        `Metadata keys can have up to 40 characters, but you passed in a key that is ${key.length} characters. Invalid key: ${key}`,
        `${param}[${key}]`,
      );
    }
    if (v.length > 500) {
      throw invalid(
        `Metadata values can have up to 500 characters, but you passed in a value that is ${v.length} characters. Invalid value: ${v.slice(0, 40)}...`,
        `${param}[${key}]`,
      );
    }
    if (v !== "") out[key] = v;
  }
  if (Object.keys(out).length > 50) {
    throw invalid(`You can specify up to 50 keys, but you passed in ${Object.keys(out).length} keys.`, param);
  }
  return out;
}

function buildLineItems(raw) {
  const items = asList(raw, "line_items");
  if (items.length === 0) throw missing("line_items");
  return items.map((rawItem, i) => {
    const p = `line_items[${i}]`;
    const item = asHash(rawItem, p);
    checkKeys(item, p, LINE_ITEM_PARAMS);
    if (item.price_data === undefined) {
      throw invalid(`You must specify either \`price\` or \`price_data\` in ${p}.`, p);
    }
    const pd = asHash(item.price_data, `${p}[price_data]`);
    checkKeys(pd, `${p}[price_data]`, PRICE_DATA_PARAMS);
    if (pd.currency === undefined) throw missing(`${p}[price_data][currency]`);
    const currency = asString(pd.currency, `${p}[price_data][currency]`).toLowerCase();
    if (currency !== "usd") {
      throw invalid(
        `The local Stripe emulator only models usd, not ${currency}.`,
        `${p}[price_data][currency]`,
      );
    }
    if (pd.product_data === undefined) {
      throw invalid(
        `You must specify either \`product\` or \`product_data\` in ${p}[price_data].`,
        `${p}[price_data]`,
      );
    }
    const prod = asHash(pd.product_data, `${p}[price_data][product_data]`);
    checkKeys(prod, `${p}[price_data][product_data]`, PRODUCT_DATA_PARAMS);
    if (prod.name === undefined) throw missing(`${p}[price_data][product_data][name]`);
    const name = asString(prod.name, `${p}[price_data][product_data][name]`);
    if (prod.description !== undefined) {
      asString(prod.description, `${p}[price_data][product_data][description]`);
    }
    if (pd.unit_amount === undefined) throw missing(`${p}[price_data][unit_amount]`);
    const unitAmount = asInteger(pd.unit_amount, `${p}[price_data][unit_amount]`, 0);
    if (item.quantity === undefined) throw missing(`${p}[quantity]`);
    const quantity = asInteger(item.quantity, `${p}[quantity]`, 1);
    return { name, unitAmount, quantity, amount: unitAmount * quantity };
  });
}

function createSession(params, baseUrl) {
  checkKeys(params, "", CREATE_PARAMS);
  if (params.mode === undefined) throw missing("mode");
  const mode = asString(params.mode, "mode");
  if (mode !== "payment") {
    throw invalid(`The local Stripe emulator only implements mode=payment, not mode=${mode}.`, "mode");
  }
  if (params.line_items === undefined) throw missing("line_items");
  if (params.success_url === undefined) {
    // Optional on Stripe (it then shows its own confirmation page), which is not emulated.
    throw invalid("The local Stripe emulator needs a success_url.", "success_url");
  }
  const successUrl = asUrl(params.success_url, "success_url");
  const cancelUrl = params.cancel_url === undefined ? null : asUrl(params.cancel_url, "cancel_url");
  const clientReferenceId =
    params.client_reference_id === undefined
      ? null
      : asString(params.client_reference_id, "client_reference_id", 200);
  const metadata = params.metadata === undefined ? {} : asMetadata(params.metadata, "metadata");
  const lineItems = buildLineItems(params.line_items);
  const total = lineItems.reduce((sum, li) => sum + li.amount, 0);
  if (total < MIN_AMOUNT_USD || total > MAX_AMOUNT_USD) {
    throw invalid(
      total < MIN_AMOUNT_USD
        ? `The Checkout Session's total amount due must add up to at least ${formatUsd(MIN_AMOUNT_USD)} usd`
        : `The Checkout Session's total amount due must be no more than ${formatUsd(MAX_AMOUNT_USD)} usd`,
    );
  }
  const id = randomId("cs_test_", 58);
  const created = nowSeconds();
  // The Checkout Session fields a hosted `payment` session has that matter to a payment flow.
  return {
    id,
    object: "checkout.session",
    amount_subtotal: total,
    amount_total: total,
    cancel_url: cancelUrl,
    client_reference_id: clientReferenceId,
    created,
    currency: "usd",
    customer: null,
    customer_details: null,
    customer_email: null,
    expires_at: created + SESSION_LIFETIME_S,
    livemode: false,
    metadata,
    mode,
    payment_intent: null,
    payment_method_types: ["card"],
    payment_status: "unpaid",
    status: "open",
    success_url: successUrl,
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
    ui_mode: "hosted_page",
    url: `${baseUrl}/pay/${id}`,
    _lineItems: lineItems,
  };
}

/** The session as the API shows it: bookkeeping fields (leading `_`) never leave the emulator. */
const publicSession = (session) =>
  JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(session).filter(([k]) => !k.startsWith("_")))));

function maskKey(key) {
  const prefix = key.match(/^(?:sk|rk|pk)_(?:test|live)_/)?.[0] ?? "";
  const rest = key.slice(prefix.length);
  return prefix + "*".repeat(Math.max(0, rest.length - 4)) + rest.slice(-4);
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw invalid("Request body too large.");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const escapeHtml = (s) =>
  String(s).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );

const PAGE_CSS = `
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, sans-serif;
    color: #1a1f36; background: #f6f9fc; }
  main { max-width: 440px; margin: 48px auto; padding: 32px; background: #fff; border-radius: 12px;
    box-shadow: 0 2px 12px rgba(50, 50, 93, .12); }
  .badge { display: inline-block; font-size: 12px; font-weight: 600; color: #a0501b; background: #fdebd9;
    border-radius: 4px; padding: 2px 8px; margin-bottom: 16px; }
  h1 { font-size: 18px; margin: 0 0 20px; }
  table { width: 100%; border-collapse: collapse; margin-bottom: 20px; }
  td { padding: 8px 0; border-bottom: 1px solid #e6ebf1; vertical-align: top; }
  td.num { text-align: right; white-space: nowrap; }
  .qty { color: #697386; font-size: 13px; }
  tr.total td { border-bottom: 0; font-weight: 600; font-size: 17px; padding-top: 12px; }
  label { display: block; font-size: 13px; color: #697386; margin-bottom: 4px; }
  input { width: 100%; padding: 10px; font: inherit; border: 1px solid #cfd7df; border-radius: 6px; margin-bottom: 16px; }
  button { width: 100%; padding: 12px; font: inherit; font-weight: 600; color: #fff; background: #635bff;
    border: 0; border-radius: 6px; cursor: pointer; }
  button:hover { background: #5851ea; }
  .cancel { display: block; text-align: center; margin-top: 16px; color: #697386; font-size: 14px; }
  p.note { color: #697386; }
`;

const page = (title, body) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${PAGE_CSS}</style>
</head>
<body>
<main>
<span class="badge">TEST MODE · local Stripe emulator</span>
${body}
</main>
</body>
</html>
`;

function checkoutPage(session) {
  const rows = session._lineItems
    .map(
      (li) =>
        `<tr><td>${escapeHtml(li.name)}<div class="qty">Qty ${li.quantity} × ${formatUsd(li.unitAmount)}</div></td>` +
        `<td class="num">${formatUsd(li.amount)}</td></tr>`,
    )
    .join("\n");
  const cancel = session.cancel_url
    ? `<a class="cancel" id="cancel" href="${escapeHtml(session.cancel_url)}">Cancel</a>`
    : "";
  return page(
    "Checkout",
    `<h1>Checkout</h1>
<table>
${rows}
<tr class="total"><td>Total due</td><td class="num" id="total">${formatUsd(session.amount_total)}</td></tr>
</table>
<form method="post" action="/pay/${escapeHtml(session.id)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" value="test@example.com" required>
<button type="submit" id="pay" name="outcome" value="paid">Pay ${formatUsd(session.amount_total)}</button>
</form>
${cancel}`,
  );
}

const notFoundPage = page(
  "Not found",
  `<h1>Something went wrong</h1>
<p class="note">The page you were looking for could not be found. This Checkout Session does not exist or has expired.</p>`,
);

function safeDecode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const successRedirect = (session) => session.success_url.replaceAll("{CHECKOUT_SESSION_ID}", session.id);

/** The restricted-key permission (`rak_…`) each emulated endpoint needs, as Stripe names them. */
function permissionFor(method, pathname) {
  if (pathname.startsWith("/v1/checkout/sessions")) {
    return method === "GET" ? "rak_checkout_session_read" : "rak_checkout_session_write";
  }
  if (pathname === "/v1/refunds") return method === "GET" ? "rak_refund_read" : "rak_refund_write";
  if (pathname.startsWith("/v1/disputes/")) return "rak_dispute_read";
  return undefined;
}

/**
 * `restrictedKeys`: restricted keys (`rk_test_…`) the emulator also accepts, each with the `rak_…`
 * permissions it was granted; a `…_write` permission includes its `…_read`. A call the key may not
 * make is refused with 403, as Stripe does.
 */
export async function startStripeEmulator({
  port = 0,
  webhookUrl,
  webhookSecret,
  apiKey,
  restrictedKeys = {},
} = {}) {
  if (!apiKey) throw new Error("startStripeEmulator: apiKey is required");
  if (webhookUrl && !webhookSecret) throw new Error("startStripeEmulator: webhookUrl needs webhookSecret");
  let targetUrl = webhookUrl ?? null;
  const sessions = new Map();
  // Charges by PaymentIntent id, and disputes by id: what refunds and disputes act on.
  const charges = new Map();
  const disputes = new Map();
  // Refunds by id, in the order they were made.
  const refunds = new Map();
  const events = [];
  // "METHOD /v1/…" of every API request, newest last, for tests that count what the app asked.
  const apiRequests = [];
  const idempotency = new Map();
  // Creates armed to fail by POST /_emulator/fail-creates: { match, left }.
  const failures = [];
  /** Whether this create was armed to fail: its decoded form body contains an armed `match`. */
  function takeFailure(rawBody) {
    const text = [...new URLSearchParams(rawBody)].map(([k, v]) => `${k}=${v}`).join("&");
    const armed = failures.find((f) => f.left > 0 && text.includes(f.match));
    if (armed) armed.left--;
    return armed !== undefined;
  }
  const expiryTimers = new Map();
  // Aborts webhook deliveries still in flight when the emulator stops, so `stop` never hangs on them.
  const closing = new AbortController();
  let baseUrl = "";

  /** One signed POST of the event; returns the HTTP status, or null on a network error. */
  async function deliverOnce(event, payload) {
    // Signed afresh per attempt, as Stripe does.
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: webhookSecret });
    try {
      const res = await fetch(targetUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          "stripe-signature": signature,
        },
        body: payload,
        // Stripe treats a redirect as a failed delivery rather than following it.
        redirect: "manual",
        signal: AbortSignal.any([AbortSignal.timeout(WEBHOOK_TIMEOUT_MS), closing.signal]),
      });
      await res.arrayBuffer().catch(() => {});
      return res.status;
    } catch (err) {
      debug("delivery of", event.id, "failed:", err?.cause?.code ?? err?.message ?? err);
      return null;
    }
  }

  /** Sends the event to the webhook URL (if any), retrying on network errors and non-2xx answers. */
  async function deliver(object, type, request = { id: null, idempotency_key: null }) {
    const event = {
      id: randomId("evt_test_"),
      object: "event",
      api_version: API_VERSION,
      created: nowSeconds(),
      data: {
        object: object.object === "checkout.session" ? publicSession(object) : structuredClone(object),
      },
      livemode: false,
      pending_webhooks: 1,
      // Completion and expiry are caused by the customer or the clock; refunds by an API request.
      request,
      type,
    };
    events.push(event);
    if (events.length > MAX_EVENTS_KEPT) events.shift();
    if (!targetUrl) return;
    // Pretty-printed like Stripe's, so a receiver that re-serializes instead of verifying the raw
    // bytes fails here as it would in production.
    const payload = JSON.stringify(event, null, 2);
    for (let attempt = 0; attempt <= WEBHOOK_RETRY_DELAYS_MS.length && !closing.signal.aborted; attempt++) {
      if (attempt > 0) await sleep(WEBHOOK_RETRY_DELAYS_MS[attempt - 1]);
      const status = await deliverOnce(event, payload);
      debug("delivered", type, event.id, "attempt", attempt + 1, "->", status);
      if (status !== null && status >= 200 && status < 300) return;
    }
  }

  async function expire(session) {
    if (session.status !== "open") return false;
    clearTimeout(expiryTimers.get(session.id));
    expiryTimers.delete(session.id);
    session.status = "expired";
    session.url = null;
    await deliver(session, "checkout.session.expired");
    return true;
  }

  // Sessions whose expiry passed unnoticed are expired before anyone reads them.
  async function lookup(id) {
    const session = sessions.get(id);
    if (session?.status === "open" && session.expires_at <= nowSeconds()) await expire(session);
    return session;
  }

  /** Drops the keys 24 hours old or more: oldest first, as a Map keeps them in the order they were set. */
  function forgetOldIdempotencyKeys() {
    for (const [slot, saved] of idempotency) {
      if (Date.now() - saved.at < IDEMPOTENCY_KEY_LIFETIME_MS) break;
      idempotency.delete(slot);
    }
  }

  function create(params, rawBody, idempotencyKey, key, requestId) {
    // Stripe replays the stored result for a repeated key, whether it succeeded or failed (a 500
    // included), and refuses the key for different parameters, until the key is 24 hours old. A
    // request refused by validation never began, so nothing is stored and a corrected retry with the
    // same key works.
    const slot = idempotencyKey ? `${key}\n${idempotencyKey}` : null;
    forgetOldIdempotencyKeys();
    const prior = slot && idempotency.get(slot);
    if (prior) {
      if (prior.rawBody !== rawBody) {
        throw new StripeApiError(400, {
          type: "idempotency_error",
          message:
            "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
            `Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
        });
      }
      if (prior.failure) {
        throw Object.assign(new StripeApiError(prior.failure.status, prior.failure.error), {
          replayedFrom: prior.requestId,
        });
      }
      return { body: prior.body, replayedFrom: prior.requestId };
    }
    const session = createSession(params, baseUrl);
    const failing = takeFailure(rawBody);
    if (failing) {
      const failure = new StripeApiError(500, {
        type: "api_error",
        message:
          "An unknown error occurred (injected by the local Stripe emulator's /_emulator/fail-creates).",
      });
      if (slot) idempotency.set(slot, { rawBody, failure, requestId, at: Date.now() });
      throw failure;
    }
    sessions.set(session.id, session);
    const timer = setTimeout(
      () => expire(session).catch((err) => debug("expiry failed:", err)),
      SESSION_LIFETIME_S * 1000,
    );
    timer.unref();
    expiryTimers.set(session.id, timer);
    const body = publicSession(session);
    if (slot) idempotency.set(slot, { rawBody, body, requestId, at: Date.now() });
    return { body };
  }

  async function retrieve(id, params) {
    checkKeys(params, "", []);
    const session = await lookup(id);
    if (!session) {
      throw new StripeApiError(404, {
        type: "invalid_request_error",
        code: "resource_missing",
        doc_url: "https://stripe.com/docs/error-codes/resource-missing",
        message: `No such checkout.session: '${id}'`,
        param: "session",
      });
    }
    return { body: publicSession(session) };
  }

  /** Stripe's list of sessions, filtered as the app asks: the session a PaymentIntent paid. */
  function list(params) {
    checkKeys(params, "", ["limit", "payment_intent"]);
    const limit = params.limit === undefined ? 10 : asInteger(params.limit, "limit", 1);
    if (limit > 100) throw invalid("This value must be less than or equal to 100.", "limit");
    const pi =
      params.payment_intent === undefined ? undefined : asString(params.payment_intent, "payment_intent");
    const found = [...sessions.values()]
      .filter((s) => pi === undefined || s.payment_intent === pi)
      .sort((a, b) => b.created - a.created);
    return {
      body: {
        object: "list",
        data: found.slice(0, limit).map(publicSession),
        has_more: found.length > limit,
        url: "/v1/checkout/sessions",
      },
    };
  }

  function chargeOf(paymentIntent, param) {
    const charge = charges.get(paymentIntent);
    if (!charge) {
      throw new StripeApiError(404, {
        type: "invalid_request_error",
        code: "resource_missing",
        message: `No such payment_intent: '${paymentIntent}'`,
        param,
      });
    }
    return charge;
  }

  /**
   * A (partial) refund of a paid session's charge; `charge.refunded` carries the running total.
   * Stripe counts a pending refund in the charge's amount_refunded and sends charge.refunded when
   * the refund is made, whatever its status; a refund that later fails or is canceled gives its
   * amount back to the charge (updateRefund).
   */
  async function refund(params, request, status = "succeeded", pendingReason = undefined) {
    if (params.payment_intent === undefined) throw missing("payment_intent");
    const charge = chargeOf(asString(params.payment_intent, "payment_intent"), "payment_intent");
    const left = charge.amount - charge.amount_refunded;
    if (left === 0) {
      throw invalid(`Charge ${charge.id} has already been refunded.`, undefined, "charge_already_refunded");
    }
    const amount = params.amount === undefined ? left : asInteger(params.amount, "amount", 1);
    if (amount > left) {
      throw invalid(
        `Refund amount (${formatUsd(amount)}) is greater than unrefunded amount on charge (${formatUsd(left)})`,
        "amount",
      );
    }
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded === charge.amount;
    const refundObject = {
      id: randomId("re_"),
      object: "refund",
      amount,
      charge: charge.id,
      created: nowSeconds(),
      currency: charge.currency,
      // No failure_reason: Stripe's refunds carry it only once failed (updateRefund).
      payment_intent: charge.payment_intent,
      ...(status === "pending" ? { pending_reason: pendingReason } : {}),
      status,
    };
    refunds.set(refundObject.id, refundObject);
    await deliver(charge, "charge.refunded", request);
    return structuredClone(refundObject);
  }

  /**
   * Stripe's list of refunds, filtered as the app asks: those of one PaymentIntent, newest first,
   * a page of `limit` after the refund `starting_after` names (older ones) or before the one
   * `ending_before` names (the newer ones closest to it, still newest first); `has_more` says whether
   * the list goes on past the page in the direction asked, as the stripe client's auto-pagination
   * reads it.
   */
  function listRefunds(params) {
    checkKeys(params, "", ["ending_before", "limit", "payment_intent", "starting_after"]);
    const limit = params.limit === undefined ? 10 : asInteger(params.limit, "limit", 1);
    if (limit > 100) throw invalid("This value must be less than or equal to 100.", "limit");
    if (params.payment_intent === undefined) throw missing("payment_intent");
    const pi = asString(params.payment_intent, "payment_intent");
    if (params.starting_after !== undefined && params.ending_before !== undefined) {
      throw invalid("You may only specify one of these parameters: ending_before, starting_after.");
    }
    // Positions in the order refunds were made: a cursor may name a refund of another payment.
    const all = [...refunds.values()];
    const at = (param) => {
      const id = asString(params[param], param);
      const i = all.findIndex((r) => r.id === id);
      if (i < 0) throw invalid(`No such refund: '${id}'`, param, "resource_missing");
      return i;
    };
    const newestFirst = all
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.payment_intent === pi)
      .reverse();
    let page;
    let hasMore;
    if (params.ending_before !== undefined) {
      const cursor = at("ending_before");
      const newer = newestFirst.filter(({ i }) => i > cursor);
      page = newer.slice(-limit);
      hasMore = newer.length > limit;
    } else {
      const cursor = params.starting_after === undefined ? all.length : at("starting_after");
      const older = newestFirst.filter(({ i }) => i < cursor);
      page = older.slice(0, limit);
      hasMore = older.length > limit;
    }
    return {
      body: {
        object: "list",
        data: page.map(({ r }) => structuredClone(r)),
        has_more: hasMore,
        url: "/v1/refunds",
      },
    };
  }

  // Test control, not Stripe's API: a refund Stripe holds `pending` (the balance cannot cover it
  // yet: pending_reason insufficient_funds; or still processing) is made by POST /_emulator/refunds.
  const PENDING_REASONS = ["charge_pending", "insufficient_funds", "processing"];
  function pendingRefund(params) {
    checkKeys(params, "", [...REFUND_PARAMS, "pending_reason"]);
    const reason =
      params.pending_reason === undefined ? "processing" : asString(params.pending_reason, "pending_reason");
    if (!PENDING_REASONS.includes(reason)) {
      throw invalid(`pending_reason must be one of ${PENDING_REASONS.join(", ")}`, "pending_reason");
    }
    return refund(params, { id: null, idempotency_key: null }, "pending", reason);
  }

  // The statuses a refund may move to from each status. A card refund that succeeded can still fail
  // days later (the card was closed); only a pending one can succeed or be canceled.
  const REFUND_STEPS = { pending: ["succeeded", "failed", "canceled"], succeeded: ["failed"] };

  // Test control, not Stripe's API: a refund moves on (`POST /_emulator/refunds/:id/update`,
  // `status`; `/fail` is `status=failed`). Stripe sends charge.refund.updated (never charge.refunded
  // again: the charge was refunded when the refund was made). A refund that fails or is canceled
  // returns the money to the balance: the charge's amount_refunded drops by it.
  async function updateRefund(id, params) {
    checkKeys(params, "", ["status"]);
    const found = refunds.get(id);
    if (!found)
      throw new StripeApiError(404, { type: "invalid_request_error", message: `No such refund: '${id}'` });
    const status = asString(params.status, "status");
    const allowed = REFUND_STEPS[found.status] ?? [];
    if (!allowed.includes(status)) {
      throw invalid(
        `Refund ${id} has status ${found.status}` +
          (allowed.length ? `: it can move only to ${allowed.join(", ")}.` : "."),
        "status",
      );
    }
    delete found.pending_reason;
    found.status = status;
    if (status === "failed") found.failure_reason = "expired_or_canceled_card";
    if (status === "failed" || status === "canceled") {
      const charge = chargeOf(found.payment_intent, "payment_intent");
      charge.amount_refunded -= found.amount;
      charge.refunded = charge.amount_refunded === charge.amount;
    }
    await deliver(found, "charge.refund.updated");
    return structuredClone(found);
  }

  /** The charge of a session's payment, in the currency the buyer paid (presentment_details). */
  function charge(session) {
    const shown = session.presentment_details;
    const amount = shown?.presentment_amount ?? session.amount_total;
    charges.set(session.payment_intent, {
      id: randomId("ch_test_"),
      object: "charge",
      amount,
      amount_captured: amount,
      amount_refunded: 0,
      currency: shown?.presentment_currency ?? "usd",
      paid: true,
      payment_intent: session.payment_intent,
      refunded: false,
      status: "succeeded",
    });
  }

  // Test control, not Stripe's API: the bank debit of a session paid with outcome=async_succeeded
  // clears days later. Stripe then marks the session paid and sends
  // checkout.session.async_payment_succeeded; only then is there a charge to refund or dispute.
  async function succeedPayment(id) {
    const session = sessions.get(id);
    if (!session)
      throw new StripeApiError(404, {
        type: "invalid_request_error",
        message: `No such checkout.session: '${id}'`,
      });
    if (!session._awaitingPayment) {
      throw invalid(
        `Checkout Session ${id} has no delayed payment waiting (pay it with outcome=async_succeeded).`,
      );
    }
    Object.assign(session, { payment_status: "paid", _awaitingPayment: false });
    charge(session);
    await deliver(session, "checkout.session.async_payment_succeeded");
    return publicSession(session);
  }

  // Test control, not Stripe's API: Stripe opens disputes from test cards and decides them from
  // evidence; here a POST opens one on a paid session's charge, others move it on and decide it.
  // An inquiry (a card network's pre-dispute, `pm_card_createDisputeInquiry`) opens as
  // `warning_needs_response` and closes as `warning_closed`; a chargeback opens as `needs_response`
  // and closes `won` or `lost`. Stripe sends charge.dispute.closed for those three and
  // charge.dispute.updated for the steps between (evidence submitted: `…under_review`).
  async function openDispute(params) {
    checkKeys(params, "", ["payment_intent", "status"]);
    const charge = chargeOf(asString(params.payment_intent, "payment_intent"), "payment_intent");
    const status = params.status === undefined ? "needs_response" : asString(params.status, "status");
    if (status !== "needs_response" && status !== "warning_needs_response") {
      throw invalid("status must be needs_response or warning_needs_response", "status");
    }
    const dispute = {
      id: randomId("du_"),
      object: "dispute",
      amount: charge.amount,
      charge: charge.id,
      created: nowSeconds(),
      currency: charge.currency,
      payment_intent: charge.payment_intent,
      reason: "fraudulent",
      status,
    };
    disputes.set(dispute.id, dispute);
    await deliver(dispute, "charge.dispute.created");
    return dispute;
  }

  // The statuses each open status may move to, and the event Stripe sends for the move.
  const DISPUTE_STEPS = {
    warning_needs_response: { warning_under_review: "updated", warning_closed: "closed" },
    warning_under_review: { warning_closed: "closed" },
    needs_response: { under_review: "updated", won: "closed", lost: "closed" },
    under_review: { won: "closed", lost: "closed" },
  };

  /** Moves a dispute on (`step` "updated") or decides it (`step` "closed"), with Stripe's event. */
  async function moveDispute(id, params, step) {
    checkKeys(params, "", ["status"]);
    const dispute = disputes.get(id);
    if (!dispute)
      throw new StripeApiError(404, { type: "invalid_request_error", message: `No such dispute: '${id}'` });
    const status = asString(params.status, "status");
    const steps = DISPUTE_STEPS[dispute.status];
    if (!steps) throw invalid(`Dispute ${id} is already closed.`);
    const allowed = Object.keys(steps).filter((next) => steps[next] === step);
    if (!allowed.includes(status)) {
      const to = allowed.length ? `only to ${allowed.join(" or ")}` : "no further";
      throw invalid(`A ${dispute.status} dispute can be ${step} ${to}.`, "status");
    }
    dispute.status = status;
    await deliver(dispute, `charge.dispute.${step}`);
    return dispute;
  }

  async function handleControl(req, res, pathname, search) {
    try {
      const moving = pathname.match(/^\/_emulator\/disputes\/([^/]+)\/(close|update)$/);
      if (req.method === "GET" && pathname === "/_emulator/events") {
        const type = new URLSearchParams(search).get("type");
        return sendJson(res, 200, { data: events.filter((e) => !type || e.type === type) });
      }
      if (req.method === "GET" && pathname === "/_emulator/requests") {
        const match = new URLSearchParams(search).get("match") ?? "";
        return sendJson(res, 200, { count: apiRequests.filter((r) => r.includes(match)).length });
      }
      if (req.method === "POST" && pathname === "/_emulator/forget-idempotency") {
        // Stands in for the 24 hours after which Stripe forgets a key: the keys whose create made
        // `session` start afresh now (only that session's, so other tests' replays are untouched).
        const form = parseForm(await readBody(req));
        checkKeys(form, "", ["session"]);
        const session = asString(form.session, "session");
        let forgotten = 0;
        for (const [slot, saved] of idempotency) {
          if (saved.body?.id === session) {
            idempotency.delete(slot);
            forgotten++;
          }
        }
        return sendJson(res, 200, { forgotten });
      }
      if (req.method === "POST" && pathname === "/_emulator/fail-creates") {
        // Stands in for an error inside Stripe: the next `times` session creates whose form body
        // contains `match` (e.g. `metadata[calls]=77770`) fail with 500 api_error, stored under
        // their idempotency key like any result Stripe began to execute.
        const form = parseForm(await readBody(req));
        checkKeys(form, "", ["match", "times"]);
        const times = form.times === undefined ? 1 : asInteger(form.times, "times", 1);
        failures.push({ match: asString(form.match, "match"), left: times });
        return sendJson(res, 200, { armed: times });
      }
      if (req.method === "POST" && pathname === "/_emulator/refunds") {
        return sendJson(res, 200, await pendingRefund(parseForm(await readBody(req))));
      }
      const refundStep = pathname.match(/^\/_emulator\/refunds\/([^/]+)\/(fail|update)$/);
      if (req.method === "POST" && refundStep) {
        const form = parseForm(await readBody(req));
        if (refundStep[2] === "fail") checkKeys(form, "", []);
        const params = refundStep[2] === "fail" ? { status: "failed" } : form;
        return sendJson(res, 200, await updateRefund(safeDecode(refundStep[1]), params));
      }
      const succeeding = pathname.match(/^\/_emulator\/sessions\/([^/]+)\/async_payment_succeeded$/);
      if (req.method === "POST" && succeeding) {
        checkKeys(parseForm(await readBody(req)), "", []);
        return sendJson(res, 200, await succeedPayment(safeDecode(succeeding[1])));
      }
      if (req.method === "POST" && pathname === "/_emulator/disputes") {
        return sendJson(res, 200, await openDispute(parseForm(await readBody(req))));
      }
      if (req.method === "POST" && moving) {
        const step = moving[2] === "close" ? "closed" : "updated";
        return sendJson(
          res,
          200,
          await moveDispute(safeDecode(moving[1]), parseForm(await readBody(req)), step),
        );
      }
      throw new StripeApiError(404, {
        type: "invalid_request_error",
        message: `No emulator control at ${pathname}`,
      });
    } catch (err) {
      const e =
        err instanceof StripeApiError
          ? err
          : new StripeApiError(500, { type: "api_error", message: `stripe-emulator: ${err.message}` });
      sendJson(res, e.status, { error: e.error });
    }
  }

  function sendJson(res, status, body, headers = {}) {
    const text = JSON.stringify(body, null, 2);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      "cache-control": "no-cache, no-store",
      ...headers,
    });
    res.end(text);
  }

  function sendHtml(res, status, html) {
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-length": Buffer.byteLength(html),
      "cache-control": "no-store",
    });
    res.end(html);
  }

  async function handleApi(req, res, pathname, search) {
    const requestId = randomId("req_", 14);
    apiRequests.push(`${req.method} ${pathname}`);
    if (apiRequests.length > MAX_REQUESTS_KEPT) apiRequests.shift();
    const headers = {
      "request-id": requestId,
      "stripe-version": req.headers["stripe-version"] ?? API_VERSION,
    };
    const idempotencyKey = req.method === "POST" ? req.headers["idempotency-key"] : undefined;
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    try {
      const key = (req.headers.authorization ?? "").match(/^Bearer\s+(.+)$/i)?.[1].trim();
      if (!key) {
        throw new StripeApiError(401, {
          type: "invalid_request_error",
          message:
            "You did not provide an API key. You need to provide your API key in the Authorization header, " +
            "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
            "for details, or we can help at https://support.stripe.com/.",
        });
      }
      const granted = restrictedKeys[key];
      if (key !== apiKey && !granted) {
        throw new StripeApiError(401, {
          type: "invalid_request_error",
          message: `Invalid API Key provided: ${maskKey(key)}`,
        });
      }
      const needed = granted && permissionFor(req.method, pathname);
      if (needed && !granted.includes(needed) && !granted.includes(needed.replace(/_read$/, "_write"))) {
        throw new StripeApiError(403, {
          type: "invalid_request_error",
          message:
            `The provided key '${maskKey(key)}' does not have the required permissions for this endpoint on ` +
            `account 'acct_emulator'. Having the '${needed}' permission would allow this request to continue.`,
        });
      }
      const one = pathname.match(/^\/v1\/checkout\/sessions\/([^/]+)$/);
      const expiring = pathname.match(/^\/v1\/checkout\/sessions\/([^/]+)\/expire$/);
      const dispute = pathname.match(/^\/v1\/disputes\/([^/]+)$/);
      let result;
      if (req.method === "POST" && pathname === "/v1/checkout/sessions") {
        const rawBody = await readBody(req);
        result = create(parseForm(rawBody), rawBody, idempotencyKey, key, requestId);
      } else if (req.method === "GET" && pathname === "/v1/checkout/sessions") {
        result = list(parseForm(search.slice(1)));
      } else if (req.method === "GET" && one) {
        result = await retrieve(safeDecode(one[1]), parseForm(search.slice(1)));
      } else if (req.method === "POST" && expiring) {
        checkKeys(parseForm(await readBody(req)), "", []);
        const { body } = await retrieve(safeDecode(expiring[1]), {});
        const session = sessions.get(body.id);
        if (!(await expire(session))) {
          throw invalid(
            `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${session.status}".`,
          );
        }
        result = { body: publicSession(session) };
      } else if (req.method === "GET" && pathname === "/v1/refunds") {
        result = listRefunds(parseForm(search.slice(1)));
      } else if (req.method === "POST" && pathname === "/v1/refunds") {
        const params = parseForm(await readBody(req));
        checkKeys(params, "", REFUND_PARAMS);
        const request = { id: requestId, idempotency_key: idempotencyKey ?? null };
        result = { body: await refund(params, request) };
      } else if (req.method === "GET" && dispute) {
        checkKeys(parseForm(search.slice(1)), "", []);
        const found = disputes.get(safeDecode(dispute[1]));
        if (!found)
          throw new StripeApiError(404, {
            type: "invalid_request_error",
            message: `No such dispute: '${safeDecode(dispute[1])}'`,
            param: "dispute",
            code: "resource_missing",
          });
        result = { body: found };
      } else {
        throw new StripeApiError(404, {
          type: "invalid_request_error",
          message:
            `Unrecognized request URL (${req.method}: ${pathname}). Please see https://stripe.com/docs or we ` +
            "can help at https://support.stripe.com/. (The local Stripe emulator implements only " +
            "POST /v1/checkout/sessions, GET /v1/checkout/sessions (payment_intent), GET /v1/checkout/sessions/:id, POST /v1/checkout/sessions/:id/expire, POST /v1/refunds, GET /v1/refunds (payment_intent, limit, starting_after, ending_before) and GET /v1/disputes/:id.)",
        });
      }
      if (result.replayedFrom) {
        headers["idempotent-replayed"] = "true";
        headers["original-request"] = result.replayedFrom;
      }
      debug(req.method, pathname, 200);
      sendJson(res, 200, result.body, headers);
    } catch (err) {
      // Stripe's client retries 5xx; a bug here should still be loud, not swallowed.
      const e =
        err instanceof StripeApiError
          ? err
          : new StripeApiError(500, { type: "api_error", message: `stripe-emulator: ${err.message}` });
      debug(req.method, pathname, e.status, e.message);
      if (e.replayedFrom) {
        headers["idempotent-replayed"] = "true";
        headers["original-request"] = e.replayedFrom;
      }
      // A stored failure is replayed for the same key, so Stripe tells its clients not to retry it.
      if (e.error.type === "api_error" && err instanceof StripeApiError)
        headers["stripe-should-retry"] = "false";
      sendJson(res, e.status, { error: e.error }, headers);
    }
  }

  async function handlePay(req, res, id) {
    const session = await lookup(id);
    const form = req.method === "POST" ? new URLSearchParams(await readBody(req)) : null;
    if (!session || session.status === "expired") return sendHtml(res, 404, notFoundPage);
    if (req.method === "GET") {
      if (session.status === "open") return sendHtml(res, 200, checkoutPage(session));
      return sendHtml(
        res,
        200,
        page(
          "Payment complete",
          `<h1>Payment complete</h1>
<p class="note">This Checkout Session has already been paid.</p>
<a class="cancel" href="${escapeHtml(successRedirect(session))}">Return to the merchant</a>`,
        ),
      );
    }
    // A second submit (double click, retry) must not pay or notify twice: all state changes happen
    // before the first await, so a concurrent submit sees `complete`.
    if (session.status === "open") {
      clearTimeout(expiryTimers.get(session.id));
      expiryTimers.delete(session.id);
      // A delayed payment method (bank debit) completes the session unpaid, then fails
      // (`async_failed`) or, once the test control says so, succeeds (`async_succeeded`).
      const outcome = form?.get("outcome");
      const delayed = outcome === "async_failed" || outcome === "async_succeeded";
      // Test control, not a field of Stripe's page: Adaptive Pricing, the buyer pays in another
      // currency (`presentment_currency`, `presentment_amount` in its minor unit). The charge and its
      // refunds are in that currency; the session keeps its usd total and names the charge's amount
      // in presentment_details (the field Stripe's sessions carry from API version 2025-03-31).
      const shown = form?.get("presentment_currency");
      const presentment = shown
        ? {
            presentment_currency: shown.toLowerCase(),
            presentment_amount: asInteger(
              form.get("presentment_amount") ?? undefined,
              "presentment_amount",
              1,
            ),
          }
        : null;
      Object.assign(session, {
        status: "complete",
        payment_status: delayed ? "unpaid" : "paid",
        payment_intent: randomId("pi_test_"),
        url: null,
        customer_details: { email: "test@example.com", name: null, phone: null, tax_exempt: "none" },
        ...(presentment ? { presentment_details: presentment } : {}),
        _awaitingPayment: outcome === "async_succeeded",
      });
      if (!delayed) charge(session);
      // Stripe redirects without waiting for the webhook; waiting here makes local runs deterministic
      // (the Worker has seen the event when the success page loads).
      await deliver(session, "checkout.session.completed");
      if (outcome === "async_failed") await deliver(session, "checkout.session.async_payment_failed");
    }
    res.writeHead(303, { location: successRedirect(session), "content-length": 0 });
    res.end();
  }

  const server = http.createServer(async (req, res) => {
    const { pathname, search } = new URL(req.url, "http://x");
    try {
      if (pathname.startsWith("/v1/")) return await handleApi(req, res, pathname, search);
      if (pathname.startsWith("/_emulator/")) return await handleControl(req, res, pathname, search);
      const pay = pathname.match(/^\/pay\/([^/]+)$/);
      if (pay && (req.method === "GET" || req.method === "POST")) {
        return await handlePay(req, res, safeDecode(pay[1]));
      }
      sendHtml(res, 404, notFoundPage);
    } catch (err) {
      debug(req.method, pathname, err);
      if (res.headersSent) res.destroy();
      else sendHtml(res, 500, page("Error", `<h1>stripe-emulator: ${escapeHtml(err?.message ?? err)}</h1>`));
    }
  });

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  baseUrl = `http://127.0.0.1:${server.address().port}`;
  const stop = () =>
    new Promise((resolve) => {
      closing.abort();
      for (const timer of expiryTimers.values()) clearTimeout(timer);
      expiryTimers.clear();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    url: baseUrl,
    stop,
    sessions,
    // For stacks that learn the receiver's address only after the emulator is up.
    setWebhookUrl: (next) => {
      if (next && !webhookSecret) {
        throw new Error("setWebhookUrl: the emulator was started without webhookSecret");
      }
      targetUrl = next ?? null;
    },
  };
}
