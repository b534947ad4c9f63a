import { isHttpUrl, stripeApiBaseProblem } from "./config-urls";
import type { Bindings } from "./env";
import { keyedUrl, keyPieces, redactUrl } from "./redact";
import { flag, varText } from "./var-text";

export { flag };

export const INTERFACE_VERSION = "2.7.1";

/**
 * Why STRIPE_SECRET_KEY cannot take money here, if it cannot: STRIPE_MODE ("live" unless set) says
 * which of Stripe's modes this deployment sells in, and a key of the other mode (sk_test_/rk_test_
 * in production) would sell credits for Stripe's test card, or (live in the tests) charge real
 * cards. Card payments are off then (stripeClient, cardpayEnabled). Undefined when the key fits or
 * is unset.
 */
export const stripeKeyProblem = (env: Bindings) => stripeSetupProblem(env)?.error;

/**
 * stripeKeyProblem with what is wrong: the key or STRIPE_MODE (`key`), or the origin it would be
 * sent to (`api base`), each logged under its own msg (stripe.ts).
 */
export function stripeSetupProblem(env: Bindings): { kind: "key" | "api base"; error: string } | undefined {
  const mode = stripeMode(env);
  if (mode !== "live" && mode !== "test")
    return { kind: "key", error: `STRIPE_MODE "${env.STRIPE_MODE}" is neither "live" nor "test"` };
  const key = varText(env.STRIPE_SECRET_KEY);
  if (!key) return undefined;
  const keyMode = /^[sr]k_(live|test)_/.exec(key)?.[1];
  if (keyMode !== mode)
    return {
      kind: "key",
      error: keyMode
        ? `STRIPE_SECRET_KEY is a ${keyMode}-mode key and STRIPE_MODE is "${mode}"`
        : `STRIPE_SECRET_KEY is neither a live nor a test key (sk_live_, sk_test_, rk_live_ or rk_test_)`,
    };
  const base = stripeApiBaseProblem(env.STRIPE_API_BASE, mode);
  return base ? { kind: "api base", error: base } : undefined;
}

/** STRIPE_MODE as set, "live" when unset (production's; wrangler.toml ships it). String(): as flag(). */
const stripeMode = (env: Bindings) => varText(env.STRIPE_MODE).trim() || "live";

/** Whether a webhook event's `livemode` is this deployment's STRIPE_MODE (an event without one is Stripe's). */
export const stripeEventModeFits = (env: Bindings, livemode: unknown) =>
  typeof livemode !== "boolean" || livemode === (stripeMode(env) === "live");

/** The shortest ADMIN_TOKEN accepted: a one-character token was accepted and guessable in a few tries. */
export const ADMIN_TOKEN_MIN_LENGTH = 24;

/** Why ADMIN_TOKEN opens nothing, if it does not: unset, or too short to resist guessing. */
export function adminTokenProblem(env: Bindings): string | undefined {
  const raw: unknown = env.ADMIN_TOKEN;
  // Only a string is a token: Hono's bearerAuth accepts any element of an array (["a", …] let
  // `Bearer a` in) and compares a number with nothing (every token a 401). Never quoted.
  if (raw !== undefined && raw !== null && typeof raw !== "string")
    return "ADMIN_TOKEN is not text: set it as a string secret (wrangler secret put ADMIN_TOKEN)";
  const token = varText(raw);
  if (!token) return "set the ADMIN_TOKEN secret";
  if (token.length < ADMIN_TOKEN_MIN_LENGTH)
    return `ADMIN_TOKEN is shorter than ${ADMIN_TOKEN_MIN_LENGTH} characters: set a longer one (e.g. openssl rand -base64 32)`;
  return undefined;
}

/** PARTNERS_ENABLED = "false": a deployment without partner agreements lists and sells no partner. */
export const partnersEnabled = (env: Bindings) => flag(env.PARTNERS_ENABLED, true);
/** X402_ENABLED and FREE_BETA as the catalog reads them: whether calls are sold over x402 at all. */
export const x402Selling = (env: Bindings) => flag(env.X402_ENABLED, true) && !flag(env.FREE_BETA, false);

