import { publicConfig } from "../config";
import type { Bindings } from "../env";
import { parseKeepingIntegers } from "../http/exact-integers";
import { InputError, zodItems } from "../http/validation";
import { UpstreamError } from "../net/fetcher";
import { utf8Length } from "../skills/lib/output-size";
import { serializeOutput } from "../skills/lib/raw-json";
import { skillById } from "../skills/registry";
import { runSkill } from "../skills/run";
import { NotImplemented } from "../skills/types";
import { outcomeOf, queueCall } from "../stats/record";
import { hashKey, MAX_CALLS, newApiKey, spendCreditStatement } from "./credits";
import { keepBody } from "./idempotent-results";
import { openKey, sealKey } from "./key-reveal";
import type { RemoteSession } from "./stripe";
import { recordEvent, type StripeEventRef, withEvent } from "./webhook-events";

export interface SessionRow {
  id: string;
  skill_id: string;
  calls: number;
  amount_cents: number;
  status: "open" | "complete" | "expired";
  payload: string | null;
  /** UTF-8 bytes of `payload`, written and cleared with it (migration 0015). */
  payload_bytes: number | null;
  payload_result: string | null;
  payload_started_at: number | null;
  api_key_id: string | null;
  api_key_reveal: string | null;
  payment_intent: string | null;
  payment_failed_at: number | null;
  /** When Stripe first reported the session complete with its payment still to clear (a bank debit). */
  payment_pending_at: number | null;
  created_at: number;
  updated_at: number;
}

export async function findSession(db: D1Database, id: string) {
  return db.prepare("SELECT * FROM checkout_sessions WHERE id = ?1").bind(id).first<SessionRow>();
}

/**
 * What unpaid sessions' first-call payloads may hold in D1 together: 256 MiB. A session costs its
 * creator nothing until paid, and the payload (up to 1 MiB) was stored at creation and never
 * cleared: 20 checkouts a minute from one IPv6 /64 (RL_FREE) filled D1's 10 GB cap in about
 * 8 hours, from many in minutes, and a full D1 refuses every x402 claim. 256 MiB is 2.6 % of that
 * cap (well under the 20 % the size warning leaves), and far above what buyers leave unpaid: 256
 * maximum-size payloads, or a quarter of a million of 1 KiB, waiting at once. Past it a checkout
 * with a payload is refused with a 503 (routes/checkout.tsx); one without is still sold.
 */
export const UNPAID_PAYLOADS_MAX_BYTES = 256 * 1024 * 1024;

/**
 * What unpaid sessions hold: read from the checkout_sessions_unpaid_payload index alone (its
 * condition is this WHERE and it holds both columns), never from the rows, whose payloads a read
 * goes through. A payload is written with its size, so payload_bytes is set exactly when it is
 * (rows from before migration 0015 until the Cron measures them: unmeasuredPayloads).
 */
const UNPAID_PAYLOAD_BYTES = `SELECT coalesce(sum(payload_bytes), 0) FROM checkout_sessions
  WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL`;

/** A first-call payload as the row stores it, and its size there (UTF-8 bytes). */
export function storedPayload(payload: unknown): { text: string; bytes: number } | undefined {
  if (payload === undefined) return undefined;
  const text = JSON.stringify(payload);
  return { text, bytes: utf8Length(text) };
}

/**
 * Whether a payload of `bytes` still fits under UNPAID_PAYLOADS_MAX_BYTES now: asked before Stripe,
 * so the usual refusal creates no session. Not the guard itself (two checkouts can both pass it):
 * recordSession's INSERT is.
 */
export async function unpaidPayloadRoom(db: D1Database, bytes: number): Promise<boolean> {
  const held = await db.prepare(`SELECT (${UNPAID_PAYLOAD_BYTES}) AS n`).first<number>("n");
  return (held ?? 0) + bytes <= UNPAID_PAYLOADS_MAX_BYTES;
}

/**
 * How long a client's Idempotency-Key is sure to give back the session it made: Stripe keeps a key
 * at least 24 hours from its first request (it may forget it after; a retry then makes a new
 * session, which needs room like any other).
 */
const STRIPE_KEY_KEPT_S = 24 * 60 * 60;
const keyedSessionKv = (reference: string) => `checkout-keyed:${reference}`;

