import type { Context, MiddlewareHandler, Next } from "hono";
import { heavyResources, rateLimitsOn } from "../config";
import type { AppEnv, Bindings } from "../env";
import { detail } from "../http/errors";
import { RATE_LIMIT_SKIP_MS } from "../http/limits";
import { throttledLog } from "../http/log-once";
import { requestConfig } from "../http/request-config";
import { callerNetwork, callerNetworks } from "../net/ip-ranges";
import { isSoldPerCall } from "../partners/pricing";
import { partnerConfigOf, tryTargetOf } from "../partners/request";
import { bearerKey, cardKeyAuthorization, hashKey } from "./credits";
import { LIMITS, type Limiter, NETWORK_MULTIPLES, PERIOD_SECONDS, WIDER } from "./rate-limit-figures";

export { LIMITS, NETWORK_MULTIPLES };

/**
 * Rate limits with the Workers Rate Limiting binding (wrangler.toml [[ratelimits]]; miniflare runs
 * the same binding in wrangler dev and vitest). The per-IP and card-key checks happen before the
 * payment gate; the per-payer check right after the facilitator verified the payment (so it counts
 * only signatures its payer made). A limited call is never claimed, settled or charged. Figures:
 * docs/OPERATIONS.md.
 */

/** What a deployment's rate limits are, in words (the terms for autonomous agents publish it). */
export function rateLimitTerms(env: {
  on: boolean;
  heavy: readonly string[];
  freeHeavySkills?: readonly string[];
}) {
  if (!env.on)
    return "None enforced by the marketplace (RATE_LIMITS is off); Cloudflare's platform limits apply.";
  const heavy = env.heavy.length ? ` (${LIMITS.RL_PAYER_HEAVY} for ${env.heavy.join(", ")})` : "";
  // In free beta the heavy skills are unpaid, so such free routes (quota's freeInBeta).
  const free = env.freeHeavySkills ?? [];
  const betaHeavy = free.length ? ` (free beta: calls of ${free.join(", ")} too)` : "";
  return `Per ${PERIOD_SECONDS} s, nothing charged past a limit: ${LIMITS.RL_IP} requests per client IP to priced routes, paid or not (checked before any payment work); ${LIMITS.RL_PAYER} paid calls per card key per resource (before any payment work) or per payer address per resource (counted once the facilitator has verified the payment's signature, so a payment forged in another address's name never spends that address's budget)${heavy}; ${LIMITS.RL_FREE} per client IP and route on free routes that cost an upstream request or a Stripe session${betaHeavy}; ${LIMITS.RL_FREE} per client IP to checks on chain of a contract wallet's signature (a retry under a payment id already answered, whose signature only the chain can prove); ${LIMITS.RL_IP} per client IP to the checkout success page. A client IP is an IPv4 address or an IPv6 /64; an IPv6 caller's /56 and /48 are also limited, to ${NETWORK_MULTIPLES[56]} and ${NETWORK_MULTIPLES[48]} times each per-IP limit (a call refused for a narrower network is not counted for a wider one). Over a limit: 429 with Retry-After and reason rate_limited; nothing is charged. Counted per Cloudflare location.`;
}

type Scope = "ip" | "payer" | "key" | "free";
/** A Rate Limiting binding's name: a per-client one or its /56 or /48 companion. */
type LimiterName = keyof typeof LIMITS;

// Read once per bindings object (an isolate's env does not change between its requests).
const enabledFor = new WeakMap<Bindings, boolean>();
function enabled(env: Bindings) {
  let on = enabledFor.get(env);
  if (on === undefined) {
    on = rateLimitsOn(env);
    enabledFor.set(env, on);
  }
  return on;
}

const clientIp = (c: Context<AppEnv>) => callerNetwork(c.req.header("cf-connecting-ip"));

/** Whether `resource` is limited per payer by RL_PAYER_HEAVY (RATE_LIMIT_HEAVY). */
export function isHeavy(env: Bindings, resource: string) {
  return heavyResources(env).some(
    (entry) => entry === resource || (entry === "partner:*" && resource.startsWith("partner:")),
  );
}

function tooMany(c: Context<AppEnv>, scope: Scope, what: string) {
  return detail(
    c,
    429,
    `Too many requests: ${what}. Retry after ${PERIOD_SECONDS} s; nothing was charged.`,
    { reason: "rate_limited", scope, retry_after: PERIOD_SECONDS },
    { "Retry-After": String(PERIOD_SECONDS) },
  );
}