/**
 * RATE_LIMITS: on unless set to a word for off (the quotas and the published contract read it).
 * An unquoted `false` is a boolean binding: read through String(), as flag() does (a 500 on every request).
 */
export const rateLimitsOn = (env: Bindings) => !/^(0|false|no|off)$/i.test(varText(env.RATE_LIMITS).trim());

const list = (value: string | undefined) =>
  varText(value)
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);

/** RATE_LIMIT_HEAVY as a list, parsed once per bindings object (the quotas read it per paid call). */
export function heavyResources(env: Bindings): readonly string[] {
  let heavy = heavyByEnv.get(env);
  if (!heavy) {
    heavy = Object.freeze(list(env.RATE_LIMIT_HEAVY));
    heavyByEnv.set(env, heavy);
  }
  return heavy;
}
const heavyByEnv = new WeakMap<Bindings, readonly string[]>();

/** Secrets replaced verbatim wherever they appear in a log line or an error text. */
const VERBATIM_SECRETS = [
  "STRIPE_SECRET_KEY",
  "STRIPE_WEBHOOK_SECRET",
  "ADMIN_TOKEN",
  "CDP_API_KEY_SECRET",
  "PARTNER_PAYER_KEY",
] as const;

/**
 * Log text with the secrets hidden. The RPC endpoint: providers put their API key in its path,
 * and viem writes the whole URL into its errors ("URL: https://…/v2/KEY"); its origin stays, so
 * a log still says which provider failed. FACILITATOR_URL alike unless it shows no key (a plain
 * path, no query or userinfo: `keyedUrl`), whose error pages quote its path ("Cannot GET
 * /v2/KEY/supported"). Then any secret's value (and the receipt key's private `d`), should an
 * error quote it, also as it appears inside JSON text (a PEM's newlines as `\n`). Longest first,
 * so a secret containing another is hidden whole. Not caught: URL-encoded or base64 forms.
 */
export function redactSecrets(text: string, env: Bindings): string {
  const hide: [string, string][] = [];
  const rpc = varText(env.RPC_URL).trim();
  const facilitator = varText(env.FACILITATOR_URL).trim();
  let rpcOrigin: string | undefined;
  for (const [url, whole] of [
    [rpc, "<RPC_URL>"],
    [facilitator && keyedUrl(facilitator) ? facilitator : undefined, redactUrl(facilitator ?? "")],
  ] as const) {
    if (!url) continue;
    hide.push([url, whole]);
    try {
      const { origin, pathname, search } = new URL(url);
      if (url === rpc) rpcOrigin = origin;
      // The path and query whole, but not a plain path alone ("/x402-facilitator"): a line needs
      // it to say which endpoint failed.
      const pieces = keyPieces(url);
      if (search || pieces.some((p) => pathname.includes(p)))
        hide.push([`${pathname}${search}`, "/<redacted>"]);
      for (const piece of pieces) hide.push([piece, "<redacted>"]);
    } catch {}
  }
  const values: (string | undefined)[] = VERBATIM_SECRETS.map((name) => varText(env[name]).trim());
  values.push(/"d"\s*:\s*"([^"]+)"/.exec(varText(env.RECEIPT_SIGNING_KEY))?.[1]);
  // Short values could match ordinary text; none of these is short when it is a real secret.
  for (const value of values) if (value && value.length >= 16) hide.push([value, "<redacted>"]);
  for (const [value, by] of [...hide]) {
    const inJson = JSON.stringify(value).slice(1, -1);
    if (inJson !== value) hide.push([inJson, by]);
  }
  let out = text;
  for (const [value, by] of hide.sort((x, y) => y[0].length - x[0].length)) out = out.replaceAll(value, by);
  return rpcOrigin ? out.replaceAll(`${rpcOrigin}/<redacted>`, "<RPC_URL>") : out;
}

const PRIVATE_KEY = /^0x[0-9a-fA-F]{64}$/;
/** secp256k1's group order: a private key is 1 ≤ k < n. */
const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/**
 * The operating wallet's key (PARTNER_PAYER_KEY), when it is one: a malformed value would only
 * fail once a partner caller had been charged, leaving a refund nothing can send, so it counts
 * as unset (partner calls that need it are refused before any charge).
 */
