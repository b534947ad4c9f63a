import { stripeKeyProblem } from "../config";
import type { Bindings } from "../env";
import { sessionRef } from "../redact";
import { varText } from "../var-text";
import { runFirstPayload, runLogged } from "./checkout-first-call";
import { claimSweep, markStripeMissing, settleSession, unsettledSessions } from "./checkout-sessions";
import { fetchSession, logStripeFailure, type StripeNetwork, stripeClient } from "./stripe";

/**
 * The Cron's part that asks Stripe about checkouts no word from Stripe has reached: a session paid
 * whose every completed webhook was lost (a rotated webhook secret, an outage past Stripe's 3 days
 * of retries) was granted only if its buyer opened the success page, and one Stripe expired stayed
 * `open` for ever, never deleted. Each session chosen (checkout-sessions.ts unsettledSessions) is
 * read from Stripe and settled by settleSession, the webhook's and the success page's own grant
 * rule: granted once when Stripe reports it paid, expired when Stripe says so, nothing otherwise.
 */

/**
 * Stripe reads per run: 20, one every 15 s of the 5-minute Cron (5,760 a day). Each read is one
 * subrequest (SWEEP_NETWORK: no retries), and a Cron invocation has Workers' per-invocation
 * subrequest budget (1,000 on Workers Paid), which reconciliation in the same run shares (up to 80
 * rows of 2-4 RPC calls, and refunds), as does the first call of a pack granted here. Stripe's rate
 * limit (about 25 reads a second in test mode, 100 live) is shared with the webhook's and the
 * success page's reads of buyers waiting now: read one at a time, the sweep takes a small share.
 * Sessions past the budget wait for the next run (`more` in the summary).
 */
export const SWEEP_MAX_READS = 20;

/**
 * How long after its start a run still starts a read: 60 s. A read takes well under a second, so
 * 20 take a few seconds; a Stripe slow enough to pass this would, read after read, hold the run
 * for minutes (with the client's retries a read that answered on its third try took ~31 s, and 20
 * such ran past the next Cron runs, which asked the same sessions meanwhile, the Cron logging
 * nothing until the end). What is left waits for the next run, 5 minutes on. With SWEEP_NETWORK's
 * timeout a run ends within 70 s.
 */
export const SWEEP_TIME_BUDGET_MS = 60_000;

/**
 * The sweep's Stripe client: no retries, 10 s a read. A read that fails or times out stops the
 * run, and the session is asked again by a later run anyway; the buyer-facing client's two
 * retries of 15 s each only made one read cost up to 45 s.
 */
const SWEEP_NETWORK: StripeNetwork = { maxNetworkRetries: 0, timeoutMs: 10_000 };

/**
 * How many reads at the start of a run answering 404, and none answering anything else, stop it as
 * a configuration error: 3. A session Stripe does not know while the key is right is rare (one
 * made under a key of another account, since changed) and is asked once per key; three in a row
 * with not one session read means the key reads none of this deployment's sessions (another
 * account's key). Nothing is marked then: the marks wait for a read that answered. A session marked
 * before (under another key, or by 0019's version with none) is expected to answer 404 under the
 * right key too: it is marked under this one and never counted, or after a key roll three of them
 * at the front of the queue would fail every run and never be marked.
 */
export const MISSING_IN_A_ROW_STOP = 3;

/** What one run did, logged by the Cron as `checkout_sweep`. */
export interface SweepSummary {
  /** Sessions Stripe was asked about. */
  asked: number;
  /** Granted here: paid at Stripe, with no webhook or Reveal having granted them. */
  granted: number;
  /** Stripe reports them expired: marked so, their payloads cleared. */
  expired: number;
  /** Complete at Stripe with their payment still to clear (a bank debit): marked pending, or still so. */
  pending: number;
  /** Still open at Stripe (not paid yet), or found settled by another path meanwhile. */
  unchanged: number;
  /** Stripe does not know them (404): marked, not asked again under this key (unless the run stopped first). */
  unknown: number;
  /** Due sessions left for the next run: the budget ran out. */
  more: boolean;
  /** Why the run stopped before its reads were done though Stripe answered: SWEEP_TIME_BUDGET_MS passed. */
  stopped?: string;
  /**
   * Why the run stopped early: Stripe could not be read, or the key cannot read this deployment's
   * sessions or is refused (another mode than STRIPE_MODE's): a configuration error. The Cron
   * then fails, naming this part.
   */
  error?: string;
  /** Why nothing was asked: card payments are not configured (no key set). */
  skipped?: string;
}

/**
 * Which key a 404 was answered under, for its mark: the first 16 hex digits of a SHA-256 of
 * STRIPE_SECRET_KEY (never the key itself, which the mark would otherwise copy into D1 and its
 * backups). A mark made under another key counts for nothing (unsettledSessions).
 */