/**
 * A binding that throws or answers nonsense lets the call through (fail open), rather than
 * refusing every priced route with a 503 (or, unguarded, a bare 500 after /verify). Cloudflare documents limit() as answered from counters cached on
 * the Worker's own machine (no network request awaited) and the API as "permissive, eventually
 * consistent, and intentionally designed to not be used as an accurate accounting system"
 * (developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/, Performance and Accuracy):
 * a fault there is rare and these limits are a flood guard, never what makes a call paid. What
 * does stays on: an x402 call is still verified, claimed once and settled, a card call still
 * spends its credit, so failing open costs nothing owed, only the cap on the facilitator's
 * /verify, the upstream requests and Stripe sessions while the fault lasts. A 503 would turn a
 * fault of this guard into an outage of every priced route, the admin API and the checkout page.
 * One line per isolate a minute says so (a lasting fault keeps showing).
 *
 * After a fault that binding is not asked for RATE_LIMIT_SKIP_MS in this isolate. A limit() that
 * never answers is not raced against a timer of ours: it answers from memory, and the timer cost
 * 5–15 µs of CPU per limit() call in workerd (one to three on every priced call, free-beta ones
 * included: issue 14's hot path), for a fault the platform's design leaves no way to.
 */
const limiterFault = throttledLog(60_000);
const skipUntil = new WeakMap<RateLimit, number>();

async function allowed(env: Bindings, name: LimiterName, key: string) {
  const limiter = env[name];
  // A deployment without the binding is not limited rather than broken (deploy-check refuses a
  // wrangler.toml without it, unless RATE_LIMITS is off).
  if (!limiter) return true;
  const skip = skipUntil.get(limiter);
  if (skip !== undefined) {
    if (Date.now() < skip) return true;
    skipUntil.delete(limiter);
  }
  try {
    const { success } = await limiter.limit({ key });
    if (typeof success !== "boolean") throw new TypeError(`rate limiter ${name} answered no success flag`);
    return success;
  } catch (e) {
    skipUntil.set(limiter, Date.now() + RATE_LIMIT_SKIP_MS);
    limiterFault({
      level: "error",
      msg: "rate limiter unavailable: calls let through unlimited",
      binding: name,
      error: String(e),
    });
    return true;
  }
}

/**
 * Counts a call against a per-IP budget on `limiter`, keyed `key(network)`, in each network of
 * the caller's (callerNetworks: the address or /64, then an IPv6 caller's /56 and /48 on the
 * `_56`/`_48` bindings). Undefined when every one allows it; else words for whose budget ran out.
 * One at a time, narrowest first: a call refused for its /64 spends nothing of its /48's budget,
 * so a client over its own limit cannot go on using up its neighbours'.
 */
async function ipRefusal(c: Context<AppEnv>, limiter: Limiter, key: (network: string) => string) {
  const [own, ...wider] = callerNetworks(c.req.header("cf-connecting-ip"));
  if (!(await allowed(c.env, limiter, key(own)))) return "from your IP address";
  for (const [i, network] of wider.entries()) {
    const bits = WIDER[i] as (typeof WIDER)[number];
    if (!(await allowed(c.env, `${limiter}_${bits}`, key(network)))) return `from your network ${network}`;
  }
  return undefined;
}

/**
 * Limits a priced route: every request per client IP (RL_IP, the unpaid-402 flood cap), and one
 * paid with a card-credit key also per key for this resource (RL_PAYER, or RL_PAYER_HEAVY for
 * resources listed in RATE_LIMIT_HEAVY). x402 payers are limited by payerQuota, after /verify.
 * `freeInBeta` (the skills): FREE_BETA lets the call through unpaid, so one that costs upstream
 * requests (RATE_LIMIT_HEAVY) is a free route that does, limited like one (RL_FREE): no payer
 * or key limit would ever apply to it.
 */
export function quota(resource: string, opts: { freeInBeta?: boolean } = {}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!enabled(c.env)) return next();
    const ipRefused = await ipRefusal(c, "RL_IP", (net) => `ip:${net}`);
    if (ipRefused) return tooMany(c, "ip", `too many calls to priced routes ${ipRefused}`);
    if (requestConfig(c).freeBeta) {
      const freeRefused =
        opts.freeInBeta && isHeavy(c.env, resource)
          ? await ipRefusal(c, "RL_FREE", (net) => `${resource}|ip:${net}`)
          : undefined;
      if (freeRefused) return tooMany(c, "free", `too many ${resource} requests ${freeRefused}`);
    } else {
      // Every form the gate takes a card key in (X-API-Key, a bare `mk_…`), so no alias escapes it.
      const key = bearerKey(cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key")));
      if (
        key &&
        !(await allowed(c.env, payerLimiter(c.env, resource), `${resource}|key:${await hashKey(key)}`))
      ) {
        return tooMany(c, "key", `too many ${resource} calls with this card-credit key`);
      }
    }
    await next();
  };
}

