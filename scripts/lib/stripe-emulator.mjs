// A local stand-in for the slice of the Stripe API the Worker uses (Checkout Sessions in `payment`
// mode, a hosted payment page, signed webhooks), for `npm start` and the tests: no stripe-mock runs
// here and the real API needs the network. It speaks Stripe's wire format (form-encoded requests,
// Stripe's error bodies and status codes, `Stripe-Signature` made by the `stripe` package itself), so
// the Worker's official client talks to it unchanged. It is strict where Stripe is strict, and it
// refuses parameters it does not model rather than silently ignoring them.
import { randomBytes } from "node:crypto";
import http from "node:http";
import Stripe from "stripe";

const debug = (...args) => {
  if (process.env.STRIPE_EMULATOR_DEBUG) console.error("[stripe-emulator]", ...args);
};

// Webhook events carry the API version the pinned `stripe` package was generated for, which is what
// an endpoint created for this integration would be pinned to.
const EVENT_API_VERSION = Stripe.API_VERSION;
// Stripe's minimum and maximum charge for USD; the only currency modelled here.
const MIN_AMOUNT_USD = 50;
const MAX_AMOUNT_USD = 99_999_999;
const MAX_LINE_ITEMS = 100;
// Stripe retries failed deliveries for days; here a few quick retries keep tests fast but still
// exercise a receiver that fails once.
const WEBHOOK_RETRIES = 3;
const WEBHOOK_RETRY_DELAYS_MS = [200, 500, 1000];
const WEBHOOK_TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1_000_000;

// Every top-level parameter Stripe accepts on `POST /v1/checkout/sessions` (the installed package's
// SessionCreateParams, plus payment_method_types from earlier API versions). Anything else is
// `parameter_unknown`, as on Stripe; a Stripe parameter outside SUPPORTED gets a clear "not emulated"
// error instead of being silently ignored.
const STRIPE_CREATE_PARAMS = new Set(
  (
    "adaptive_pricing after_expiration allow_promotion_codes allowed_payment_method_types automatic_tax " +
    "billing_address_collection branding_settings cancel_url client_reference_id consent_collection currency " +
    "custom_fields custom_text customer customer_account customer_creation customer_email customer_update " +
    "discounts excluded_payment_method_types expand expires_at integration_identifier invoice_creation " +
    "line_items locale managed_payments metadata mode name_collection optional_items origin_context " +
    "payment_intent_data payment_method_collection payment_method_configuration payment_method_data " +
    "payment_method_options payment_method_types permissions phone_number_collection redirect_on_completion " +
    "return_url saved_payment_method_options setup_intent_data shipping_address_collection shipping_options " +
    "submit_type subscription_data success_url tax_id_collection ui_mode wallet_options"
  ).split(" "),
);
const SUPPORTED_CREATE_PARAMS = new Set([
  "cancel_url",
  "client_reference_id",
  "currency",
  "customer_email",
  "expand",
  "expires_at",
  "line_items",
  "locale",
  "metadata",
  "mode",
  "submit_type",
  "success_url",
  "ui_mode",
]);
const STRIPE_LINE_ITEM_PARAMS = new Set([
  "adjustable_quantity",
  "dynamic_tax_rates",
  "metadata",
  "price",
  "price_data",
  "quantity",
  "tax_rates",
]);
const SUPPORTED_LINE_ITEM_PARAMS = new Set(["metadata", "price", "price_data", "quantity"]);
const STRIPE_PRICE_DATA_PARAMS = new Set([
  "currency",
  "product",
  "product_data",
  "recurring",
  "tax_behavior",
  "unit_amount",
  "unit_amount_decimal",
]);
const SUPPORTED_PRICE_DATA_PARAMS = new Set([
  "currency",
  "product",
  "product_data",
  "recurring",
  "tax_behavior",
  "unit_amount",
]);
const STRIPE_PRODUCT_DATA_PARAMS = new Set([
  "description",
  "images",
  "metadata",
  "name",
  "tax_code",
  "tax_details",
  "unit_label",
]);
const SUPPORTED_PRODUCT_DATA_PARAMS = new Set(["description", "images", "metadata", "name", "unit_label"]);
const SUBMIT_TYPES = new Set(["auto", "book", "donate", "pay", "subscribe"]);
const TAX_BEHAVIORS = new Set(["exclusive", "inclusive", "unspecified"]);

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const formatUsd = (cents) => usd.format(cents / 100);

const ALPHANUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
function randomId(prefix, length = 24) {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += ALPHANUM[b % ALPHANUM.length];
  return `${prefix}${out}`;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clone = (value) => JSON.parse(JSON.stringify(value));

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

// Stripe distinguishes a parameter it has never heard of from one this emulator just doesn't model;
// the second must fail loudly too, or the Worker could come to depend on behaviour nobody emulates.
function unknownParam(param, stripeKnows) {
  if (!stripeKnows) return invalid(`Received unknown parameter: ${param}`, param, "parameter_unknown");
  return invalid(
    `The local Stripe emulator does not implement the parameter ${param} (Stripe accepts it); ` +
      "remove it or extend scripts/lib/stripe-emulator.mjs.",
    param,
  );
}

function checkKeys(obj, prefix, stripeKnown, supported) {
  for (const key of Object.keys(obj)) {
    if (!supported.has(key)) throw unknownParam(prefix ? `${prefix}[${key}]` : key, stripeKnown.has(key));
  }
}

/**
 * Parses Stripe's form encoding (`a[b][0][c]=v`, `a[]=v`) into nested objects. Indexed arrays stay
 * objects keyed "0", "1", ... until a parameter that is a list asks for them (see `asList`), because
 * `metadata[0]=x` is a hash key, not an array, on Stripe.
 */
function parseForm(text) {
  const root = Object.create(null);
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const m = rawKey.match(/^([^[\]]+)((?:\[[^[\]]*\])*)$/);
    const path = m ? [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])] : [rawKey];
    let node = root;
    for (let i = 0; i < path.length; i++) {
      const last = i === path.length - 1;
      let key = path[i];
      if (key === "") {
        // `a[]=v`: append, like Stripe (and Rack) do.
        if (!Array.isArray(node)) throw invalid("Invalid array", path.slice(0, i).join("."));
        key = String(node.length);
      }
      if (last) {
        node[key] = value;
      } else {
        const nextIsAppend = path[i + 1] === "";
        if (node[key] === undefined) node[key] = nextIsAppend ? [] : Object.create(null);
        if (typeof node[key] !== "object") {
          throw invalid(nextIsAppend ? "Invalid array" : "Invalid hash", bracketName(path.slice(0, i + 1)));
        }
        node = node[key];
      }
    }
  }
  return root;
}

const bracketName = (path) =>
  path[0] +
  path
    .slice(1)
    .map((p) => `[${p}]`)
    .join("");

function asList(value, param) {
  if (Array.isArray(value)) return value;
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.every((k) => /^\d+$/.test(k))) {
      return keys.sort((a, b) => Number(a) - Number(b)).map((k) => value[k]);
    }
  }
  throw invalid("Invalid array", param);
}

function asHash(value, param) {
  if (value && typeof value === "object" && !Array.isArray(value)) return value;
  throw invalid("Invalid hash", param);
}

function asString(value, param, { max } = {}) {
  if (typeof value !== "string") throw invalid(`Invalid string: ${describe(value)}`, param);
  if (value === "") {
    throw invalid(
      `You passed an empty string for '${param}'. We assume empty values are an attempt to unset a ` +
        `parameter; however '${param}' cannot be unset. You should remove '${param}' from your request ` +
        "or supply a non-empty value.",
      param,
      "parameter_invalid_empty",
    );
  }
  if (max && value.length > max) {
    throw invalid(
      `Invalid string: ${value.slice(0, 20)}...; must be at most ${max} characters`,
      param,
      "string_length_exceeded",
    );
  }
  return value;
}

function asInteger(value, param) {
  const text = asString(value, param);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw invalid(`Invalid integer: ${text}`, param, "parameter_invalid_integer");
  }
  return Number(text);
}

const describe = (value) => (typeof value === "string" ? value : JSON.stringify(value));

function asUrl(value, param) {
  const text = asString(value, param, { max: 5000 });
  let parsed;
  try {
    parsed = new URL(text);
  } catch {
    throw invalid("Not a valid URL", param, "url_invalid");
  }
  if (!["http:", "https:"].includes(parsed.protocol) || !parsed.hostname) {
    throw invalid("Not a valid URL", param, "url_invalid");
  }
  // The original string is kept: `new URL` would percent-encode `{CHECKOUT_SESSION_ID}`, and Stripe
  // stores the URL exactly as sent.
  return text;
}