/**
 * Remembers, for a retry under the client's Idempotency-Key, which session its checkout recorded:
 * in KV under the checkout's reference (network, key and body), until 24 hours after Stripe made
 * the session (`createdS`, Unix seconds), when Stripe may stop replaying it. Only a checkout with a
 * payload needs it (unpaidPayloadRoom refuses no other); a write that fails is logged, and its
 * retry is then checked for room like a new checkout.
 */
export async function rememberKeyedSession(
  kv: KVNamespace,
  reference: string,
  sessionId: string,
  createdS: number,
) {
  const expiration = createdS + STRIPE_KEY_KEPT_S;
  // KV refuses an expiry less than 60 s away: a key that old is as good as forgotten.
  if (expiration < Date.now() / 1000 + 60) return;
  await kv.put(keyedSessionKv(reference), sessionId, { expiration }).catch((e: unknown) => {
    console.error(JSON.stringify({ level: "warn", msg: "keyed checkout not remembered", error: String(e) }));
  });
}

/**
 * Whether a retry under a client's Idempotency-Key is of a session recorded already (the one
 * rememberKeyedSession kept for this reference, still in D1): Stripe replays that session, and its
 * payload is counted in the sum, so unpaidPayloadRoom would refuse it its own URL. Any other keyed
 * checkout is checked for room before Stripe like one without a key. KV reaches other locations up
 * to 60 s after the write, and a read can fail: then it is checked for room too (at worst a 503 to
 * retry later, never a session nobody is given).
 */
export async function keyedSessionRecorded(env: Bindings, reference: string): Promise<boolean> {
  const id = await env.KV.get(keyedSessionKv(reference)).catch(() => null);
  if (!id) return false;
  return (await env.DB.prepare("SELECT 1 FROM checkout_sessions WHERE id = ?1").bind(id).first()) !== null;
}

/**
 * Records a session; false when its payload would take unpaid sessions past
 * UNPAID_PAYLOADS_MAX_BYTES, and nothing was written. The check and the INSERT are one statement,
 * so concurrent checkouts cannot all pass it. A session already recorded (a retry Stripe replayed)
 * is true, as its first recording was; one without a payload is never refused.
 */
