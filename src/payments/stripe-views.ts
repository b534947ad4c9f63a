import type Stripe from "stripe";
import type { Bindings } from "../env";
import { keepAlive, within } from "../http/shared-load";
import { sessionRef } from "../redact";
import type { SessionRow } from "./checkout-sessions";
import { fetchSession, logStripeFailure, type RemoteSession, stripeClient } from "./stripe";

/**
 * Stripe's answer per session id, kept a few seconds per isolate (bounded), and shared by the
 * requests that ask while it is on its way: the success page refreshes itself, and anyone holding
 * the link can reload it in a loop (a HEAD asks nothing: routes/checkout-pages.tsx). Each read counts
 * against Stripe's per-account limit (about 25 a second per endpoint), which the webhook's own
 * session reads share: a page read per request let one open session starve real buyers' grants. A
 * stale view is at most VIEW_TTL_MS old; only the webhook and the page's Reveal POST act on it, and
 * "paid" is final.
 */
const VIEW_TTL_MS = 5_000;
const VIEW_MEMO_MAX = 1_000;
/** A read the asking caller's budget held back: nothing was asked of Stripe. */
const POSTPONED = Symbol("postponed");
type Read = RemoteSession | undefined | typeof POSTPONED;
/** A read kept per session, with the budget it was asked under (ReadBudget.key). */
const views = new Map<string, { at: number; key: string; view: Promise<Read> }>();

/**
 * The caller's own budget of Stripe reads (payments/quotas.ts): `mayRead` counts a read against
 * it, and `key` names it, so callers under one budget know a read it held back holds theirs back.
 */
export interface ReadBudget {
  key: string;
  mayRead: () => Promise<boolean>;
}

/**
 * What the success page knows of Stripe's side: `remote`, Stripe's view (undefined when Stripe was
 * not asked or could not be read), and `postponed` when the caller's budget held the read back, so
 * the page can say the check was put off rather than that Stripe has not confirmed the payment.
 */
export interface StripeView {
  remote: RemoteSession | undefined;
  postponed: boolean;
}
const NOT_ASKED: StripeView = { remote: undefined, postponed: false };

/**
 * Stripe's view of an open session D1 has not granted yet (late webhook); read only. Ids D1 does
 * not know are never looked up here (no free Stripe calls for made-up ids): the webhook rebuilds a
 * paid session missing from D1.
 *
 * The view kept above bounds the reads per session, not per caller: sessions are free to create
 * (20 a minute per IP), and views that cycle through many open ones find none kept. So a read this
 * view would start is first counted against `budget` (the caller's own budget of Stripe reads,
 * payments/quotas.ts); refused, the page answers from D1 alone and says the check with Stripe was
 * postponed. A view kept, or one D1 already answers (granted, expired, unknown), spends nothing of
 * it. The read is kept from before its budget is asked: concurrent requests for one session join
 * it and spend the budget once between them (each asking its own, 30 concurrent views of one
 * session spent an IP's whole minute on one read). A caller whose joined read another budget held
 * back joins the read kept now, whatever budget started it (the first view woken starts one, and
 * the others join it: each starting its own, each replacing the last one in flight, made one read
 * per budget waiting), and asks its own budget only when none is kept; a joined read held back
 * again is left the same way, so a paid buyer's Reveal that joined views whose IP's minute was
 * spent still reaches its own budget. A read its own budget held back is its answer: asking that
 * budget again at once would be refused again.
 */
export async function stripeView(
  env: Bindings,
  session: SessionRow | null,
  sessionId: string,
  budget: ReadBudget,
): Promise<StripeView> {
  const stripe = await stripeClient(env);
  if (!stripe || session?.status !== "open") return NOT_ASKED;
  // A postponed read is no longer kept: each pass joins another read, or leaves the loop.
  for (let entry = kept(sessionId); entry; entry = kept(sessionId)) {
    const read = await waitForView(entry.view);
    if (read !== POSTPONED) return { remote: read, postponed: false };
    if (entry.key === budget.key) return POSTPONED_VIEW;
  }
  // Nothing usable kept (checked with no await since): no read in flight is replaced.
  const read = await waitForView(startRead(stripe, sessionId, budget).view);
  return read === POSTPONED ? POSTPONED_VIEW : { remote: read, postponed: false };
}
const POSTPONED_VIEW: StripeView = { remote: undefined, postponed: true };

/**
 * Keeps a read of this session, started once `budget` allows it, and hands it to waitUntil. Called
 * only when no fresh read is kept: what it replaces is stale (a held-back read is already dropped).
 */
function startRead(stripe: Stripe, sessionId: string, budget: ReadBudget) {
  views.delete(sessionId);
  if (views.size >= VIEW_MEMO_MAX) views.delete(views.keys().next().value as string);
  const entry = { at: Date.now(), key: budget.key, view: Promise.resolve<Read>(undefined) };
  // A budget that cannot be asked (its binding failing) holds the read back as a refusal does.
  entry.view = budget
    .mayRead()
    .catch(() => false)
    .then(async (may): Promise<Read> => {
      if (!may) {
        // Held back by this caller's budget: not kept, so the next caller asks its own.
        if (views.get(sessionId) === entry) views.delete(sessionId);
        return POSTPONED;
      }
      // A failed read is kept too: asking again at once would only add to what Stripe refuses.
      return fetchSession(stripe, sessionId).then(
        (s) => s ?? undefined,
        (e) => {
          logStripeFailure(e, "readSession", {
            msg: "stripe retrieve failed",
            level: "warn",
            session_id: sessionRef(sessionId),
          });
          return undefined;
        },
      );
    });
  views.set(sessionId, entry);
  // Shared with the requests that ask meanwhile: kept alive past this request's client.
  keepAlive(entry.view);
  return entry;
}

/** The view of this session kept (or on its way) and still fresh, if any. */
function kept(sessionId: string) {
  const entry = views.get(sessionId);
  return entry && Date.now() - entry.at < VIEW_TTL_MS ? entry : undefined;
}

/**
 * A read started by another request is cancelled with it unless kept alive, and stripe-node waits
 * up to 80 s: every wait is bounded, and one that runs out shows the page as a failed read does.
 */
const waitForView = (view: Promise<Read>): Promise<Read> => within(view, VIEW_WAIT_MS).catch(() => undefined);
const VIEW_WAIT_MS = 8_000;