// Stripe's metadata limits: 50 keys, keys up to 40 characters, values up to 500. An empty value
// means "unset", which on create simply leaves the key out.
function asMetadata(value, param) {
  if (value === "") return {};
  const hash = asHash(value, param);
  const out = {};
  for (const [key, v] of Object.entries(hash)) {
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

function asCurrency(value, param) {
  const text = asString(value, param).toLowerCase();
  if (text === "usd") return text;
  if (/^[a-z]{3}$/.test(text)) {
    throw invalid(
      `The local Stripe emulator only models usd; ${param}=${text} is not emulated ` +
        "(other currencies have their own minimums and decimal rules).",
      param,
    );
  }
  throw invalid(`Invalid currency: ${text}.`, param);
}

/** Validates create params in the order Stripe reports problems and builds the line items. */
function buildLineItems(rawItems, created) {
  const items = asList(rawItems, "line_items");
  if (items.length === 0) throw missing("line_items");
  if (items.length > MAX_LINE_ITEMS) {
    throw invalid(`You may only specify up to ${MAX_LINE_ITEMS} line items.`, "line_items");
  }
  return items.map((raw, i) => {
    const p = `line_items[${i}]`;
    const item = asHash(raw, p);
    checkKeys(item, p, STRIPE_LINE_ITEM_PARAMS, SUPPORTED_LINE_ITEM_PARAMS);
    if (item.price !== undefined) {
      // No Price objects exist here, so any price ID is one Stripe would not find either. A missing
      // object named in the body is a 400 on Stripe; 404 is for the object in the URL.
      const id = asString(item.price, `${p}[price]`);
      throw new StripeApiError(400, {
        type: "invalid_request_error",
        code: "resource_missing",
        doc_url: "https://stripe.com/docs/error-codes/resource-missing",
        message: `No such price: '${id}'`,
        param: `${p}[price]`,
      });
    }
    if (item.price_data === undefined) {
      throw invalid(`You must specify either \`price\` or \`price_data\` in ${p}.`, p);
    }
    const pd = asHash(item.price_data, `${p}[price_data]`);
    checkKeys(pd, `${p}[price_data]`, STRIPE_PRICE_DATA_PARAMS, SUPPORTED_PRICE_DATA_PARAMS);
    if (pd.recurring !== undefined) {
      throw invalid(
        "You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.",
        `${p}[price_data][recurring]`,
      );
    }
    if (pd.currency === undefined) throw missing(`${p}[price_data][currency]`);
    const currency = asCurrency(pd.currency, `${p}[price_data][currency]`);
    if (pd.product !== undefined) {
      const id = asString(pd.product, `${p}[price_data][product]`);
      throw new StripeApiError(400, {
        type: "invalid_request_error",
        code: "resource_missing",
        doc_url: "https://stripe.com/docs/error-codes/resource-missing",
        message: `No such product: '${id}'`,
        param: `${p}[price_data][product]`,
      });
    }
    if (pd.product_data === undefined) {
      throw invalid(
        `You must specify either \`product\` or \`product_data\` in ${p}[price_data].`,
        `${p}[price_data]`,
      );
    }
    const prod = asHash(pd.product_data, `${p}[price_data][product_data]`);
    checkKeys(
      prod,
      `${p}[price_data][product_data]`,
      STRIPE_PRODUCT_DATA_PARAMS,
      SUPPORTED_PRODUCT_DATA_PARAMS,
    );
    if (prod.name === undefined) throw missing(`${p}[price_data][product_data][name]`);
    const name = asString(prod.name, `${p}[price_data][product_data][name]`, { max: 5000 });
    if (prod.description !== undefined) {
      asString(prod.description, `${p}[price_data][product_data][description]`);
    }
    if (prod.images !== undefined) {
      asList(prod.images, `${p}[price_data][product_data][images]`).forEach((u, j) => {
        asUrl(u, `${p}[price_data][product_data][images][${j}]`);
      });
    }
    if (prod.metadata !== undefined) asMetadata(prod.metadata, `${p}[price_data][product_data][metadata]`);
    if (prod.unit_label !== undefined) {
      asString(prod.unit_label, `${p}[price_data][product_data][unit_label]`, { max: 12 });
    }
    let taxBehavior = "unspecified";
    if (pd.tax_behavior !== undefined) {
      taxBehavior = asString(pd.tax_behavior, `${p}[price_data][tax_behavior]`);
      if (!TAX_BEHAVIORS.has(taxBehavior)) {
        throw invalid(
          `Invalid tax_behavior: must be one of exclusive, inclusive, or unspecified`,
          `${p}[price_data][tax_behavior]`,
        );
      }
    }
    if (pd.unit_amount === undefined) throw missing(`${p}[price_data][unit_amount]`);
    const unitAmount = asInteger(pd.unit_amount, `${p}[price_data][unit_amount]`);
    if (unitAmount < 0) {
      throw invalid(
        "This value must be greater than or equal to 0.",
        `${p}[price_data][unit_amount]`,
        "parameter_invalid_integer",
      );
    }
    if (item.quantity === undefined) throw missing(`${p}[quantity]`);
    const quantity = asInteger(item.quantity, `${p}[quantity]`);
    if (quantity < 1) {
      throw invalid(
        "This value must be greater than or equal to 1.",
        `${p}[quantity]`,
        "parameter_invalid_integer",
      );
    }
    const metadata = item.metadata === undefined ? {} : asMetadata(item.metadata, `${p}[metadata]`);
    const amount = unitAmount * quantity;
    return {
      id: randomId("li_"),
      object: "item",
      adjustable_quantity: null,
      amount_discount: 0,
      amount_subtotal: amount,
      amount_tax: 0,
      amount_total: amount,
      currency,
      description: name,
      metadata,
      price: {
        id: randomId("price_"),
        object: "price",
        active: false,
        billing_scheme: "per_unit",
        created,
        currency,
        custom_unit_amount: null,
        livemode: false,
        lookup_key: null,
        metadata: {},
        nickname: null,
        product: randomId("prod_", 14),
        recurring: null,
        tax_behavior: taxBehavior,
        tiers_mode: null,
        transform_quantity: null,
        type: "one_time",
        unit_amount: unitAmount,
        unit_amount_decimal: String(unitAmount),
      },
      quantity,
    };
  });
}

function createSession(params, baseUrl) {
  checkKeys(params, "", STRIPE_CREATE_PARAMS, SUPPORTED_CREATE_PARAMS);
  if (params.mode === undefined) throw missing("mode");
  const mode = asString(params.mode, "mode");
  if (mode !== "payment") {
    if (mode === "setup" || mode === "subscription") {
      throw invalid(`The local Stripe emulator only implements mode=payment, not mode=${mode}.`, "mode");
    }
    throw invalid(`Invalid mode: must be one of payment, setup, or subscription`, "mode");
  }
  if (params.ui_mode !== undefined && asString(params.ui_mode, "ui_mode") !== "hosted_page") {
    throw invalid(
      `The local Stripe emulator only implements ui_mode=hosted_page, not ui_mode=${params.ui_mode}.`,
      "ui_mode",
    );
  }
  if (params.line_items === undefined) throw missing("line_items");
  if (params.success_url === undefined) throw missing("success_url");
  const successUrl = asUrl(params.success_url, "success_url");
  const cancelUrl = params.cancel_url === undefined ? null : asUrl(params.cancel_url, "cancel_url");
  const clientReferenceId =
    params.client_reference_id === undefined
      ? null
      : asString(params.client_reference_id, "client_reference_id", { max: 200 });
  let customerEmail = null;
  if (params.customer_email !== undefined) {
    customerEmail = asString(params.customer_email, "customer_email", { max: 800 });
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(customerEmail)) {
      throw invalid(`Invalid email address: ${customerEmail}`, "customer_email", "email_invalid");
    }
  }
  const metadata = params.metadata === undefined ? {} : asMetadata(params.metadata, "metadata");
  const locale = params.locale === undefined ? null : asString(params.locale, "locale");
  let submitType = null;
  if (params.submit_type !== undefined) {
    submitType = asString(params.submit_type, "submit_type");
    if (!SUBMIT_TYPES.has(submitType)) {
      throw invalid(
        "Invalid submit_type: must be one of auto, book, donate, pay, or subscribe",
        "submit_type",
      );
    }
  }
  const created = nowSeconds();
  let expiresAt = created + 24 * 3600;
  if (params.expires_at !== undefined) {
    expiresAt = asInteger(params.expires_at, "expires_at");
    if (expiresAt < created + 30 * 60) {
      throw invalid(
        "The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.",
        "expires_at",
      );
    }
    if (expiresAt > created + 24 * 3600) {
      throw invalid(
        "The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.",
        "expires_at",
      );
    }
  }
  const lineItems = buildLineItems(params.line_items, created);
  const currency = lineItems[0].currency;
  if (params.currency !== undefined && asCurrency(params.currency, "currency") !== currency) {
    throw invalid("`currency` must match the currency of the line items.", "currency");
  }
  const total = lineItems.reduce((sum, li) => sum + li.amount_total, 0);
  if (total < MIN_AMOUNT_USD) {
    throw invalid(
      `The Checkout Session's total amount due must add up to at least ${formatUsd(MIN_AMOUNT_USD)} usd`,
    );
  }
  if (total > MAX_AMOUNT_USD) {
    throw invalid(
      `The Checkout Session's total amount due must be no more than ${formatUsd(MAX_AMOUNT_USD)} usd`,
    );
  }
  const id = randomId("cs_test_", 58);
  // Field set and defaults follow the Checkout Session object of the pinned API version, so a client
  // reading any field gets what a fresh hosted `payment` session on Stripe would have.
  return {
    id,
    object: "checkout.session",
    adaptive_pricing: { enabled: false },
    after_expiration: null,
    allow_promotion_codes: null,
    amount_subtotal: total,
    amount_total: total,
    automatic_tax: { enabled: false, liability: null, provider: null, status: null },
    billing_address_collection: null,
    cancel_url: cancelUrl,
    client_reference_id: clientReferenceId,
    client_secret: null,
    collected_information: null,
    consent: null,
    consent_collection: null,
    created,
    currency,
    currency_conversion: null,
    custom_fields: [],
    custom_text: {
      after_submit: null,
      shipping_address: null,
      submit: null,
      terms_of_service_acceptance: null,
    },
    customer: null,
    customer_account: null,
    customer_creation: "if_required",
    customer_details: null,
    customer_email: customerEmail,
    discounts: [],
    expires_at: expiresAt,
    integration_identifier: null,
    invoice: null,
    invoice_creation: {
      enabled: false,
      invoice_data: {
        account_tax_ids: null,
        custom_fields: null,
        description: null,
        footer: null,
        issuer: null,
        metadata: {},
        rendering_options: null,
      },
    },
    livemode: false,
    locale,
    managed_payments: null,
    metadata,
    mode,
    origin_context: null,
    payment_intent: null,
    payment_link: null,
    payment_method_collection: "if_required",
    payment_method_configuration_details: null,
    payment_method_options: { card: { request_three_d_secure: "automatic" } },
    payment_method_types: ["card"],
    payment_status: "unpaid",
    permissions: null,
    phone_number_collection: { enabled: false },
    recovered_from: null,
    saved_payment_method_options: null,
    setup_intent: null,
    shipping_address_collection: null,
    shipping_cost: null,
    shipping_options: [],
    status: "open",
    submit_type: submitType,
    subscription: null,
    success_url: successUrl,
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
    ui_mode: "hosted_page",
    url: `${baseUrl}/pay/${id}`,
    wallet_options: null,
    _lineItems: lineItems,
    _events: {},
    _webhook: null,
    _deliveries: [],
  };
}

/** The session as the API shows it: bookkeeping fields (leading `_`) never leave the emulator. */
function publicSession(session, expand = []) {
  const out = {};
  for (const [k, v] of Object.entries(session)) if (!k.startsWith("_")) out[k] = v;
  // Only line_items is expandable here; other expansions (payment_intent, customer) name objects the
  // emulator doesn't have, so they stay IDs, which clients must handle anyway.
  if (expand.includes("line_items")) out.line_items = lineItemList(session, {});
  return clone(out);
}

function lineItemList(session, query) {
  const url = `/v1/checkout/sessions/${session.id}/line_items`;
  const items = session._lineItems;
  const limit = query.limit === undefined ? 10 : asInteger(query.limit, "limit");
  if (limit < 1 || limit > 100) {
    throw invalid("This value must be greater than or equal to 1 and less than or equal to 100.", "limit");
  }
  let data = items.slice(0, limit);
  let hasMore = items.length > limit;
  if (query.starting_after !== undefined) {
    const i = items.findIndex((li) => li.id === query.starting_after);
    if (i < 0) {
      throw invalid(`No such line item: '${query.starting_after}'`, "starting_after", "resource_missing");
    }
    data = items.slice(i + 1, i + 1 + limit);
    hasMore = items.length > i + 1 + limit;
  } else if (query.ending_before !== undefined) {
    const i = items.findIndex((li) => li.id === query.ending_before);
    if (i < 0) {
      throw invalid(`No such line item: '${query.ending_before}'`, "ending_before", "resource_missing");
    }
    data = items.slice(Math.max(0, i - limit), i);
    hasMore = i - limit > 0;
  }
  return { object: "list", data: clone(data), has_more: hasMore, url };
}

function maskKey(key) {
  const prefix = key.match(/^(?:sk|rk|pk)_(?:test|live)_/)?.[0] ?? "";
  const rest = key.slice(prefix.length);
  if (rest.length <= 4) return `${prefix}${"*".repeat(rest.length)}`;
  return `${prefix}${"*".repeat(rest.length - 4)}${rest.slice(-4)}`;
}

// Stripe takes the secret key as a Bearer token or as the Basic-auth username.
function presentedKey(req) {
  const header = req.headers.authorization ?? "";
  const bearer = header.match(/^Bearer\s+(.+)$/i);
  if (bearer) return bearer[1].trim();
  const basic = header.match(/^Basic\s+(.+)$/i);
  if (basic) return Buffer.from(basic[1], "base64").toString("utf8").split(":")[0];
  return "";
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

function page(title, body) {
  return `<!doctype html>
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
}

function checkoutPage(session) {
  const row = (li) =>
    `<tr><td>${escapeHtml(li.description)}` +
    `<div class="qty">Qty ${li.quantity} × ${formatUsd(li.price.unit_amount)}</div></td>` +
    `<td class="num">${formatUsd(li.amount_total)}</td></tr>`;
  const rows = session._lineItems.map(row).join("\n");
  const email = session.customer_email;
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
<input id="email" name="email" type="email" value="${escapeHtml(email ?? "test@example.com")}"${email ? " readonly" : ""} required>
<button type="submit" id="pay">Pay ${formatUsd(session.amount_total)}</button>
</form>
${cancel}`,
  );
}

function safeDecode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const successRedirect = (session) => session.success_url.replaceAll("{CHECKOUT_SESSION_ID}", session.id);

export async function startStripeEmulator({ port = 0, webhookUrl, webhookSecret, apiKey } = {}) {
  if (!apiKey) throw new Error("startStripeEmulator: apiKey is required");
  if (webhookUrl && !webhookSecret) throw new Error("startStripeEmulator: webhookUrl needs webhookSecret");
  let targetUrl = webhookUrl ?? null;
  const sessions = new Map();
  const idempotency = new Map();
  const expiryTimers = new Map();
  // Aborts webhook deliveries still in flight when the emulator stops, so `stop` never hangs on them.
  const closing = new AbortController();
  let baseUrl = "";

  /** One POST of one event, signed afresh per attempt as Stripe does. Returns the delivery record. */
  async function deliverOnce(session, event, attempt) {
    const record = { event: event.id, type: event.type, attempt, status: null, error: null, at: Date.now() };
    session._deliveries.push(record);
    if (!targetUrl) {
      record.error = "no webhookUrl configured";
      return record;
    }
    // Stripe sends the event pretty-printed; receivers that re-serialize instead of verifying the
    // raw bytes fail here just as they would in production.
    const payload = JSON.stringify(event, null, 2);
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: webhookSecret });
    try {
      const res = await fetch(targetUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          accept: "*/*; q=0.5, application/xml",
          "cache-control": "no-cache",
          "stripe-signature": signature,
        },
        body: payload,
        // Stripe treats a redirect as a failed delivery rather than following it.
        redirect: "manual",
        signal: AbortSignal.any([AbortSignal.timeout(WEBHOOK_TIMEOUT_MS), closing.signal]),
      });
      await res.arrayBuffer().catch(() => {});
      record.status = res.status;
    } catch (err) {
      // undici hides the reason (ECONNREFUSED, a timeout) in `cause`; "fetch failed" alone says nothing.
      const cause = err?.cause;
      record.error = String(cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message ?? err?.message ?? err);
    }
    debug("delivered", event.type, event.id, "attempt", attempt, "->", record.status ?? record.error);
    return record;
  }

  /** Delivers with Stripe-style retries on network errors and non-2xx answers. */
  async function deliver(session, event) {
    const statuses = [];
    let ok = false;
    let lastError = null;
    for (let attempt = 1; attempt <= 1 + WEBHOOK_RETRIES && !closing.signal.aborted; attempt++) {
      if (attempt > 1) await sleep(WEBHOOK_RETRY_DELAYS_MS[attempt - 2]);
      const { status, error } = await deliverOnce(session, event, attempt);
      statuses.push(status);
      lastError = error ?? `HTTP ${status}`;
      if (status !== null && status >= 200 && status < 300) {
        ok = true;
        break;
      }
      if (!targetUrl) break;
    }
    session._webhook = {
      event: event.id,
      type: event.type,
      delivered: ok,
      attempts: statuses.length,
      lastStatus: statuses.at(-1) ?? null,
      lastError: ok ? null : lastError,
    };
    return statuses;
  }

  function makeEvent(session, type) {
    const event = {
      id: randomId("evt_test_"),
      object: "event",
      api_version: EVENT_API_VERSION,
      created: nowSeconds(),
      data: { object: publicSession(session) },
      livemode: false,
      pending_webhooks: 1,
      // Completion and expiry are caused by the customer or the clock, not by an API request.
      request: { id: null, idempotency_key: null },
      type,
    };
    session._events[type] = event;
    return event;
  }

  // Marks an open session expired and emits `checkout.session.expired`; a no-op otherwise.
  async function expire(session) {
    if (session.status !== "open") return [];
    clearTimeout(expiryTimers.get(session.id));
    expiryTimers.delete(session.id);
    session.status = "expired";
    session.url = null;
    return deliver(session, makeEvent(session, "checkout.session.expired"));
  }

  function scheduleExpiry(session) {
    const timer = setTimeout(
      () => {
        expire(session).catch((err) => debug("expiry failed:", err));
      },
      Math.max(0, session.expires_at * 1000 - Date.now()),
    );
    timer.unref();
    expiryTimers.set(session.id, timer);
  }

  // Sessions whose expiry passed while nothing was looking are expired before anyone reads them.
  async function lookup(id) {
    const session = sessions.get(id);
    if (session && session.status === "open" && session.expires_at <= nowSeconds()) await expire(session);
    return session;
  }

  function noSuchSession(id) {
    return new StripeApiError(404, {
      type: "invalid_request_error",
      code: "resource_missing",
      doc_url: "https://stripe.com/docs/error-codes/resource-missing",
      message: `No such checkout.session: '${id}'`,
      param: "session",
    });
  }

  const expandList = (query) => (query.expand === undefined ? [] : asList(query.expand, "expand"));

  const api = [
    {
      method: "POST",
      pattern: /^\/v1\/checkout\/sessions$/,
      handler: ({ params, rawBody, idempotencyKey, key }) => {
        // Stripe replays the stored response for a repeated key, and refuses the key for a request
        // with different parameters. Only successful creates are stored: Stripe saves no result for
        // a request that failed validation, so a corrected retry with the same key goes through.
        const slot = idempotencyKey ? `${key}\n${idempotencyKey}` : null;
        const prior = slot && idempotency.get(slot);
        if (prior) {
          if (prior.fingerprint !== `POST /v1/checkout/sessions\n${rawBody}`) {
            throw new StripeApiError(400, {
              type: "idempotency_error",
              message:
                "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
                `Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            });
          }
          return { status: 200, body: prior.body, replayed: prior.requestId };
        }
        const session = createSession(params, baseUrl);
        sessions.set(session.id, session);
        scheduleExpiry(session);
        const body = publicSession(session, expandList(params));
        if (slot) idempotency.set(slot, { fingerprint: `POST /v1/checkout/sessions\n${rawBody}`, body });
        return { status: 200, body, remember: slot };
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/checkout\/sessions\/([^/]+)$/,
      handler: async ({ match, params }) => {
        const session = await lookup(match[1]);
        if (!session) throw noSuchSession(match[1]);
        return { status: 200, body: publicSession(session, expandList(params)) };
      },
    },
    {
      method: "GET",
      pattern: /^\/v1\/checkout\/sessions\/([^/]+)\/line_items$/,
      handler: async ({ match, params }) => {
        const session = await lookup(match[1]);
        if (!session) throw noSuchSession(match[1]);
        return { status: 200, body: lineItemList(session, params) };
      },
    },
  ];

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
    const version = req.headers["stripe-version"];
    const headers = { "request-id": requestId, "stripe-version": version ?? EVENT_API_VERSION };
    const idempotencyKey = req.method === "POST" ? req.headers["idempotency-key"] : undefined;
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    const fail = (err) => sendJson(res, err.status, { error: err.error }, headers);
    try {
      const key = presentedKey(req);
      if (!key) {
        throw new StripeApiError(401, {
          type: "invalid_request_error",
          message:
            "You did not provide an API key. You need to provide your API key in the Authorization header, " +
            "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
            "for details, or we can help at https://support.stripe.com/.",
        });
      }
      if (key !== apiKey) {
        throw new StripeApiError(401, {
          type: "invalid_request_error",
          message: `Invalid API Key provided: ${maskKey(key)}`,
        });
      }
      if (version !== undefined && !/^\d{4}-\d{2}-\d{2}(\.[a-z]+)?$/.test(version)) {
        throw invalid(`Invalid Stripe API version: ${version}`);
      }
      if (idempotencyKey && idempotencyKey.length > 255) {
        throw invalid("Idempotency-Key must be at most 255 characters long.");
      }
      const route = api.find((r) => r.method === req.method && r.pattern.test(pathname));
      if (!route) {
        throw new StripeApiError(404, {
          type: "invalid_request_error",
          message:
            `Unrecognized request URL (${req.method}: ${pathname}). Please see https://stripe.com/docs or we ` +
            "can help at https://support.stripe.com/. (The local Stripe emulator implements only " +
            "POST /v1/checkout/sessions, GET /v1/checkout/sessions/:id and GET /v1/checkout/sessions/:id/line_items.)",
        });
      }
      let rawBody = "";
      if (req.method === "POST") {
        rawBody = await readBody(req);
        const type = req.headers["content-type"] ?? "";
        if (rawBody && !type.startsWith("application/x-www-form-urlencoded")) {
          throw invalid(
            `Invalid request: v1 bodies must be application/x-www-form-urlencoded, not ${type || "untyped"}.`,
          );
        }
      }
      const params = parseForm(req.method === "POST" ? rawBody : search.slice(1));
      const match = pathname.match(route.pattern).map((s, i) => (i ? safeDecode(s) : s));
      const result = await route.handler({ params, rawBody, idempotencyKey, key, match });
      if (result.replayed) {
        headers["idempotent-replayed"] = "true";
        headers["original-request"] = result.replayed;
      } else if (result.remember) {
        idempotency.get(result.remember).requestId = requestId;
      }
      debug(req.method, pathname, result.status);
      sendJson(res, result.status, result.body, headers);
    } catch (err) {
      if (!(err instanceof StripeApiError)) {
        debug(req.method, pathname, err);
        // Stripe's client retries 5xx; that is fine, a bug here should be loud, not swallowed.
        return fail(
          new StripeApiError(500, { type: "api_error", message: `stripe-emulator: ${err.message}` }),
        );
      }
      debug(req.method, pathname, err.status, err.message);
      fail(err);
    }
  }

  const notFoundPage = () =>
    page(
      "Not found",
      `<h1>Something went wrong</h1>
<p class="note">The page you were looking for could not be found. This Checkout Session does not exist or has expired.</p>`,
    );

  async function handlePay(req, res, id) {
    const session = await lookup(id);
    if (req.method === "GET") {
      if (!session || session.status === "expired") return sendHtml(res, 404, notFoundPage());
      if (session.status === "complete") {
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
      return sendHtml(res, 200, checkoutPage(session));
    }
    const body = new URLSearchParams(await readBody(req));
    if (!session || session.status === "expired") return sendHtml(res, 404, notFoundPage());
    // A second submit (double click, retry) must not pay or notify twice.
    if (session.status === "open") {
      const email = session.customer_email ?? (body.get("email") || "test@example.com");
      // All state changes happen before the first await, so a concurrent submit sees `complete`.
      clearTimeout(expiryTimers.get(session.id));
      expiryTimers.delete(session.id);
      session.status = "complete";
      session.payment_status = "paid";
      session.payment_intent = randomId("pi_test_");
      session.url = null;
      session.collected_information = { business_name: null, individual_name: null, shipping_details: null };
      session.customer_details = {
        address: null,
        business_name: null,
        email,
        individual_name: null,
        name: null,
        phone: null,
        tax_exempt: "none",
        tax_ids: [],
      };
      // Stripe redirects without waiting for the webhook; waiting here makes local runs deterministic
      // (the Worker has seen the event when the success page loads). Tests of the race can hold
      // delivery back with setWebhookUrl(null) and send the event later with resend-webhook.
      await deliver(session, makeEvent(session, "checkout.session.completed"));
    }
    res.writeHead(303, { location: successRedirect(session), "content-length": 0 });
    res.end();
  }

  async function handleHelper(req, res, id, action) {
    const session = sessions.get(id);
    if (!session) {
      return sendJson(res, 404, {
        error: { type: "invalid_request_error", message: `No such checkout.session: '${id}'` },
      });
    }
    let options = {};
    const text = await readBody(req);
    if (text.trim()) {
      try {
        options = JSON.parse(text);
      } catch (err) {
        return sendJson(res, 400, {
          error: { type: "invalid_request_error", message: `invalid JSON body: ${err.message}` },
        });
      }
    }
    if (action === "expire") {
      if (session.status === "complete") {
        return sendJson(res, 400, {
          error: {
            type: "invalid_request_error",
            message: "This Checkout Session is complete and cannot expire.",
          },
        });
      }
      const delivered = await expire(session);
      return sendJson(res, 200, {
        delivered,
        event: session._events["checkout.session.expired"]?.id ?? null,
      });
    }
    // resend-webhook: the latest event again, same id and payload, one attempt per delivery, so a
    // receiver's duplicate handling sees exactly what Stripe's at-least-once delivery can produce.
    const event =
      session._events["checkout.session.completed"] ?? session._events["checkout.session.expired"];
    if (!event) {
      return sendJson(res, 400, {
        error: {
          type: "invalid_request_error",
          message: "This Checkout Session has no event yet; pay or expire it first.",
        },
      });
    }
    const times = Number.isInteger(options.times) && options.times > 0 ? Math.min(options.times, 50) : 1;
    let delivered;
    if (options.concurrent) {
      const records = await Promise.all(
        Array.from({ length: times }, (_, i) => deliverOnce(session, event, i + 1)),
      );
      delivered = records.map((r) => r.status);
    } else {
      delivered = [];
      for (let i = 0; i < times; i++) delivered.push((await deliverOnce(session, event, i + 1)).status);
    }
    sendJson(res, 200, { delivered, event: event.id });
  }

  const server = http.createServer(async (req, res) => {
    const { pathname, search } = new URL(req.url, "http://x");
    try {
      if (pathname.startsWith("/v1/")) return await handleApi(req, res, pathname, search);
      const pay = pathname.match(/^\/pay\/([^/]+)$/);
      if (pay && (req.method === "GET" || req.method === "POST")) {
        return await handlePay(req, res, safeDecode(pay[1]));
      }
      const helper = pathname.match(/^\/_emulator\/sessions\/([^/]+)\/(resend-webhook|expire)$/);
      if (helper && req.method === "POST") {
        return await handleHelper(req, res, safeDecode(helper[1]), helper[2]);
      }
      sendJson(res, 404, {
        error: {
          type: "invalid_request_error",
          message: `Unrecognized request URL (${req.method}: ${pathname}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
        },
      });
    } catch (err) {
      debug(req.method, pathname, err);
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, { error: { type: "api_error", message: String(err?.message ?? err) } });
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
