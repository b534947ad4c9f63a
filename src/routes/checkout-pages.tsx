import type { Context } from "hono";
import { Hono } from "hono";
import * as z from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { afterResponse } from "../http/after-response";
import { successPageBindings } from "../http/bindings";
import { limitBody } from "../http/body-limit";
import { detail } from "../http/errors";
import { queryParams, validationResponse, zodItems } from "../http/validation";
import {
  CancelPage,
  CheckoutUnavailablePage,
  packEnd,
  type RevealState,
  SuccessPage,
  successRefresh,
} from "../pages/checkout";
import { storedAnswerView } from "../pages/stored-answer";
import { firstPayloadResult, runLogged, withFirstResult } from "../payments/checkout-first-call";
import { findSession, type SessionRow, settleSession } from "../payments/checkout-sessions";
import { packStanding } from "../payments/credits";
import { checkRevealToken, revealToken, takeKeyReveal } from "../payments/key-reveal";
import {
  CHECKOUT_STRIPE_RETRY_SECONDS,
  checkoutPageQuota,
  checkoutRevealReadBudget,
  checkoutStripeReadBudget,
} from "../payments/quotas";
import { stripeClient } from "../payments/stripe";
import { type StripeView, stripeView } from "../payments/stripe-views";
import { sessionRef } from "../redact";
import { skillById } from "../skills/registry";
import { varText } from "../var-text";

/** The pages Stripe Checkout returns the buyer to; the key is revealed here once. */
export const checkoutPageRoutes = new Hono<AppEnv>();

// A success URL is a capability: shared or scanned, it must not land in a search index. First, so
// every answer carries it, the quota's 429 too.
checkoutPageRoutes.use("/checkout/*", async (c, next) => {
  c.header("X-Robots-Tag", "noindex, nofollow");
  await next();
});
// Per client IP, before anything reads D1 or Stripe (the cancel page reads neither); after the
// bindings' 503 (sessions live in D1: without it a 500; the Reveal's first call may store in KV),
// which a browser sees as a page saying its payment is safe. The page's address is the request's
// own path and query, the Reveal's included: a GET of it shows the form again.
const bindingsRefused = successPageBindings((c) =>
  c.html(<CheckoutUnavailablePage retry={`${c.req.path}${new URL(c.req.url).search}`} />, 503, {
    "cache-control": "no-store",
  }),
);
checkoutPageRoutes.get("/checkout/success", bindingsRefused.view); // HEAD too (Hono)
checkoutPageRoutes.post("/checkout/success", bindingsRefused.reveal);
checkoutPageRoutes.use("/checkout/success", checkoutPageQuota);

// An empty id is a string as FastAPI's `session_id: str` takes it (spec: 422 only when missing): it gets the
// not-found page an unknown id gets.
const successQuery = z.object({ session_id: z.string().max(255) });
const cancelQuery = z.object({ skill_id: z.string().max(255).default("") });
const revealForm = z.object({ token: z.string().min(1).max(128) });
/** When a Reveal whose take D1 failed is sent again. */
const REVEAL_RETRY_AFTER_S = 10;

async function renderSuccess(
  c: Context<AppEnv>,
  sessionId: string,
  row: SessionRow | null,
  view: StripeView | undefined,
  reveal: RevealState,
  apiKey?: string,
) {
  // Neither read may fail the page: on the key page the key was already taken, and is shown once.
  const session = await withFirstResult(c.env, row);
  const remote = view?.remote;
  // Only GET pages refresh themselves (a refreshed POST would ask to resubmit the form).
  const posted = c.req.method === "POST";
  const refresh = posted ? undefined : successRefresh(session, remote?.paid === true);
  const standing = session?.api_key_id
    ? await packStanding(c.env.DB, session.api_key_id).catch((e: unknown) => {
        console.error(JSON.stringify({ level: "error", msg: "calls left unreadable", error: String(e) }));
        return undefined;
      })
    : undefined;
  const secret = varText(c.env.STRIPE_SECRET_KEY);
  const cfg = publicConfig(c.env, c.req.url);
  const page = (
    <SuccessPage
      sessionId={sessionId}
      session={session}
      remote={remote}
      stripeCheckPostponed={view?.postponed}
      skill={skillById(session?.skill_id ?? remote?.metadata.skill_id ?? "")}
      apiKey={apiKey}
      reveal={reveal}
      revealToken={secret ? await revealToken(secret, sessionId) : undefined}
      standing={standing ?? undefined}
      baseUrl={cfg.baseUrl}
      posted={posted}
      refresh={refresh}
      firstAnswer={session?.payload_result ? await storedAnswerView(session.payload_result) : undefined}
      freeBeta={cfg.freeBeta}
      contactEmail={cfg.contactEmail}
    />
  );
  const known = session || remote?.paid;
  // A browser loading the page (it says Sec-Fetch-Dest: document) is told to check again by the
  // page itself: its script updates it in place, or without scripts it reloads (SuccessPage). The
  // Refresh header, which reloads whatever the page runs, goes only to clients that name no
  // destination: HTTP clients and agents, for which it says when to ask again.
  const headerRefresh = refresh && !c.req.header("sec-fetch-dest");
  // The page may carry a secret: never cache it anywhere.
  // A POST never refreshes: one whose check with Stripe was postponed says when to ask again.
  const retryAfter = posted && view?.postponed;
  return c.html(page, known ? 200 : 404, {
    "cache-control": "no-store",
    ...(headerRefresh ? { refresh: String(refresh) } : {}),
    ...(retryAfter ? { "retry-after": String(CHECKOUT_STRIPE_RETRY_SECONDS) } : {}),
  });
}

