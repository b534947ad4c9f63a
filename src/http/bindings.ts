import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, Bindings } from "../env";
import { detail } from "./errors";
import { logOncePerValue } from "./log-once";
import { wantsHtml } from "./wants-html";

/** Retry-After (seconds) of a refusal whose page tells a buyer to come back in a few minutes. */
const PAGE_RETRY_AFTER_S = 120;

/**
 * The storage bindings a call needs: D1 holds the payment claims, ledger, credits and call log, KV
 * the stored answers kept out of D1, the keyed checkout sessions and the network skills' caches.
 * deploy-check refuses a wrangler.toml without them; a deployment that lost one anyway answered an
 * unpaid call with a 500 (the call log keyed on `env.DB`), and without KV sold a call or a card
 * pack whose answer or keyed session it might not store.
 */
const NEEDED = ["DB", "KV"] as const;

/** The needed bindings this deployment lacks, by name (a binding has no value to leak); the Cron's run reads it too. */
export const missingBindings = (env: Bindings): string[] => NEEDED.filter((name) => !env[name]);

/** What a browser is shown instead of the JSON refusal: the route's own page, naming no binding. */
export type RefusalPage = (c: Context<AppEnv>) => Response | Promise<Response>;

function refuse(c: Context<AppEnv>, what: string, page?: RefusalPage) {
  const missing = missingBindings(c.env);
  logOncePerValue("bindings", missing.join(","), {
    level: "error",
    msg: "storage binding missing: calls refused",
    missing,
  });
  if (page) {
    // The page says to try again in a few minutes: a client that retries on its own is told when.
    c.header("Retry-After", String(PAGE_RETRY_AFTER_S));
    if (wantsHtml(c)) return page(c);
  }
  return detail(c, 503, `This deployment is missing its ${missing.join(" and ")} storage binding: ${what}`);
}

/**
 * A step passing the call on while `present` holds, else a 503 (`what` says what is refused) naming
 * every needed binding that is missing; or, to a browser (wants-html.ts) when `page` is given,
 * that page (both with Retry-After then). Its pass-through is `next()`'s own promise: no async frame on a skill's chain
 * (http/chain.ts).
 */
const requireBindings =
  (present: (env: Bindings) => unknown, what: string, page?: RefusalPage): MiddlewareHandler<AppEnv> =>
  (c, next) =>
    present(c.env) ? next() : Promise.resolve(refuse(c, what, page));

const both = (env: Bindings) => env.DB && env.KV;

/**
 * The first step of every sale (skills, partner tries, refinery, card checkout): a 503 naming the
 * missing binding, before anything is recorded, priced or charged. /health says the same
 * (routes/health.ts).
 */
export const bindingsPresent = requireBindings(
  both,
  "calls are refused until the operator restores it; nothing was charged",
);

/**
 * The Stripe webhook's first step: its grant writes D1 and a first call's answer may go to KV. A
 * 503 makes Stripe deliver the event again (for up to 3 days), and the Cron's sweep grants paid
 * sessions too, so nothing paid is lost meanwhile.
 */
export const webhookBindingsPresent = requireBindings(
  both,
  "events are refused until the operator restores it; Stripe delivers them again",
);

const BUYER_READ = "it cannot be read until the operator restores it; credits already bought are kept";

const dbOnly = (env: Bindings) => env.DB;

/**
 * A buyer's reads (GET /api/credits, the checkout success page) read D1 only: without DB they
 * answered a 500. Without KV they still answer.
 */
export const dbBindingPresent = requireBindings(dbOnly, BUYER_READ);

/**
 * The checkout success page's two steps: its view (GET, HEAD) reads D1 only; its Reveal grants in
 * D1 and may run the first call, whose answer may go to KV (as every call's does). Without either
 * they answered a 500. A browser lands on this page from Stripe: it is shown `page` (the same 503),
 * not a JSON document; a client that asks for JSON gets the refusal above.
 */
export const successPageBindings = (page: RefusalPage) => ({
  view: requireBindings(dbOnly, BUYER_READ, page),
  reveal: requireBindings(both, BUYER_READ, page),
});

const ADMIN_REFUSED =
  "admin reads and decisions are refused until the operator restores it; nothing was changed";

/**
 * Admin (/api/admin/* and the dashboard's reads and forms), once the caller is known to hold the
 * token: every one reads or writes D1 (without it they answered a 500). KV is needed only where
 * adminBindingsPresent says: the rest (the ledger, payouts and their settling, claims, a run of
 * reconciliation, the dashboard) answer without it as they did.
 */
export const adminDbPresent = requireBindings(dbOnly, ADMIN_REFUSED);

/**
 * A refund decision (API and dashboard): its copy goes to KV, what keeps the wallet from paying it
 * again after a D1 restore. Without KV it recorded a decision whose copy could never be written.
 */
export const adminBindingsPresent = requireBindings(both, ADMIN_REFUSED);
