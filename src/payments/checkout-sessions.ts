import type { Bindings } from "../env";
import { sessionRef } from "../redact";
import { utf8Length } from "../skills/lib/output-size";
import { skillById } from "../skills/registry";
import { varText } from "../var-text";
import { moveTotal, payloadTotal, releasedBy, roomTakenFor, TAKE_ROOM } from "./checkout-payload-total";
import { hashKey, MAX_CALLS, newApiKey } from "./credits";
import { sealKey } from "./key-reveal";
import type { RemoteSession } from "./stripe";
import { recordEvent, type StripeEventRef, withEvent } from "./webhook-events";

/**
 * A card checkout's row (checkout_sessions) from its creation to its end: recorded with the
 * first-call payload it may carry, granted once when Stripe says paid, ended when Stripe says it
 * never will be, and cleared or deleted by the Cron. Every write to a row's payment state is here,
 * so that the grant rule (only Stripe's own state decides) and the bound on what unpaid rows hold
 * have one writer; the first call's run, which reads a granted row, is checkout-first-call.ts.
 */

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
  /** When the Cron's sweep last asked Stripe about the session (migration 0019). */
  checked_at: number | null;
  /** When Stripe answered the sweep that it does not know the session (404): not asked again under that key. */
  stripe_missing_at: number | null;
  /** Which key that 404 was answered under: a short hash of it (migration 0022). */
  stripe_missing_key: string | null;
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
 * with a payload is refused with a 503 (routes/checkout.tsx); one without is still sold. What they
 * hold is the running total of checkout-payload-total.ts: every write below that sets or clears an
 * unpaid payload (or grants its session a key) moves it in its own batch.
 */
export const UNPAID_PAYLOADS_MAX_BYTES = 256 * 1024 * 1024;

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
  const held = await payloadTotal(db);
  return held !== null && held + bytes <= UNPAID_PAYLOADS_MAX_BYTES;
}

/**
 * How long a client's Idempotency-Key is sure to give back the session it made: Stripe keeps a key
 * at least 24 hours from its first request (it may forget it after; a retry then makes a new
 * session, which needs room like any other).
 */