const payerLimiter = (env: Bindings, resource: string): LimiterName =>
  isHeavy(env, resource) ? "RL_PAYER_HEAVY" : "RL_PAYER";

/**
 * Limits x402 calls per payer address and resource. It runs after the gate, on a payment the
 * facilitator verified: keyed on the payload's unverified `from` before the gate, anyone
 * could sign garbage in another address's name and use up that payer's budget. Garbage still
 * counts against its sender's IP (quota); a payer over the limit costs one /verify per call, and
 * the 429 is never settled (the gate settles only answers below 400).
 */
export function payerQuota(resource: string): MiddlewareHandler<AppEnv> {
  // Not async when there is nothing to count: every unpaid or free call passes here (gate.ts says why).
  return (c, next) => (!enabled(c.env) || !c.get("x402Verified") ? next() : countPayer(c, next, resource));
}

async function countPayer(c: Context<AppEnv>, next: Next, resource: string) {
  const auth = c.get("x402Payment")?.payload.payload as { authorization?: { from?: unknown } } | undefined;
  const from = auth?.authorization?.from;
  if (typeof from === "string") {
    const payer = from.toLowerCase();
    if (!(await allowed(c.env, payerLimiter(c.env, resource), `${resource}|payer:${payer}`))) {
      return tooMany(c, "payer", `too many ${resource} calls paid by ${payer}`);
    }
  }
  await next();
}

/**
 * Limits a free route that costs the marketplace something (an upstream request, a Stripe
 * session), per client IP and route (RL_FREE).
 */
export function freeQuota(route: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!enabled(c.env)) return next();
    const refused = await ipRefusal(c, "RL_FREE", (net) => `${route}|ip:${net}`);
    if (refused) return tooMany(c, "free", `too many ${route} requests ${refused}`);
    await next();
  };
}

/**
 * The proofs on chain of a contract wallet's signature (idempotency.ts), per client IP on RL_FREE
 * (a budget of its own, keyed `payer-proof|ip:…`). Each costs the RPC an eth_getCode and an
 * eth_call, and asking for one takes no payment: only a stored call's payment id, payer and body,
 * with a signature nobody made. An honest wallet's retries are a few a minute. Undefined when
 * the proof may go ahead; else the 429.
 */
export async function payerProofQuota(c: Context<AppEnv>): Promise<Response | undefined> {
  const refused = enabled(c.env)
    ? await ipRefusal(c, "RL_FREE", (net) => `payer-proof|ip:${net}`)
    : undefined;
  return refused
    ? tooMany(c, "free", `too many checks on chain of contract-wallet signatures ${refused}`)
    : undefined;
}

/** A budget of its own per client IP on RL_IP (600 a minute), keyed `<name>|ip:…`. */
const ipBudget =
  (name: string, what: string): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    if (!enabled(c.env)) return next();
    const refused = await ipRefusal(c, "RL_IP", (net) => `${name}|ip:${net}`);
    if (refused) return tooMany(c, "ip", `too many ${what} requests ${refused}`);
    await next();
  };

/**
 * The admin API, per client IP, with the per-IP budget of priced routes (RL_IP, 600 a minute),
 * checked before the bearer token is compared: a weak token cannot be guessed at network speed,
 * while a maintainer's scripts and reconciliation checks (the e2e suite reads the ledgers dozens
 * of times a minute) stay far below it. Sign-ins at /admin/login have their own, tighter budget.
 */
export const adminQuota = ipBudget("admin", "admin API");

/**
 * The checkout success page (GET, HEAD and the Reveal POST), per client IP, a budget of its own on
 * RL_IP (600 a minute). The page is public and reads the session from Stripe while the webhook is
 * late; Stripe allows about 25 reads a second per endpoint on the account, shared with the
 * webhook's own session reads, so unlimited, one open session's page loaded in a loop made real
 * buyers' webhooks get 429s and back off for hours. (The page also keeps Stripe's answer for a few
 * seconds: payments/stripe-views.ts, and the reads it starts have tighter budgets of their own:
 * checkoutStripeReadBudget, checkoutRevealReadBudget.) A buyer's page refreshes every 3 s, 20 a minute, far below it.
 */
export const checkoutPageQuota = ipBudget("checkout-page", "checkout page");

