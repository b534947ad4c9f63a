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
 *
 * The view kept above bounds the reads per session, not per caller: sessions are free to create
 * (20 a minute per IP), and views that cycle through many open ones find none kept. So a read this
 * view would start is first counted against `mayRead` (the caller's own budget of Stripe reads,
 * payments/quotas.ts checkoutStripeReadBudget); refused, the page answers from D1 alone (its
 * "waiting for the payment" state, which checks again), as when Stripe cannot be read. A view
 * kept, or one D1 already answers (granted, expired, unknown), spends nothing of it.
 */
export async function stripeView(
  env: Bindings,
  session: SessionRow | null,
  sessionId: string,
  mayRead: () => Promise<boolean>,
) {
  const stripe = await stripeClient(env);
  if (!stripe || session?.status !== "open") return undefined;
  const keptNow = kept(sessionId);
  if (keptNow) return waitForView(keptNow);
  if (!(await mayRead())) return undefined;
  // Another request may have started the read while the budget was asked: it is shared.
  const keptSince = kept(sessionId);
  if (keptSince) return waitForView(keptSince);
  const now = Date.now();
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

/** The view of this session kept and still fresh, if any. */
function kept(sessionId: string) {
  const view = views.get(sessionId);
  return view && Date.now() - view.at < VIEW_TTL_MS ? view.view : undefined;
}

/**
 * A read started by another request is cancelled with it unless kept alive, and stripe-node waits
 * up to 80 s: every wait is bounded, and one that runs out shows the page as a failed read does.
 */
const waitForView = (view: Promise<RemoteSession | undefined>) =>
  within(view, VIEW_WAIT_MS).catch(() => undefined);
const VIEW_WAIT_MS = 8_000;