/**
 * What a HEAD of the success page knows of Stripe: nothing asked. A HEAD shows no page, yet it
 * spent a Stripe read of its IP's views' budget as a GET does, so link checkers and prefetchers
 * (and anyone sending HEADs) held back the buyer's own page on that IP. Answered from D1 as a GET
 * whose Stripe check was postponed: the GET's status, but a session paid at Stripe whose webhook is
 * late keeps D1's state (its `Refresh` header may differ from the GET's).
 */
const HEAD_VIEW: StripeView = { remote: undefined, postponed: true };

/**
 * The success page only reads: no grant, no reveal, no run (a GET or HEAD from a prefetcher or a
 * link scanner changes nothing). The key is revealed by the page's POST form below.
 */
checkoutPageRoutes.get("/checkout/success", queryParams(successQuery), async (c) => {
  const { session_id } = c.req.valid("query");
  const session = await findSession(c.env.DB, session_id);
  // Hono answers HEAD with this handler (the request's method stays HEAD).
  const view =
    c.req.method === "HEAD"
      ? HEAD_VIEW
      : await stripeView(c.env, session, session_id, checkoutStripeReadBudget(c));
  const reveal: RevealState =
    session?.api_key_reveal || (view.remote?.paid && !session?.api_key_id) ? "ready" : "shown";
  return renderSuccess(c, session_id, session, view, reveal);
});

/**
 * "Reveal my key": an explicit POST with the page's token. Grants first when Stripe already says
 * paid but the webhook is late (a Stripe read on the Reveal's own per-session budget; over it the page
 * says the check was postponed, with Retry-After), lets the first call finish (briefly), then
 * consumes the reveal.
 */
checkoutPageRoutes.post(
  "/checkout/success",
  limitBody(4096, (c) => detail(c, 413, "Form body larger than 4096 bytes")),
  queryParams(successQuery),
  async (c) => {
    const { session_id } = c.req.valid("query");
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
    const secret = varText(c.env.STRIPE_SECRET_KEY);
    const stripe = await stripeClient(c.env);
    if (!secret || !stripe) return detail(c, 503, "Card payments are not configured on this deployment.");
    if (!(await checkRevealToken(secret, session_id, parsed.data.token))) {
      return detail(c, 403, "This reveal form is not valid for this checkout; reload the success page.");
    }
    let session = await findSession(c.env.DB, session_id);
    let view: StripeView | undefined;
    if (!session?.api_key_id) {
      // A budget of its own, per session: views, and other sessions' POSTs from this IP, cannot spend it.
      view = await stripeView(c.env, session, session_id, checkoutRevealReadBudget(c, session_id));
      if (view.remote?.paid) {
        await settleSession(c.env, view.remote);
        session = await findSession(c.env.DB, session_id);
      }
    }
    if (!session?.api_key_id) return renderSuccess(c, session_id, session, view, "ready");
    // A pack refunded, charged back or disputed since the page was loaded (its token still holds):
    // the key is not handed out and the first call not run, as the page now says. An unreadable
    // standing does not withhold a key paid for.
    const standing = await packStanding(c.env.DB, session.api_key_id).catch(() => undefined);
    if (packEnd(standing ?? undefined)) return renderSuccess(c, session_id, session, undefined, "ready");
    // Start the first call (if no run holds it) past the response, and wait up to 5 s for its answer,
    // so the key page usually shows it; a slower one shows as running.
    const runPastAnswer = (run: Promise<void>) => void afterResponse(c, runLogged(run));
    // Waiting is a courtesy: whatever fails in it (the run, a read), the key is still shown.
    try {
      session = (await firstPayloadResult(c.env, session_id, 5_000, runPastAnswer)) ?? session;
    } catch (e) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "first payload wait failed",
          session_id: sessionRef(session_id),
          error: String(e),
        }),
      );
    }
    let key: string | undefined;
    try {
      key = await takeKeyReveal(c.env, session_id, c.get("requestId"));
    } catch (e) {
      // D1 failed the take and its re-read cannot say it was ours: a retry takes the key if the
      // take never ran (key-reveal.ts), so the buyer is told to send it again, not "already shown".
      console.error(
        JSON.stringify({
          level: "error",
          msg: "key reveal take failed",
          session_id: sessionRef(session_id),
          error: String(e),
        }),
      );
      return detail(
        c,
        503,
        "Our records did not answer while taking your key. Go back to this checkout's success page and press Reveal my key again in a few seconds.",
        { reason: "reveal_unavailable" },
        { "Retry-After": String(REVEAL_RETRY_AFTER_S), "Cache-Control": "no-store" },
      );
    }
    return renderSuccess(c, session_id, session, undefined, key ? "just_shown" : "already_shown", key);
  },
);

checkoutPageRoutes.get("/checkout/cancel", queryParams(cancelQuery), (c) => {
  const { skill_id } = c.req.valid("query");
  return c.html(<CancelPage skill={skillById(skill_id)} skillId={skill_id} />);
});
