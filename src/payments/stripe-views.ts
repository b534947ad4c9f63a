import type { Bindings } from "../env";
import { keepAlive, within } from "../http/shared-load";
import type { SessionRow } from "./checkout-sessions";
import { fetchSession, logStripeFailure, type RemoteSession, stripeClient } from "./stripe";

/**
 * Stripe's answer per session id, kept a few seconds per isolate (bounded), and shared by the
 * requests that ask while it is on its way: the success page refreshes itself, browsers and
 * scanners send HEADs, and anyone holding the link can reload it in a loop. Each read counts
 * against Stripe's per-account limit (about 25 a second per endpoint), which the webhook's own
 * session reads share: a page read per request let one open session starve real buyers' grants. A
 * stale view is at most VIEW_TTL_MS old; only the webhook and the page's Reveal POST act on it, and
 * "paid" is final.
 */
const VIEW_TTL_MS = 5_000;
const VIEW_MEMO_MAX = 1_000;
const views = new Map<string, { at: number; view: Promise<RemoteSession | undefined> }>();

/**
 * Stripe's view of an open session D1 has not granted yet (late webhook); read only. Ids D1 does
 * not know are never looked up here (no free Stripe calls for made-up ids): the webhook rebuilds a
 * paid session missing from D1.
 */
export async function stripeView(env: Bindings, session: SessionRow | null, sessionId: string) {
  const stripe = await stripeClient(env);
  if (!stripe || session?.status !== "open") return undefined;
  const now = Date.now();
  const kept = views.get(sessionId);
  if (kept && now - kept.at < VIEW_TTL_MS) return waitForView(kept.view);
  views.delete(sessionId);
  if (views.size >= VIEW_MEMO_MAX) views.delete(views.keys().next().value as string);
  // A failed read is kept too: asking again at once would only add to what Stripe refuses.
  const view = fetchSession(stripe, sessionId).then(
    (s) => s ?? undefined,
    (e) => {
      logStripeFailure(e, "readSession", {
        msg: "stripe retrieve failed",
        level: "warn",
        session_id: sessionId,
      });
      return undefined;
    },
  );
  views.set(sessionId, { at: now, view });
  // Shared with the requests that ask meanwhile: kept alive past this request's client.
  keepAlive(view);
  return waitForView(view);
}

/**
 * A read started by another request is cancelled with it unless kept alive, and stripe-node waits
 * up to 80 s: every wait is bounded, and one that runs out shows the page as a failed read does.
 */
const waitForView = (view: Promise<RemoteSession | undefined>) =>
  within(view, VIEW_WAIT_MS).catch(() => undefined);
const VIEW_WAIT_MS = 8_000;