/**
 * The binding that counts the Stripe reads the success page's views start, under keys of its own, and its figure:
 * RL_PAYER_HEAVY's 30 a minute per client IP. The 600 of checkoutPageQuota bounds views, and
 * Stripe's answer is kept per session (payments/stripe-views.ts), but sessions are free to create
 * (RL_FREE, 20 a minute) and stay open 24 h: one IP cycling its views through ~50 open sessions
 * found none kept and made ~10 Stripe reads a second for a day, and three such IPs took Stripe's
 * ~25 a second per endpoint from real buyers' webhooks. At 30 an IP starts at most one read every
 * 2 s. A buyer's waiting page (a view every 3 s, Stripe's answer kept 5 s) starts about 10 a
 * minute per open session: three tabs waiting at once still fit.
 */
const STRIPE_READ_LIMITER = "RL_PAYER_HEAVY" as const;
export const CHECKOUT_STRIPE_READS_PER_MINUTE = LIMITS[STRIPE_READ_LIMITER];

/** A budget for stripeView (payments/stripe-views.ts ReadBudget): its key names it to other callers. */
const stripeReadBudget = (prefix: string) => (c: Context<AppEnv>) => {
  const key = (net: string) => `${prefix}|ip:${net}`;
  return {
    key: key(clientIp(c)),
    mayRead: async () => !enabled(c.env) || !(await ipRefusal(c, STRIPE_READ_LIMITER, key)),
  };
};

/**
 * The success page's GET views' budget of Stripe reads (above) for this request's client IP
 * (`checkout-stripe|ip:…`; a HEAD reads nothing from Stripe, so spends none of it): asked by
 * stripeView only for a read it would start. Over it the page
 * answers from D1 and says the check with Stripe was postponed (no 429: the views themselves have
 * checkoutPageQuota), so a buyer whose session D1 holds granted, or whose page reads a kept view,
 * never notices it.
 */
export const checkoutStripeReadBudget = stripeReadBudget("checkout-stripe");

/**
 * The Reveal POST's budget of Stripe reads, per session: RL_FREE's 20 a minute under
 * `checkout-reveal|session:<id>`. The POST is a buyer's explicit click with the page's token, and
 * when the webhook is late it is the grant. Keyed per IP (30 a minute), anyone on the buyer's
 * network (a shared NAT, a neighbour with free sessions of their own and their tokens) spent it and
 * left the buyer's Reveal postponed with no key. The POST needs that session's HMAC token, which
 * only a holder of the session's success link has, so only they can spend this budget; a buyer
 * clicks a few times at most (Stripe's answer is kept 5 s besides: stripe-views.ts).
 */
const REVEAL_SESSION_LIMITER = "RL_FREE" as const;
export const CHECKOUT_REVEAL_READS_PER_SESSION = LIMITS[REVEAL_SESSION_LIMITER];

/**
 * And per client IP, a wide cap (RL_PAYER's 120 a minute, `checkout-reveal|ip:…`) against one
 * holder of many tokens: sessions are free (RL_FREE's 20 checkouts a minute per IP bounds how fast
 * one gets them, not how many: they stay open 24 h), so with no cap an IP holding ~50 could
 * make ~10 reads a second through Reveal POSTs alone, the rate the views' budget was made to stop.
 * A neighbour must hold at least 6 sessions and send 120 POSTs a minute to spend it; 30 did.
 * Asked only once the session's budget allows the read, so a session's refused POSTs spend none.
 * With the views' 30, an IP starts at most 150 reads a minute (2.5 a second).
 */
const REVEAL_IP_LIMITER = "RL_PAYER" as const;
export const CHECKOUT_REVEAL_READS_PER_IP = LIMITS[REVEAL_IP_LIMITER];

/** The Reveal POST's budget (above) for this session and client IP. */
export function checkoutRevealReadBudget(c: Context<AppEnv>, sessionId: string) {
  const session = `checkout-reveal|session:${sessionId}`;
  const ip = (net: string) => `checkout-reveal|ip:${net}`;
  return {
    key: `${session}|${ip(clientIp(c))}`,
    mayRead: async () =>
      !enabled(c.env) ||
      ((await allowed(c.env, REVEAL_SESSION_LIMITER, session)) &&
        !(await ipRefusal(c, REVEAL_IP_LIMITER, ip))),
  };
}

/** When a check these budgets postponed may be asked again: their window. */
export const CHECKOUT_STRIPE_RETRY_SECONDS = PERIOD_SECONDS;

/** Partner try routes: paid services count like skills, free ones (mcp_tools, the notify probe) as free routes. */
export const partnerQuota: MiddlewareHandler<AppEnv> = async (c, next) => {
  const found = tryTargetOf(c);
  const resource = `partner:${found?.partner.id}/${found?.service.id}`;
  const pc = partnerConfigOf(c);
  const free = found !== undefined && !("error" in pc) && !isSoldPerCall(found.partner, found.service, pc);
  return (free ? freeQuota(resource) : quota(resource))(c, next);
};