export function operatingKey(env: Bindings): `0x${string}` | undefined {
  const key = varText(env.PARTNER_PAYER_KEY).trim();
  if (!key || !PRIVATE_KEY.test(key)) return undefined;
  const k = BigInt(key);
  return k > 0n && k < CURVE_ORDER ? (key as `0x${string}`) : undefined;
}

/**
 * Public configuration read from vars, with the spec's defaults. Several steps of one request read
 * it (gate, stats, pages), and parsing the request URL for its origin each time showed in the CPU
 * profile of the 402 path: one frozen answer per bindings object and origin, built once.
 */
export function publicConfig(env: Bindings, requestUrl: string): PublicConfig {
  // The runtime hands over absolute, normalized URLs: the origin is everything before the first
  // "/" after the scheme's "//".
  const end = requestUrl.indexOf("/", requestUrl.indexOf("//") + 2);
  const origin = end < 0 ? requestUrl : requestUrl.slice(0, end);
  let byOrigin = memo.get(env);
  if (!byOrigin) {
    byOrigin = new Map();
    memo.set(env, byOrigin);
  }
  let cfg = byOrigin.get(origin);
  if (!cfg) {
    // The Host header picks the origin: bounded, so made-up hosts cannot grow the map.
    if (byOrigin.size >= MAX_ORIGINS) byOrigin.clear();
    cfg = build(env, origin);
    byOrigin.set(origin, cfg);
  }
  return cfg;
}

const MAX_ORIGINS = 16;
const memo = new WeakMap<Bindings, Map<string, PublicConfig>>();

/**
 * BASE_URL when it is an absolute http(s) URL, else undefined. One without a scheme
 * ("skills.example.com") made every paid call and MCP call a 500 (receipts' did:web cannot be
 * derived from it) and every checkout a 502 "try again" (Stripe refuses its return URLs).
 */
function baseUrlOf(env: Bindings): string | undefined {
  const raw = varText(env.BASE_URL).trim();
  if (!raw) return undefined;
  return isHttpUrl(raw) ? raw : undefined;
}

function build(env: Bindings, origin: string) {
  const configured = baseUrlOf(env);
  // A malformed BASE_URL counts as unset (the request's origin, as documented for an empty one),
  // said once per bindings object and origin (this runs once for each: publicConfig's memo).
  if (!configured && varText(env.BASE_URL).trim())
    console.error(
      JSON.stringify({
        level: "error",
        msg: "BASE_URL is not an absolute http(s) URL: the request's origin is used instead",
        base_url: env.BASE_URL,
      }),
    );
  const base = (configured ?? new URL(origin).origin).replace(/\/+$/, "");
  const ownershipProofs = list(env.X402_OWNERSHIP_PROOFS);
  const x402listTokens = list(env.X402LIST_TOKENS);
  return Object.freeze({
    baseUrl: base,
    // Read as text, as flag() reads switches: an unquoted number changed after deploy arrives as a
    // JSON binding, and the address checks' .trim() made every paid call a 500.
    payTo: varText(env.PAY_TO),
    network: varText(env.X402_NETWORK),
    usdcAddress: varText(env.USDC_ADDRESS),
    facilitatorUrl: varText(env.FACILITATOR_URL),
    x402Enabled: flag(env.X402_ENABLED, true),
    // Card payments need the Stripe key and the webhook's secret: without the second, refunds and
    // disputes would never take credits back. Without either, or with a key of the other Stripe
    // mode, the flag reads false whatever CARDPAY_ENABLED says.
    cardpayEnabled:
      flag(env.CARDPAY_ENABLED, true) &&
      varText(env.STRIPE_SECRET_KEY) !== "" &&
      varText(env.STRIPE_WEBHOOK_SECRET) !== "" &&
      stripeKeyProblem(env) === undefined,
    freeBeta: flag(env.FREE_BETA, false),
    rateLimits: rateLimitsOn(env),
    heavyResources: heavyResources(env),
    contactEmail: varText(env.CONTACT_EMAIL),
    ownershipProofs: Object.freeze(ownershipProofs) as string[],
    x402listTokens: Object.freeze(x402listTokens) as string[],
  });
}
export type PublicConfig = ReturnType<typeof build>;