export async function keyMark(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`checkout-sweep stripe_missing_key|${secret}`),
  );
  return [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The mode a secret or restricted key belongs to; undefined when it does not say. */
function modeOf(key: string): "live" | "test" | undefined {
  const m = /^(?:sk|rk)_(live|test)_/.exec(key);
  return m ? (m[1] as "live" | "test") : undefined;
}

/**
 * Asks Stripe about up to `limit` sessions due as of `now` and settles each. A pack granted here has
 * its first call handed to `runAfter` (the Cron's waitUntil), as the webhook does. A read that
 * fails (Stripe down, refusing our key, or no answer within SWEEP_NETWORK's 10 s) stops the run
 * there: the rest would wait on the same outage. The session it was about was marked asked first,
 * so it goes to the back and the next run starts with the others; nothing else of it changes. A
 * read that answers slowly is used, but no read starts once `budgetMs` (SWEEP_TIME_BUDGET_MS) have
 * passed since the run began (`stopped`). A key that seems not to read this deployment's sessions
 * (MISSING_IN_A_ROW_STOP 404s of sessions never marked, and no other answer) stops the run as an
 * error and marks nothing.
 */
export async function sweepCheckouts(
  env: Bindings,
  runAfter: (run: Promise<void>) => void,
  now = Date.now(),
  limit = SWEEP_MAX_READS,
  budgetMs = SWEEP_TIME_BUDGET_MS,
): Promise<SweepSummary> {
  const started = Date.now();
  const summary: SweepSummary = {
    asked: 0,
    granted: 0,
    expired: 0,
    pending: 0,
    unchanged: 0,
    unknown: 0,
    more: false,
  };
  const secret = varText(env.STRIPE_SECRET_KEY);
  const stripe = await stripeClient(env, SWEEP_NETWORK);
  if (!stripe || !secret) {
    const problem = stripeKeyProblem(env);
    // A key set but refused (the other mode): card payments are off, and refunds and disputes
    // of packs already sold reach only the webhook. A skip at info would fail no Cron run.
    if (secret && problem) return { ...summary, error: `configuration error: ${problem}` };
    return { ...summary, skipped: problem ?? "STRIPE_SECRET_KEY is not set" };
  }
  const mark = await keyMark(secret);
  // Sessions of the other mode than the key's (`cs_test_…` under a live key: left from testing, or
  // live ones under a test key put in by mistake) are never asked: this key cannot read them, and
  // a 404 would mark them. They wait, unmarked, for a key of their mode.
  const keyMode = modeOf(secret);
  const otherMode = keyMode === "live" ? "test" : keyMode === "test" ? "live" : undefined;
  const { due, more } = await unsettledSessions(env.DB, now, limit, mark, otherMode && `cs_${otherMode}_`);
  summary.more = more;
  // 404s not marked yet: until some read answers, they may be the key's fault rather than theirs.
  const unmarked: string[] = [];
  let answered = false;
  for (const [i, { id, checked_at, stripe_missing_at }] of due.entries()) {
    if (Date.now() - started >= budgetMs) {
      return {
        ...summary,
        more: true,
        stopped: `time budget of ${budgetMs} ms spent; ${due.length - i} left`,
      };
    }
    if (!(await claimSweep(env.DB, id, checked_at, now))) continue;
    summary.asked++;
    let remote: Awaited<ReturnType<typeof fetchSession>>;
    try {
      remote = await fetchSession(stripe, id);
    } catch (e) {
      logStripeFailure(e, "readSession", {
        msg: "checkout sweep: stripe retrieve failed",
        session_id: sessionRef(id),
      });
      return { ...summary, more: true, error: `Stripe could not be read about ${sessionRef(id)}: ${e}` };
    }
    if (!remote) {
      summary.unknown++;
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "checkout sweep: Stripe does not know this session (made under another account's or mode's key?)",
          session_id: sessionRef(id),
        }),
      );
      if (answered || stripe_missing_at !== null) await markStripeMissing(env.DB, id, mark, now);
      else unmarked.push(id);
      if (!answered && unmarked.length >= MISSING_IN_A_ROW_STOP) {
        return {
          ...summary,
          more: true,
          error: `configuration error: Stripe does not know any of the first ${unmarked.length} sessions asked (${unmarked.join(", ")}): STRIPE_SECRET_KEY is likely not this deployment's account or mode (nothing marked)`,
        };
      }
      continue;
    }
    if (!answered) {
      answered = true;
      for (const missing of unmarked.splice(0)) await markStripeMissing(env.DB, missing, mark, now);
    }
    const outcome = await settleSession(env, remote);
    if (outcome === "granted") {
      summary.granted++;
      // No webhook granted it within the hour: worth a look at the webhook's deliveries.
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "checkout sweep: granted a paid session no webhook had granted",
          session_id: sessionRef(id),
        }),
      );
      runAfter(runLogged(runFirstPayload(env, id)));
    } else if (outcome === "expired") summary.expired++;
    else if (outcome === "not_paid" && remote.status === "complete") summary.pending++;
    else summary.unchanged++;
  }
  // No read answered, and the run asked fewer sessions than MISSING_IN_A_ROW_STOP (those marked
  // before included): marked, under this key only, so a key put right asks them again. Asked more,
  // and all answered 404 with fewer than the stop's count first marked never: left unmarked for a
  // later run, which either reads one that answers or stops (a key of another account must not
  // mark this deployment's sessions behind a few it had marked before).
  if (summary.asked < MISSING_IN_A_ROW_STOP) {
    for (const missing of unmarked) await markStripeMissing(env.DB, missing, mark, now);
  }
  return summary;
}