export async function recordSession(
  db: D1Database,
  s: {
    id: string;
    skillId: string;
    calls: number;
    amountCents: number;
    payload: unknown;
    /** storedPayload(payload), when the caller has it already (a payload is up to 1 MiB). */
    stored?: ReturnType<typeof storedPayload>;
  },
): Promise<boolean> {
  const now = Date.now();
  const stored = s.stored ?? storedPayload(s.payload);
  const { meta } = await db
    .prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?7
       WHERE ?6 IS NULL OR (${UNPAID_PAYLOAD_BYTES}) + ?6 <= ?8
       ON CONFLICT (id) DO NOTHING`,
    )
    .bind(
      s.id,
      s.skillId,
      s.calls,
      s.amountCents,
      stored?.text ?? null,
      stored?.bytes ?? null,
      now,
      UNPAID_PAYLOADS_MAX_BYTES,
    )
    .run();
  if (meta.changes === 1 || !stored) return true;
  // Whether it was recorded before (a retry Stripe replayed): its row, not its payload, is read.
  return (await db.prepare("SELECT 1 FROM checkout_sessions WHERE id = ?1").bind(s.id).first()) !== null;
}

/**
 * How long a session's payload is kept when nothing of ours says it was paid: Stripe completes a
 * session within its default lifetime, 24 hours (routes/checkout.tsx sets no expires_at, and
 * Stripe allows none longer), but our record of the payment comes with its completed webhook,
 * which Stripe retries for up to 3 days (an outage, a rotated webhook secret): 4 days in all.
 * Sessions never paid are cleared sooner, by their expired webhook at 24 hours.
 */
const CHECKOUT_COMPLETABLE_MS = 4 * 24 * 60 * 60 * 1000;
/**
 * How long a session Stripe completed with its payment still to clear keeps its payload: 14 days,
 * beyond the 4 business days a US bank debit (ACH) takes to clear or fail. A payment cleared later
 * still grants its pack; only the first call is not run.
 */
const PENDING_PAYMENT_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * The clearing of up to `limit` first-call payloads (and their sizes) that no payment can still
 * run, as of `now`, oldest first by the checkout_sessions_unpaid_payload index: sessions never
 * paid once Stripe can no longer complete them, and those whose delayed payment stayed pending past
 * PENDING_PAYMENT_MS. A paid session keeps its payload (its first call runs from it, and the
 * success page reads it). Run in chunks by the Cron (ops/database.ts); D1 has no UPDATE … LIMIT.
 */
export function staleUnpaidPayloads(db: D1Database, now: number, limit: number) {
  return db
    .prepare(
      `UPDATE checkout_sessions SET payload = NULL, payload_bytes = NULL, updated_at = ?4
       WHERE rowid IN (SELECT rowid FROM checkout_sessions
         WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL AND created_at < ?1
           AND (payment_pending_at IS NULL OR payment_pending_at < ?3)
         LIMIT ?2)`,
    )
    .bind(now - CHECKOUT_COMPLETABLE_MS, limit, now - PENDING_PAYMENT_MS, now);
}

/**
 * How long the row of a session Stripe ended unpaid is kept: 30 days from its creation, as call-log
 * rows (stats/record.ts RETENTION_DAYS). Its payload went long before (its expiry, or
 * staleUnpaidPayloads at 4 days); the 30 days keep the row for support ("I was charged") and for
 * any event about it that comes late.
 */
export const UNPAID_SESSION_RETENTION_DAYS = 30;

/**
 * The deleting of up to `limit` rows of sessions Stripe ended unpaid, as of `now`: never granted a
 * key, holding no payload, created more than UNPAID_SESSION_RETENTION_DAYS ago, and either expired
 * (its checkout.session.expired event: an expired session can never be paid) or completed with a
 * bank debit that failed (async_payment_failed). A granted session (api_key_id) is part of the money
 * ledger (credits, refunds, disputes) and is never deleted. Nor is a row Stripe never told us the
 * end of (still `open`): its completed event may have been lost, every delivery of it failed (a
 * rotated webhook secret, an outage past Stripe's 3 days of retries), and the success page, which
 * asks Stripe about a row it knows, is the buyer's way to the key; and a late grant or dispute finds
 * no row deleted under it, as only ended sessions are. Such rows are a few hundred bytes each. An
 * api_keys row naming the session (none should, with api_key_id empty) keeps it too, so one odd row
 * cannot fail every chunk on the foreign key. Found through the checkout_sessions_unpaid_ended index
 * alone (migration 0018); run in chunks by the Cron (ops/database.ts): D1 has no DELETE … LIMIT.
 */
export function expiredUnpaidSessions(db: D1Database, now: number, limit: number) {
  return db
    .prepare(
      `DELETE FROM checkout_sessions WHERE rowid IN (SELECT rowid FROM checkout_sessions WHERE api_key_id IS NULL
         AND payload IS NULL AND created_at < ?1 AND (status = 'expired' OR payment_failed_at IS NOT NULL)
         AND NOT EXISTS (SELECT 1 FROM api_keys WHERE api_keys.session_id = checkout_sessions.id)
         LIMIT ?2)`,
    )
    .bind(now - UNPAID_SESSION_RETENTION_DAYS * 24 * 60 * 60 * 1000, limit);
}

/**
 * The measuring of up to `limit` unpaid payloads stored without their size: the rows from before
 * migration 0015, and those the previous version wrote until this one was up. Measured, they count
 * against UNPAID_PAYLOADS_MAX_BYTES and are cleared by staleUnpaidPayloads like any other. Each
 * reads the payloads it measures (up to 1 MiB each): the Cron runs it in small chunks.
 */
export function unmeasuredPayloads(db: D1Database, limit: number) {
  return db
    .prepare(
      // A row from before 0015 may be a bank debit still clearing whose pending mark that version
      // never wrote: it gets the pending grace from its creation, unless it expired or its
      // payment failed (that version cleared neither payload).
      `UPDATE checkout_sessions SET payload_bytes = length(CAST(payload AS BLOB)),
         payment_pending_at = CASE WHEN status = 'open' AND payment_failed_at IS NULL
                              THEN coalesce(payment_pending_at, created_at) ELSE payment_pending_at END
       WHERE rowid IN (SELECT rowid FROM checkout_sessions
         WHERE payload IS NOT NULL AND payload_bytes IS NULL AND api_key_id IS NULL LIMIT ?1)`,
    )
    .bind(limit);
}

export type SessionOutcome =
  | "granted"
  | "duplicate_event"
  | "already_granted"
  | "unknown_session"
  | "expired"
  | "not_paid";

/**
 * The grant rule (issue 19.5): whatever event arrived, and in whatever order, a session is granted
 * only when Stripe itself reports it `complete` and `paid`, and marked expired only when Stripe
 * reports it `expired`. The grant is idempotent per session, so any order of redelivered,
 * concurrent or contradictory events ends in the same state.
 */
export async function settleSession(
  env: Bindings,
  remote: RemoteSession,
  event?: StripeEventRef,
): Promise<SessionOutcome> {
  if (remote.paid) {
    if (!(await findSession(env.DB, remote.id)) && !(await rebuildSession(env.DB, remote))) {
      if (event) await recordEvent(env.DB, event);
      return "unknown_session";
    }
    return grantCredits(env, remote.id, remote.paymentIntent, event);
  }
  // An expired session can never be paid: its payload goes with it. One Stripe completed while its
  // payment clears (a bank debit) is marked, so the Cron keeps its payload past the 24 h.
  const statements =
    remote.status === "expired"
      ? [
          env.DB.prepare(
            `UPDATE checkout_sessions SET status = 'expired', payload = NULL, payload_bytes = NULL, updated_at = ?2
             WHERE id = ?1 AND status = 'open' AND api_key_id IS NULL`,
          ).bind(remote.id, Date.now()),
        ]
      : remote.status === "complete"
        ? [
            env.DB.prepare(
              `UPDATE checkout_sessions SET payment_pending_at = ?2, updated_at = ?2
               WHERE id = ?1 AND api_key_id IS NULL AND payment_pending_at IS NULL`,
            ).bind(remote.id, Date.now()),
          ]
        : [];
  if (!(await withEvent(env.DB, event, statements))) return "duplicate_event";
  return remote.status === "expired" ? "expired" : "not_paid";
}

/**
 * A paid session that D1 lacks (its row was lost, or created by an older deployment) is rebuilt
 * from what the session itself carries: skill and calls from our metadata, the amount Stripe
 * charged. The first-call payload is not in Stripe and is lost. False when the metadata is not ours.
 */
async function rebuildSession(db: D1Database, remote: RemoteSession) {
  const skill = skillById(remote.metadata.skill_id ?? "");
  const calls = Number(remote.metadata.calls);
  if (!skill || !Number.isSafeInteger(calls) || calls < 1 || calls > MAX_CALLS) return false;
  if (!remote.amountCents || remote.amountCents < 1) return false;
  await recordSession(db, {
    id: remote.id,
    skillId: skill.id,
    calls,
    amountCents: remote.amountCents,
    payload: undefined,
  });
  console.error(
    JSON.stringify({ level: "warn", msg: "checkout session rebuilt from Stripe", session_id: remote.id }),
  );
  return true;
}

/**
 * Grants a paid session's credits exactly once. The event id (when given), the key and the
 * session's new state are written in one D1 batch (a transaction): a redelivered event fails on
 * the webhook_events primary key and rolls back; a second grant of the same session matches no
 * row because `api_key_id` is already set. Callers decide "paid" from Stripe (settleSession).
 */
async function grantCredits(
  env: Bindings,
  sessionId: string,
  paymentIntent: string | null,
  event?: StripeEventRef,
): Promise<SessionOutcome> {
  const db = env.DB;
  // Both grant paths (webhook, reveal) run only with Stripe configured.
  if (!env.STRIPE_SECRET_KEY) throw new Error("STRIPE_SECRET_KEY is required to grant credits");
  const key = newApiKey();
  const keyId = crypto.randomUUID();
  const now = Date.now();
  const results = await withEvent(db, event, [
    db
      .prepare(
        `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at)
         SELECT ?1, ?2, skill_id, calls, calls, id, ?3 FROM checkout_sessions WHERE id = ?4 AND api_key_id IS NULL`,
      )
      .bind(keyId, await hashKey(key), now, sessionId),
    db
      .prepare(
        `UPDATE checkout_sessions SET status = 'complete', api_key_id = ?1, api_key_reveal = ?2, updated_at = ?3,
           payment_intent = coalesce(payment_intent, ?5)
         WHERE id = ?4 AND api_key_id IS NULL`,
      )
      .bind(keyId, await sealKey(env.STRIPE_SECRET_KEY, sessionId, key), now, sessionId, paymentIntent),
  ]);
  if (!results) return "duplicate_event";
  return results[results.length - 1]?.meta.changes === 1 ? "granted" : "already_granted";
}

/**
 * checkout.session.async_payment_failed: the delayed payment failed; nothing is granted, and the
 * session can never be paid, so its first-call payload is cleared.
 */
export async function failSession(db: D1Database, sessionId: string, event: StripeEventRef) {
  const r = await withEvent(db, event, [
    db
      .prepare(
        `UPDATE checkout_sessions SET payment_failed_at = ?2, payload = NULL, payload_bytes = NULL, updated_at = ?2
         WHERE id = ?1 AND api_key_id IS NULL`,
      )
      .bind(sessionId, Date.now()),
  ]);
  if (!r) return "duplicate_event";
  return r[1]?.meta.changes === 1 ? "payment_failed" : "unknown_or_granted_session";
}
// A waitUntil run gets at most 30 s after the response; a claim older than this died with it.
const STALE_RUN_MS = 60_000;

/**
 * Where the checkout's first call stands, for the success page: `none` (no payload), `queued`
 * (paid, not granted yet: the reveal POST grants and runs it), `running` (a live run holds it),
 * `stalled` (its run died: past STALE_RUN_MS a POST with the page's token takes it over), `done`.
 * One held back while its pack could make no call (HELD_BACK) is `stalled` too: while the pack
 * stands so the page says why it did not run, and once it can call again, a POST runs it.
 */
export function firstCallState(
  session: SessionRow | null,
  now = Date.now(),
): "none" | "queued" | "running" | "stalled" | "done" {
  if (!session?.payload) return "none";
  if (session.payload_result) return "done";
  if (session.api_key_id === null) return "queued";
  // Not claimed yet: the run starts right after the grant, which last wrote the row (updated_at).
  const since = session.payload_started_at ?? session.updated_at ?? session.created_at;
  return now - since < STALE_RUN_MS ? "running" : "stalled";
}

/**
 * The claim of a first call held back because its pack could make no call (PACK_CAN_CALL): older
 * than any live claim, so the next run takes it at once, and shown by the page as not run.
 */
const HELD_BACK = 0;

/**
 * Whether the session's pack can make a call: not disputed (open or lost) and not wholly refunded,
 * as the success page's packEnd reads it. SQL over checkout_sessions (its api_key_id).
 */
const PACK_CAN_CALL = `EXISTS (SELECT 1 FROM api_keys k WHERE k.id = checkout_sessions.api_key_id
  AND k.dispute_status IS NULL AND k.calls_revoked < k.calls_total)`;

/**
 * A checkout may carry the body of the buyer's first call: it runs once, after the grant and
 * outside the webhook's request (webhook answers stay fast), and spends a credit only if it
 * succeeds (none in free beta, as no call does then). A claim on the session makes it run once; a claim whose run died (isolate evicted)
 * goes stale and the reveal POST runs it. Its answer is kept for the success page.
 *
 * It runs only while the pack can make a call. A refund or dispute event can grant the pack it
 * takes from (the completed webhook was late), and its run then found the key frozen or emptied:
 * the skill ran (an upstream's cost), a 402 was stored, and a stored answer is never run again, so
 * after a dispute won the paid first call showed "failed with 402" for good. Now the claim itself
 * checks the pack (one statement: no event can land between a check and the claim) and, if it
 * cannot call, marks the call HELD_BACK and runs nothing; a dispute won or a refund undone runs it
 * then (the webhook), or the Reveal POST does, once, whichever claims it first.
 */
export async function runFirstPayload(env: Bindings, sessionId: string): Promise<void> {
  const now = Date.now();
  const started = performance.now();
  // In free beta every skill call answers unpaid, a card key's too (the payment gate lets it
  // through before reading the key): the first call is one of them, so it takes no credit and is
  // logged as free beta. It was the one call of the beta that spent a credit, $0.003 more a pack
  // than any other buyer paid. Read as it runs, as the gate reads the flag as a call arrives. The
  // pack rule stays: a first call is part of what the pack bought, and is held back while the
  // pack can make no call (disputed, wholly refunded), as the page and the Reveal POST say.
  const free = publicConfig(env, "http://localhost").freeBeta;
  const claim = await env.DB.prepare(
    `UPDATE checkout_sessions SET payload_started_at = CASE WHEN ${PACK_CAN_CALL} THEN ?2 ELSE ?4 END
     WHERE id = ?1 AND payload IS NOT NULL AND payload_result IS NULL AND api_key_id IS NOT NULL
       AND (payload_started_at IS NULL OR payload_started_at < ?3)
     RETURNING skill_id, payload, api_key_id, payload_started_at`,
  )
    .bind(sessionId, now, now - STALE_RUN_MS, HELD_BACK)
    .first<{ skill_id: string; payload: string; api_key_id: string; payload_started_at: number }>();
  if (claim?.payload_started_at !== now) return;
  const skill = skillById(claim.skill_id);
  // As the skill's own route reads a body: json_sort and json_flatten keep integers past 2^53.
  const body = skill?.exactIntegers
    ? parseKeepingIntegers(claim.payload)
    : (JSON.parse(claim.payload) as unknown);
  let result: { status: number; body: unknown };
  // The page the buyer named failed (ai_detector's or seo's url), not the skill: logged as such.
  let targetFault = false;
  const parsed = skill?.input.safeParse(body, { reportInput: true });
  if (!skill || !parsed) {
    result = { status: 404, body: { detail: `Unknown skill ${claim.skill_id}` } };
  } else if (!parsed.success) {
    result = { status: 422, body: { detail: zodItems(parsed.error, body, ["body"]) } };
  } else {
    try {
      result = { status: 200, body: await runSkill(skill, parsed.data, env, `checkout:${sessionId}`) };
    } catch (e) {
      if (e instanceof UpstreamError && e.target) targetFault = true;
      // The same answers the skill route gives (routes/skills.ts); none of them spends the credit.
      result =
        e instanceof InputError
          ? { status: 422, body: { detail: e.items } }
          : e instanceof UpstreamError
            ? { status: e.status, body: { detail: e.message, charged: false } }
            : e instanceof NotImplemented
              ? { status: 501, body: { detail: "not implemented" } }
              : { status: 500, body: { detail: "The skill failed; your credit was not spent." } };
    }
  }
  // An answer over 512 KiB goes to KV and the row keeps where: D1 refuses a row over 2,000,000
  // bytes ("string or blob too big"), and a 1 MiB payload's json_sort answer is ~2.1 MiB. The key
  // is this run's own, so a stale run's late answer never replaces the one the row points to.
  const kvKey = `first-call:${sessionId}:${now}`;
  // A skill's answer is written as its route writes it (serializeOutput): json_sort's `sorted` is
  // its canonical text spliced in, so integer-like keys keep their order and long integers their
  // digits (JSON.stringify re-parsed it: {"10":…,"9":…} came back as {"9":…,"10":…}).
  // A success in free beta says so (`"free":true`): the page tells the buyer whether a credit was
  // spent from what this run did, not from the flag when the page is shown.
  const text =
    result.status === 200
      ? `{"status":200,${free ? '"free":true,' : ""}"body":${serializeOutput(result.body as Record<string, unknown>)}}`
      : JSON.stringify(result);
  const kept = await keepBody(env.KV, kvKey, text);
  const answer = kept.body ?? JSON.stringify({ status: result.status, body_kv: kept.bodyKv });
  // Written only while this run still holds the claim and no answer is stored, in one
  // transaction: a stale run's late answer can neither overwrite nor spend a second credit.
  const store = (text: string, condition = "") =>
    env.DB.prepare(
      `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
       WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL${condition}`,
    ).bind(text, sessionId, now, Date.now());
  let stored: boolean;
  let creditTaken = false;
  // What this run's record says: the answer it stored, if any (a stale run's, or one held back to
  // run again after a dispute is won, is the other run's to log).
  let logged: number | undefined;
  if (result.status !== 200) {
    stored = (await store(answer).run()).meta.changes === 1;
    if (stored) logged = result.status;
  } else if (free) {
    // Free beta: shown without a credit, as any call is then, unless the pack stopped being able
    // to call while this ran (then held back, as below).
    const [shown] = await env.DB.batch([
      env.DB.prepare(
        `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
         WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL AND ${PACK_CAN_CALL}`,
      ).bind(answer, sessionId, now, Date.now()),
      holdBack(env.DB, sessionId, now),
    ]);
    stored = shown?.meta.changes === 1;
    if (stored) logged = 200;
  } else {
    // A success is shown only if its credit is taken: the buyer may have spent every credit (or
    // the payment was disputed or refunded) while this ran, and the answer must not be an extra,
    // unpaid result. One transaction: the answer is stored if the key has a spendable credit, the
    // credit is taken if this run's answer is the one stored; otherwise, if the pack can no longer
    // call, the call is held back (nothing stored: it runs again if a dispute is won), and if the
    // buyer spent the credits, the refusal is stored.
    const spendable = "SELECT 1 FROM api_keys WHERE id = ?5 AND calls_left > 0 AND dispute_status IS NULL";
    const [shown, , , refused] = await env.DB.batch([
      env.DB.prepare(
        `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
         WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL AND EXISTS (${spendable})`,
      ).bind(answer, sessionId, now, Date.now(), claim.api_key_id),
      spendCreditStatement(
        env.DB,
        `id = ?1 AND dispute_status IS NULL AND EXISTS (SELECT 1 FROM checkout_sessions WHERE id = ?2 AND payload_started_at = ?3 AND payload_result = ?4)`,
      ).bind(claim.api_key_id, sessionId, now, answer),
      holdBack(env.DB, sessionId, now),
      store(JSON.stringify({ status: 402, body: { detail: FIRST_CALL_UNPAID, charged: false } })),
    ]);
    stored = shown?.meta.changes === 1;
    // The credit is taken in the same transaction exactly when this answer is the one shown.
    creditTaken = stored;
    if (stored) logged = 200;
    else if (refused?.meta.changes === 1) logged = 402;
  }
  if (logged !== undefined)
    await logFirstCall(env, claim.skill_id, skill ? Number(skill.price_atomic) : 0, {
      status: logged,
      targetFault,
      creditTaken,
      free,
      durationMs: Math.max(0, Math.round(performance.now() - started), Date.now() - now),
    });
  // An answer nobody will read (withheld, or a stale run's) leaves no copy behind in KV; one that
  // stays (the delete failed) costs storage only, so it does not fail the run.
  if (!stored && kept.bodyKv) await env.KV.delete(kept.bodyKv).catch(() => undefined);
}

/** The marking of a run's claim HELD_BACK once its pack can no longer call (nothing stored). */
const holdBack = (db: D1Database, sessionId: string, claimedAt: number) =>
  db
    .prepare(
      `UPDATE checkout_sessions SET payload_started_at = ?3
       WHERE id = ?1 AND payload_started_at = ?2 AND payload_result IS NULL AND NOT ${PACK_CAN_CALL}`,
    )
    .bind(sessionId, claimedAt, HELD_BACK);

/**
 * The first call's record for the call log and Analytics Engine, as recordCall writes a skill
 * route's (stats/record.ts): it runs outside any route, so without this the published figures
 * never saw it and the dashboard's card revenue missed the credit it spent. Charged at the list
 * price only when its credit was taken. The caller runs inside waitUntil (the webhook) or the
 * Reveal POST's keepAlive: the write is awaited here, so it ends with the run, never cut off. A
 * record that cannot be written is statistics only: logged, never a failed run.
 */
async function logFirstCall(
  env: Bindings,
  skillId: string,
  priceMicro: number,
  run: { status: number; targetFault: boolean; creditTaken: boolean; free: boolean; durationMs: number },
) {
  // As recordCall reads a route's answer: a 502/504 of the page the buyer named is theirs.
  const outcome = outcomeOf(run.status, undefined, run.targetFault);
  try {
    await queueCall(env, {
      at: Date.now(),
      skill: skillId,
      status: run.status,
      outcome,
      durationMs: run.durationMs,
      // In free beta whatever its answer, as recordCall logs every call free beta let through. A
      // refusal took no credit: nothing paid it, as the route logs a key without credits.
      paymentMethod: run.free ? "free_beta" : run.status === 402 ? "none" : "card_credit",
      amountMicro: outcome === "ok" && run.creditTaken ? priceMicro : 0,
      transport: "checkout",
    });
  } catch (e) {
    console.error(JSON.stringify({ level: "error", msg: "first-call record not written", error: String(e) }));
  }
}

/**
 * The first call of the pack a PaymentIntent paid, run if it is still to run (runFirstPayload's
 * claim decides): for a charge event that let the pack call again (a dispute won, a refund undone).
 */
export async function runPaymentFirstPayload(env: Bindings, paymentIntent: string): Promise<void> {
  const row = await env.DB.prepare(
    `SELECT id FROM checkout_sessions
     WHERE payment_intent = ?1 AND payload IS NOT NULL AND payload_result IS NULL AND api_key_id IS NOT NULL`,
  )
    .bind(paymentIntent)
    .first<{ id: string }>();
  if (row) await runFirstPayload(env, row.id);
}

const FIRST_CALL_UNPAID =
  "The first call finished after this key had no credit left (spent, or taken back by a refund): its answer is withheld and no credit was taken.";

/**
 * Starts the first call unless another run holds it, then waits up to `waitMs` for its answer (this
 * run's or the other's). The run is handed to `keepAlive` (waitUntil), not awaited: a skill slower
 * than the wait finishes after the answer, as after the webhook, and the page says it is running.
 * Awaited, a slow skill held the reveal for its whole run (the redirect from Stripe does not wait
 * for the webhook, so this POST is often the grant). The credit stays safe either way: the run's
 * claim, answer and credit are written by the run itself (runFirstPayload), not by this wait.
 */
export async function firstPayloadResult(
  env: Bindings,
  sessionId: string,
  waitMs: number,
  keepAlive: (run: Promise<void>) => void,
) {
  const run = runFirstPayload(env, sessionId);
  keepAlive(run);
  let running = true;
  const finished = run.then(
    () => (running = false),
    () => (running = false),
  );
  const deadline = Date.now() + waitMs;
  for (;;) {
    const row = await findSession(env.DB, sessionId);
    if (!row?.payload || row.payload_result || Date.now() >= deadline) return row;
    const pause = new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, deadline - Date.now()))));
    // Woken early when this run ends; after that (or while another run holds it) every 250 ms.
    await (running ? Promise.race([finished, pause]) : pause);
  }
}

// What the row holds for an answer kept in KV (runFirstPayload): its status and KV key.
const KV_ANSWER = /^\{"status":\d+,"body_kv":"(first-call:[^"\\]+)"\}$/;

/**
 * The row as the success page shows it: a first-call answer kept in KV is read back into
 * `payload_result`. KV reaches other locations up to 60 s after the write, and a read can fail:
 * until the answer is readable it shows as running since it was stored (the page refreshes), never
 * as an error, and the key page that shows the key once never fails with it.
 */
export async function withFirstResult(env: Bindings, row: SessionRow | null): Promise<SessionRow | null> {
  const ref = row?.payload_result && row.payload_result.length < 1024 ? row.payload_result : undefined;
  const key = ref ? KV_ANSWER.exec(ref)?.[1] : undefined;
  if (!row || !key) return row;
  const text = await env.KV.get(key, "text").catch((e: unknown) => {
    console.error(
      JSON.stringify({ level: "error", msg: "first-call answer unreadable", key, error: String(e) }),
    );
    return null;
  });
  if (text !== null) return { ...row, payload_result: text };
  return { ...row, payload_result: null, payload_started_at: row.updated_at };
}

/** The clear key, handed out once: compare-and-swap so two reveals cannot both see it. */
export async function takeKeyReveal(env: Bindings, sessionId: string): Promise<string | undefined> {
  const db = env.DB;
  // Never consume the one reveal without the secret that opens it.
  if (!env.STRIPE_SECRET_KEY) return undefined;
  const row = await db
    .prepare("SELECT api_key_reveal FROM checkout_sessions WHERE id = ?1")
    .bind(sessionId)
    .first<{ api_key_reveal: string | null }>();
  if (!row?.api_key_reveal) return undefined;
  const r = await db
    .prepare("UPDATE checkout_sessions SET api_key_reveal = NULL WHERE id = ?1 AND api_key_reveal = ?2")
    .bind(sessionId, row.api_key_reveal)
    .run();
  if (r.meta.changes !== 1) return undefined;
  return openKey(env.STRIPE_SECRET_KEY, sessionId, row.api_key_reveal);
}