export const STRIPE_KEY_KEPT_S = 24 * 60 * 60;
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
 * payload is counted in the total, so unpaidPayloadRoom would refuse it its own URL. Any other keyed
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
 * UNPAID_PAYLOADS_MAX_BYTES, and nothing was written. The room is taken from the running total
 * and the row inserted in one batch (a transaction, run one at a time), the INSERT only if that
 * room was taken for it, so concurrent checkouts cannot all pass the cap, and reading the total is
 * one row however many sessions are unpaid. A session already recorded (a retry Stripe replayed)
 * is true, as its first recording was, and takes no room again; one without a payload is never
 * refused.
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
  const claim = crypto.randomUUID();
  const insert = db
    .prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?7
       WHERE ?6 IS NULL OR ${roomTakenFor("?8")}
       ON CONFLICT (id) DO NOTHING`,
    )
    .bind(s.id, s.skillId, s.calls, s.amountCents, stored?.text ?? null, stored?.bytes ?? null, now, claim);
  const [inserted] = stored
    ? (
        await db.batch([
          db.prepare(TAKE_ROOM).bind(s.id, stored.bytes, claim, UNPAID_PAYLOADS_MAX_BYTES),
          insert,
        ])
      ).slice(1)
    : [await insert.run()];
  if (inserted?.meta.changes === 1 || !stored) return true;
  // Whether it was recorded before (a retry Stripe replayed): its row, not its payload, is read.
  return (await db.prepare("SELECT 1 FROM checkout_sessions WHERE id = ?1").bind(s.id).first()) !== null;
}

/**
 * How long a session's payload is kept when nothing of ours says it was paid: Stripe completes a
 * session within its default lifetime, 24 hours (checkout-create.ts sets no expires_at, and
 * Stripe allows none longer), but our record of the payment comes with its completed webhook,
 * which Stripe retries for up to 3 days (an outage, a rotated webhook secret): 4 days in all.
 * Sessions never paid are cleared sooner, by their expired webhook at 24 hours.
 */
export const CHECKOUT_COMPLETABLE_MS = 4 * 24 * 60 * 60 * 1000;
/**
 * How long a session Stripe completed with its payment still to clear keeps its payload: 14 days,
 * beyond the 4 business days a US bank debit (ACH) takes to clear or fail. A payment cleared later
 * still grants its pack; only the first call is not run.
 */
export const PENDING_PAYMENT_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * The clearing of up to `limit` first-call payloads (and their sizes) that no payment can still
 * run, as of `now`, oldest first by the checkout_sessions_unpaid_payload index: sessions never
 * paid once Stripe can no longer complete them, and those whose delayed payment stayed pending past
 * PENDING_PAYMENT_MS. A paid session keeps its payload (its first call runs from it, and the
 * success page reads it). Run in chunks by the Cron (ops/database.ts); D1 has no UPDATE … LIMIT.
 * A batch: the total first loses what the chunk holds, read from the same index by the same
 * condition and limit (so the same rows, in the same transaction), then the chunk is cleared; the
 * clearing's changes are the last result's.
 */
export function staleUnpaidPayloads(db: D1Database, now: number, limit: number) {
  const chunk = `SELECT rowid, payload_bytes FROM checkout_sessions
         WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL AND created_at < ?1
           AND (payment_pending_at IS NULL OR payment_pending_at < ?3)
         LIMIT ?2`;
  const completable = now - CHECKOUT_COMPLETABLE_MS;
  const pending = now - PENDING_PAYMENT_MS;
  return [
    moveTotal(db, `SELECT -coalesce(sum(payload_bytes), 0) FROM (${chunk})`, completable, limit, pending),
    db
      .prepare(
        `UPDATE checkout_sessions SET payload = NULL, payload_bytes = NULL, updated_at = ?4
         WHERE rowid IN (SELECT rowid FROM (${chunk}))`,
      )
      .bind(completable, limit, pending, now),
  ];
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
 * ledger (credits, refunds, disputes) and is never deleted. Nor is a row whose end Stripe has not
 * told us (still `open`): its completed event may have been lost, every delivery of it failed (a
 * rotated webhook secret, an outage past Stripe's 3 days of retries), and the Cron's sweep
 * (checkout-sweep.ts) then asks Stripe and grants it or marks it expired, after which this applies;
 * and a late grant or dispute finds no row deleted under it, as only ended sessions are. One the
 * sweep cannot settle (Stripe does not know it) stays, a few hundred bytes. An
 * api_keys row naming the session (none should, with api_key_id empty) keeps it too, so one odd row
 * cannot fail every chunk on the foreign key. Found through the checkout_sessions_unpaid_ended index
 * alone (migration 0018); run in chunks by the Cron (ops/database.ts): D1 has no DELETE … LIMIT.
 */
export function expiredUnpaidSessions(db: D1Database, now: number, limit: number) {
  // payload_bytes IS NULL on the row itself (which the delete reads anyway; the index does not hold
  // it): a size left without its payload, which no writer leaves, still counts in the unpaid
  // payloads' total, so its row stays until staleUnpaidPayloads clears it and takes it off. Outside the
  // chunk, so the chunk is found through the index alone; a chunk of such rows (only a hand write
  // makes one) deletes nothing and ends the run's deleting until that clearing, within a day.
  return db
    .prepare(
      `DELETE FROM checkout_sessions WHERE rowid IN (SELECT rowid FROM checkout_sessions WHERE api_key_id IS NULL
         AND payload IS NULL AND created_at < ?1 AND (status = 'expired' OR payment_failed_at IS NOT NULL)
         AND NOT EXISTS (SELECT 1 FROM api_keys WHERE api_keys.session_id = checkout_sessions.id)
         LIMIT ?2) AND payload_bytes IS NULL`,
    )
    .bind(now - UNPAID_SESSION_RETENTION_DAYS * 24 * 60 * 60 * 1000, limit);
}

/**
 * The measuring of up to `limit` unpaid payloads stored without their size: the rows from before
 * migration 0015, and those the previous version wrote until this one was up. Measured, they count
 * against UNPAID_PAYLOADS_MAX_BYTES and are cleared by staleUnpaidPayloads like any other. Each
 * reads the payloads it measures (up to 1 MiB each): the Cron runs it in small chunks. A batch:
 * the total first gains the sizes of the chunk's rows (the same subquery, so the same rows, in the
 * same transaction), then they are measured; the measuring's changes are the last result's.
 */
export function unmeasuredPayloads(db: D1Database, limit: number) {
  const chunk = `SELECT rowid FROM checkout_sessions
         WHERE payload IS NOT NULL AND payload_bytes IS NULL AND api_key_id IS NULL LIMIT ?1`;
  return [
    moveTotal(
      db,
      `SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM checkout_sessions WHERE rowid IN (${chunk})`,
      limit,
    ),
    db
      .prepare(
        // A row from before 0015 may be a bank debit still clearing whose pending mark that version
        // never wrote: it gets the pending grace from its creation, unless it expired or its
        // payment failed (that version cleared neither payload).
        `UPDATE checkout_sessions SET payload_bytes = length(CAST(payload AS BLOB)),
         payment_pending_at = CASE WHEN status = 'open' AND payment_failed_at IS NULL
                              THEN coalesce(payment_pending_at, created_at) ELSE payment_pending_at END
       WHERE rowid IN (${chunk})`,
      )
      .bind(limit),
  ];
}

/**
 * How long after its creation a session with no word from Stripe is asked about: its completed
 * webhook comes seconds after the buyer pays, and Stripe retries a failed delivery within the hour.
 * A session still open then was most likely never paid; one paid was granted by nothing of ours.
 */
const SWEEP_FIRST_LOOK_MS = 60 * 60 * 1000;
/**
 * Stripe's own lifetime of a session: 24 hours from its creation (checkout-create.ts sets no
 * expires_at). Past it Stripe reports the session ended, expired or complete, for good.
 */
const STRIPE_SESSION_LIFETIME_MS = 24 * 60 * 60 * 1000;
/**
 * How often a session past that lifetime and still open in D1 is asked again: Stripe may expire it
 * a few minutes late, and a read that failed is tried again an hour later (not every run).
 */
const SWEEP_RECHECK_MS = 60 * 60 * 1000;
/**
 * How often a session within that lifetime is asked again once Stripe said it is open (or a read
 * failed): every 6 hours, so a buyer who paid later, or whose first look met an outage, waits hours
 * and not the whole day; not hourly, which would spend 23 reads on every abandoned checkout.
 */
const SWEEP_OPEN_RECHECK_MS = 6 * 60 * 60 * 1000;
/**
 * When a bank debit's outcome is overdue: a US bank debit (ACH) clears or fails within 4 business
 * days of the payment, Stripe's async_payment_* event with it. From then the session is asked
 * about once a day until PENDING_PAYMENT_MS have passed since Stripe reported the payment pending:
 * no debit is still out by then, and a session still complete but unpaid is one whose debit
 * failed, which Stripe's session does not say (only the lost async_payment_failed event did).
 */
const PENDING_OUTCOME_DUE_MS = 4 * 24 * 60 * 60 * 1000;
const PENDING_RECHECK_MS = 24 * 60 * 60 * 1000;

/**
 * How much of a run's reads go to sessions never asked about, when those asked before are due as
 * well: half. Never asked sessions sort first in the index (checked_at NULL), and a flood of
 * abandoned checkouts (one IP at RL_FREE makes 28,800 a day, the sweep reads 5,760) took every
 * read: no expired session was marked, and none paid after its first look was asked again. Either
 * kind takes what the other leaves, as reconciliation's DUE_FIRST (reconcile-store.ts).
 */
const FIRST_LOOK_SHARE = 0.5;

/**
 * What a sweep run asks Stripe about, as of `now`: up to `limit` sessions that should have heard
 * from Stripe by now and did not: still `open` in D1, never granted, their payment not failed, and
 * either an hour old and not asked in the last 6 hours (never, at first), or past Stripe's 24 h
 * lifetime and not asked in the last hour, or Stripe reported their bank debit pending more than
 * PENDING_OUTCOME_DUE_MS ago (and less than PENDING_PAYMENT_MS) and they were not asked today. A
 * session Stripe said it does not know is left only while that mark was made under `keyMark`
 * (today's key: checkout-sweep.ts): a mark made under another key, or before marks named their
 * key (migration 0022), counts for nothing. Never asked sessions (oldest first) and those asked
 * before (least recently first, so one Stripe cannot answer about goes to the back) each get
 * FIRST_LOOK_SHARE of the reads when both are due, and what the other leaves; they alternate, so a
 * run cut short still reads both. `more`: some due sessions wait for the next run. Found through
 * the checkout_sessions_sweep index alone (migration 0022), each kind one ordered range of it. The
 * sweep asks Stripe and settles each by settleSession.
 */
export async function unsettledSessions(
  db: D1Database,
  now: number,
  limit: number,
  keyMark: string,
  /** Ids starting so are left out (the other Stripe mode's sessions, which the key cannot read). */
  skipPrefix?: string,
) {
  // Both kinds by one statement. A session asked before is due at the soonest SWEEP_RECHECK_MS
  // after (the shortest of the three waits): said outright, it bounds that kind's range.
  const due = `status = 'open' AND api_key_id IS NULL AND payment_failed_at IS NULL AND (?10 = '' OR substr(id, 1, length(?10)) IS NOT ?10)
         AND (stripe_missing_at IS NULL OR stripe_missing_key IS NOT ?9)
         AND ((payment_pending_at IS NULL AND created_at < ?1
               AND (checked_at IS NULL OR checked_at < ?2 OR (created_at < ?3 AND checked_at < ?4)))
           OR (payment_pending_at < ?5 AND payment_pending_at >= ?6 AND (checked_at IS NULL OR checked_at < ?7)))`;
  const { results } = await db
    .prepare(
      `SELECT id, checked_at, stripe_missing_at FROM (SELECT id, checked_at, stripe_missing_at FROM checkout_sessions
         WHERE checked_at IS NULL AND ${due} ORDER BY created_at LIMIT ?8)
       UNION ALL
       SELECT id, checked_at, stripe_missing_at FROM (SELECT id, checked_at, stripe_missing_at FROM checkout_sessions
         WHERE checked_at < ?4 AND ${due} ORDER BY checked_at, created_at LIMIT ?8)`,
    )
    .bind(
      now - SWEEP_FIRST_LOOK_MS,
      now - SWEEP_OPEN_RECHECK_MS,
      now - STRIPE_SESSION_LIFETIME_MS,
      now - SWEEP_RECHECK_MS,
      now - PENDING_OUTCOME_DUE_MS,
      now - PENDING_PAYMENT_MS,
      now - PENDING_RECHECK_MS,
      // One more of each than the run can take: whether any is left for the next.
      limit + 1,
      keyMark,
      skipPrefix ?? "",
    )
    .all<{ id: string; checked_at: number | null; stripe_missing_at: number | null }>();
  const first = results.filter((r) => r.checked_at === null);
  const again = results.filter((r) => r.checked_at !== null);
  const firstTaken = Math.min(
    first.length,
    Math.max(Math.ceil(limit * FIRST_LOOK_SHARE), limit - again.length),
  );
  const againTaken = Math.min(again.length, limit - firstTaken);
  const chosen: typeof results = [];
  for (let i = 0; i < Math.max(firstTaken, againTaken); i++) {
    if (i < againTaken) chosen.push(again[i] as (typeof results)[number]);
    if (i < firstTaken) chosen.push(first[i] as (typeof results)[number]);
  }
  return { due: chosen, more: first.length + again.length > chosen.length };
}

/**
 * Marks a session asked about at `now`, before Stripe is asked: false when another run marked it
 * since it was chosen (`checkedAt`, as read then), which then asks. Marked first, so a session
 * whose read fails goes to the back of the sweep like one that was answered. Only checked_at is
 * written: updated_at dates the payment state's changes, which this is not.
 */
export async function claimSweep(db: D1Database, id: string, checkedAt: number | null, now: number) {
  const { meta } = await db
    .prepare("UPDATE checkout_sessions SET checked_at = ?3 WHERE id = ?1 AND checked_at IS ?2")
    .bind(id, checkedAt, now)
    .run();
  return meta.changes === 1;
}

/**
 * Records that Stripe does not know a session under the key `keyMark` names (a 404: made under
 * another account's or mode's key, one since rotated); a mark made under another key is replaced.
 * Its row is otherwise left as it was: Stripe said nothing about its payment, and the success page
 * still asks Stripe with the key of the day.
 */
export async function markStripeMissing(db: D1Database, id: string, keyMark: string, now: number) {
  await db
    .prepare("UPDATE checkout_sessions SET stripe_missing_at = ?2, stripe_missing_key = ?3 WHERE id = ?1")
    .bind(id, now, keyMark)
    .run();
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
          moveTotal(env.DB, releasedBy("id = ?1 AND status = 'open'"), remote.id),
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
    JSON.stringify({
      level: "warn",
      msg: "checkout session rebuilt from Stripe",
      session_id: sessionRef(remote.id),
    }),
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
  const secret = varText(env.STRIPE_SECRET_KEY);
  if (!secret) throw new Error("STRIPE_SECRET_KEY is required to grant credits");
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
    // Granted, its payload stays (its first call runs from it) but no longer counts as unpaid.
    moveTotal(db, releasedBy("id = ?1"), sessionId),
    db
      .prepare(
        `UPDATE checkout_sessions SET status = 'complete', api_key_id = ?1, api_key_reveal = ?2, updated_at = ?3,
           payment_intent = coalesce(payment_intent, ?5)
         WHERE id = ?4 AND api_key_id IS NULL`,
      )
      .bind(keyId, await sealKey(secret, sessionId, key), now, sessionId, paymentIntent),
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
    moveTotal(db, releasedBy("id = ?1"), sessionId),
    db
      .prepare(
        `UPDATE checkout_sessions SET payment_failed_at = ?2, payload = NULL, payload_bytes = NULL, updated_at = ?2
         WHERE id = ?1 AND api_key_id IS NULL`,
      )
      .bind(sessionId, Date.now()),
  ]);
  if (!r) return "duplicate_event";
  return r[r.length - 1]?.meta.changes === 1 ? "payment_failed" : "unknown_or_granted_session";
}
