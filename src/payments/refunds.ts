import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { operatingKey, publicConfig } from "../config";
import type { Bindings } from "../env";
import { TX_HASH } from "../money";
import { nothingOwed } from "../partners/nothing-owed";
import { type ChainReader, readAuthorization } from "./reconcile-chain";
import { type Decision, decide, withoutRetryNote } from "./reconcile-decide";
import { handRecordOf } from "./refund-journal";
import { refundSendAdvice, warnRefundLine } from "./refund-warn";
import { x402Server } from "./x402-lazy";
import { EVM_ADDRESS, MAX_TIMEOUT_SECONDS } from "./x402-terms";

// Lives below partners, whose payout report flags such a row too; passed on for payments' readers.
export { nothingOwed };

/**
 * Refunds of callers who paid and did not get what they paid for, in two cases:
 * - a caller settled before the marketplace spent money for them (an x402-priced partner:
 *   payments/partner-calls.ts settles the caller first, so a caller whose payment fails never costs us
 *   the partner's price) whose partner then failed;
 * - a call whose settlement went unconfirmed, so its result was withheld (502
 *   settlement_unconfirmed), and whose transfer reconciliation later found on chain
 *   (reconcile-store.ts): without the refund a buyer who retried as told paid twice for one result.
 * The caller gets back what we kept: the price minus what a partner can collect for the call
 * (`withheld`: for the first case what it can collect from our operating wallet, disputed with
 * it, never paid twice; for the second the share a partner that served is owed). So an attacker,
 * or a partner that takes our payment and answers an error, can never make us pay out more than
 * we collected.
 *
 * The refund is an x402 `exact` payment from the operating wallet (PARTNER_PAYER_KEY) to the
 * payer, settled by the same facilitator (which pays the gas). Its EIP-3009 nonce is derived from
 * the refunded request, so the USDC contract accepts at most one refund per request however often
 * it is sent: a send whose settlement failed or got no answer stays `owed`, and reconciliation
 * (reconcile.ts) reads the chain and marks it refunded, or sends it again once the last
 * authorization expired unused. A refund `hold`s (never sent automatically) only when what it owes
 * is not known; GET /api/admin/payouts lists every refund, and the maintainer records one they paid
 * by hand (refund-by-hand.ts: POST /api/admin/resolve/refunds/{request_id}).
 */
export interface Refund {
  requestId: string;
  payer: string;
  network: string;
  asset: string;
  paidMicros: bigint;
  withheldMicros: bigint;
  reason: string;
  /** Why the maintainer must decide this refund: it is recorded as owed and never sent. */
  hold?: string;
  /**
   * Why nobody knows whether the withheld share is the partner's (an authorization may have been
   * handed over and none is recorded): it is recorded as a held return for a person to decide
   * (inDoubtReturn), so it is listed rather than kept quietly.
   */
  inDoubt?: string;
}

/** A refund as its row records it: enough to send it (again). */
export interface RecordedRefund {
  requestId: string;
  payer: string;
  network: string;
  asset: string;
  amount: bigint;
  reason: string;
}

export interface RefundOutcome {
  status: "owed" | "refunded";
  amount: bigint;
  transaction: string | null;
}

const refundAmount = (r: Refund) => (r.paidMicros > r.withheldMicros ? r.paidMicros - r.withheldMicros : 0n);

export const recorded = (r: Refund): RecordedRefund => ({
  requestId: r.requestId,
  payer: r.payer,
  network: r.network,
  asset: r.asset,
  amount: refundAmount(r),
  reason: r.reason,
});

/** Why a refund cannot be sent automatically, if it cannot. */
const holdOf = (r: Refund) =>
  r.hold ?? (EVM_ADDRESS.test(r.payer) ? undefined : "no payer address to refund to");

/**
 * What a reconciliation decision records a refund under, so that only the batch taking the decision
 * writes it: a claim still 'failed' (payment_nonces key), or an upstream authorization still
 * undecided (upstream_payments id).
 */
export type Undecided = { claimFailed: string } | { upstreamUndecided: number };

/**
 * How a return held in doubt starts its `hold`: what lets its decision rewrite it (owedRefund) and a
 * person record it as nothing owed (refund-by-hand.ts dismissInDoubt).
 */
export const IN_DOUBT = "kept back in doubt:";
/** How it starts once a decision on its authorization (reconciliation's or a person's) left it owed: decidedInDoubt, or a nothing-owed record the chain then contradicted (contradictedNothingOwed). */
export const IN_DOUBT_DECIDED = `${IN_DOUBT} decided since`;
/**
 * What the hold of a nothing-owed record the chain contradicted says (contradictedNothingOwed),
 * and what tells it from a return decidedInDoubt wrote: the person's record lives only in that
 * hold, so no later rewrite (owedRefund) may take it, and their refusals word it apart.
 */
export const NOTHING_OWED_CONTRADICTED = "a person recorded this share as nothing owed on";

/**
 * The hold a return held in doubt takes when reconciliation decides the authorization it waited for
 * can no longer land (`r`: the return as decided). It stays held: its one actor is the person its
 * first hold told to refund it by hand, who may be paying it already (a hand refund is paid before
 * it is recorded), so reconciliation only writes down what it found and never sends it.
 */
const decidedInDoubt = (r: Refund) =>
  `${IN_DOUBT_DECIDED} (${r.reason}): refund this by hand, for the amount now recorded. Reconciliation never sends a share first kept in doubt, since a person may be refunding it already${
    holdOf(r) ? `; and ${holdOf(r)}` : ""
  }`;

/**
 * The statement that records a refund as owed, once per request, with the nonce every send of it
 * uses (`nonce`: refundNonce(requestId)). With `onlyWhile` it writes only while that decision is
 * still open, so it can sit in the batch that takes it and no second run or racing request records
 * it again.
 */
export function owedRefund(db: D1Database, r: Refund, nonce: string, now: number, onlyWhile?: Undecided) {
  const hold = holdOf(r) ?? null;
  const values = [
    r.requestId,
    r.payer,
    Number(refundAmount(r)),
    Number(r.withheldMicros),
    r.reason,
    now,
    hold,
    nonce,
    r.asset,
    r.network,
  ];
  const columns = `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at,
     updated_at, hold, auth_nonce, asset, network)`;
  if (onlyWhile === undefined)
    return db
      .prepare(
        `${columns} VALUES (?1, ?2, ?3, ?4, ?5, 'owed', ?6, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (request_id) DO NOTHING`,
      )
      .bind(...values);
  const [open, key] =
    "claimFailed" in onlyWhile
      ? ["SELECT 1 FROM payment_nonces WHERE nonce = ?11 AND status = 'failed'", onlyWhile.claimFailed]
      : [
          "SELECT 1 FROM upstream_payments WHERE id = ?11 AND chain_status IS NULL",
          onlyWhile.upstreamUndecided,
        ];
  // A return held in doubt (inDoubtReturn) that nobody has recorded yet takes this decision's
  // amount and reason, and stays held (decidedInDoubt): one actor per return, and for this one it
  // is a person. Only the hold's text changes, never to NULL, so no send can claim it (sendRefund).
  // Never a contradicted nothing-owed record: its hold is all that keeps what the person recorded,
  // and its amount already counts what landed, which this decision's amount does not.
  return db
    .prepare(
      `${columns} SELECT ?1, ?2, ?3, ?4, ?5, 'owed', ?6, ?6, ?7, ?8, ?9, ?10
       WHERE EXISTS (${open})
       ON CONFLICT (request_id) DO UPDATE SET amount_micro = excluded.amount_micro,
         withheld_micro = excluded.withheld_micro, reason = excluded.reason, hold = ?12,
         updated_at = excluded.updated_at
       WHERE refunds.status = 'owed' AND refunds.valid_before IS NULL AND refunds.resolved_at IS NULL
         AND refunds.hold LIKE '${IN_DOUBT}%' AND instr(refunds.hold, '${NOTHING_OWED_CONTRADICTED}') = 0`,
    )
    .bind(...values, key, decidedInDoubt(r));
}

/**
 * The statement that gives a share kept back in doubt back to a person when a decision on one of
 * its request's partner authorizations (`upstream`, decided landed with `landedMicros` its amount,
 * else 0: not landed) contradicts their record of it as nothing owed (refund-by-hand.ts
 * dismissInDoubt: the partner was paid all of it): what landed for the request, with this decision,
 * and what its other authorizations not decided yet may still move, is less than the share, so the
 * caller is owed the rest. An undecided one counts as landing (as in recordedUpstreamMicros): it may
 * still pay the partner, and its own decision runs this again while the row is still nothing owed.
 * The row becomes owed again for that rest,
 * held (decided since: a hand refund takes it, no send ever does), its hold saying what the person
 * recorded and what the chain now says, and their resolved_at and note cleared, since they no
 * longer stand (nothing_owed_at and nothing_owed_note keep them as written, the hold says them).
 * Only on a row recorded as nothing owed (never a refund paid, by hand or by the wallet, nor an
 * owed one), and, in the batch that decides the authorization,
 * only while it is undecided, so it is written once. Written after owedRefund's rewrite of the same
 * row (which takes only an owed one), so that rewrite never takes this one's text; each later
 * decision then keeps its amount true (rederivedNothingOwed).
 */
export function contradictedNothingOwed(
  db: D1Database,
  upstream: { id: number; request_id: string },
  landedMicros: number,
  said: string,
  now: number,
) {
  return db
    .prepare(
      `WITH landed (micros, pending) AS (
         SELECT coalesce(sum(amount_micro), 0) + CAST(?3 AS INTEGER),
                coalesce(sum(CASE WHEN chain_status IS NULL THEN amount_micro END), 0)
         FROM upstream_payments WHERE request_id = ?1 AND id <> ?2 AND chain_status IS NOT 'not_landed')
       UPDATE refunds SET status = 'owed', amount_micro = amount_micro - (SELECT micros FROM landed), error = NULL,
         nothing_owed_at = resolved_at, nothing_owed_note = resolved_note,
         resolved_at = NULL, resolved_note = NULL, updated_at = ?5,
         hold = '${IN_DOUBT_DECIDED} (' || ?4 || '): ${NOTHING_OWED_CONTRADICTED} '
           || strftime('%Y-%m-%dT%H:%M:%SZ', resolved_at / 1000, 'unixepoch') || ' ("' || coalesce(resolved_note, '')
           || '"), and the chain now says otherwise: the partner''s authorizations of this request landed for '
           || ((SELECT micros FROM landed) - (SELECT pending FROM landed)) || ' micro-USDC of the ' || amount_micro || ' kept'
           || CASE WHEN (SELECT pending FROM landed) > 0
                THEN ' (and those not decided yet may still move ' || (SELECT pending FROM landed)
                  || '), so the partner was paid at most ' || (SELECT micros FROM landed)
                  || ' and the caller is owed at least the other '
                ELSE ', so the partner was paid only that and the caller is owed the other ' END
           || (amount_micro - (SELECT micros FROM landed))
           || '. Refund this by hand, for the amount now recorded'
           || CASE WHEN (SELECT pending FROM landed) > 0
                THEN ' (once those are decided, check the wallet''s transfers to the partner: what did not go to it is the caller''s too; say what you paid in the note)'
                ELSE '' END
           || '. Reconciliation never sends a share first kept in doubt; listed before as: '
           || hold
       WHERE request_id = ?1 || '${WITHHELD_SUFFIX}' AND ${nothingOwed()} AND hold LIKE '${IN_DOUBT}%'
         AND (SELECT micros FROM landed) < amount_micro
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE id = ?2 AND chain_status IS NULL)`,
    )
    .bind(upstream.request_id, upstream.id, landedMicros, said, now);
}

/**
 * The statement that keeps a contradicted nothing-owed record (contradictedNothingOwed) true to
 * every later decision on its request's partner authorizations, in the batch that takes it (after
 * contradictedNothingOwed, only while the deciding row is undecided): owed the kept share (the
 * request's refund's withheld_micro) minus what landed and what those still undecided may yet move,
 * this decision counted as there (`landedMicros`), never below 0. So a second authorization that
 * lands lowers it (else the caller was refunded what the partner was paid), and one that expires
 * unused after another did raises it (else the rest was listed nowhere). Only a row still owed,
 * never sent nor resolved, and only when the amount changes. Down to 0, the person's record stood
 * after all: the row is nothing owed again (nothingOwed), with the person's date and note as
 * nothing_owed_at and nothing_owed_note kept them (migration 0023: to the millisecond, any text).
 * A record contradicted before those columns existed has them only in its hold's text, read back
 * from there (the first record in it: each rewrite puts the one before after its own words): its
 * date to the second, and its note up to the first `"), and the chain now says otherwise`.
 * Either way the hold says what this decision found, then what it said before.
 */
export function rederivedNothingOwed(
  db: D1Database,
  upstream: { id: number; request_id: string },
  landedMicros: number,
  said: string,
  now: number,
) {
  const record = `instr(hold, '${NOTHING_OWED_CONTRADICTED} ') + ${NOTHING_OWED_CONTRADICTED.length + 1}`;
  const noteEnd = `'"), and the chain now says otherwise'`;
  return db
    .prepare(
      `WITH d (kept, landed, pending) AS (
         SELECT (SELECT withheld_micro FROM refunds WHERE request_id = ?1),
                coalesce((SELECT sum(amount_micro) FROM upstream_payments
                          WHERE request_id = ?1 AND id <> ?2 AND chain_status = 'landed'), 0) + CAST(?3 AS INTEGER),
                coalesce((SELECT sum(amount_micro) FROM upstream_payments
                          WHERE request_id = ?1 AND id <> ?2 AND chain_status IS NULL), 0)),
       n (owed, said) AS (
         SELECT max(0, kept - landed - pending),
           'the partner''s authorizations of this request landed for ' || landed || ' micro-USDC of the ' || kept
           || ' kept' || CASE WHEN pending > 0
             THEN ' (and those not decided yet may still move ' || pending || '), so the partner was paid at most '
               || (landed + pending) ELSE ', so the partner was paid ' || landed END
           FROM d)
       UPDATE refunds SET
         status = CASE WHEN (SELECT owed FROM n) = 0 THEN 'refunded' ELSE 'owed' END,
         amount_micro = CASE WHEN (SELECT owed FROM n) = 0 THEN (SELECT kept FROM d) ELSE (SELECT owed FROM n) END,
         resolved_at = CASE WHEN (SELECT owed FROM n) <> 0 THEN NULL WHEN nothing_owed_at IS NOT NULL THEN nothing_owed_at
           ELSE CAST(strftime('%s', substr(hold, ${record}, 20)) AS INTEGER) * 1000 END,
         resolved_note = CASE WHEN (SELECT owed FROM n) <> 0 THEN NULL WHEN nothing_owed_at IS NOT NULL THEN nothing_owed_note
           ELSE substr(substr(hold, ${record} + 23), 1, instr(substr(hold, ${record} + 23), ${noteEnd}) - 1) END,
         error = NULL, updated_at = ?5,
         hold = '${IN_DOUBT_DECIDED} (' || ?4 || '): ' || (SELECT said FROM n)
           || CASE WHEN (SELECT owed FROM n) = 0
             THEN ', the whole share: nothing is owed, as the person recorded (resolved_at, resolved_note)'
             ELSE CASE WHEN (SELECT pending FROM d) > 0 THEN ' and the caller is owed at least the other '
               ELSE ' and the caller is owed the other ' END || (SELECT owed FROM n)
               || '. Refund this by hand, for the amount now recorded' || CASE WHEN (SELECT pending FROM d) > 0
                 THEN ' (once those are decided, check the wallet''s transfers to the partner: what did not go to it is the caller''s too; say what you paid in the note)'
                 ELSE '' END
               || '. Reconciliation never sends a share first kept in doubt' END
           || '; before this decision: ' || hold
       WHERE request_id = ?1 || '${WITHHELD_SUFFIX}' AND status = 'owed' AND valid_before IS NULL
         AND auth_from IS NULL AND resolved_at IS NULL AND hold LIKE '${IN_DOUBT_DECIDED}%'
         AND instr(hold, '${NOTHING_OWED_CONTRADICTED} ') > 0
         AND (SELECT kept FROM d) > 0 AND amount_micro <> (SELECT owed FROM n)
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE id = ?2 AND chain_status IS NULL)`,
    )
    .bind(upstream.request_id, upstream.id, landedMicros, said, now);
}

/**
 * The request id under which a share a refund kept back for a partner goes back to the caller:
 * a row of its own (the first refund has usually landed already), so a nonce of its own, derived
 * like every refund's, so that it too lands at most once however often it is sent.
 */
export const WITHHELD_SUFFIX = ":withheld";
export const withheldReturnId = (requestId: string) => `${requestId}${WITHHELD_SUFFIX}`;

/**
 * The return of a share a refund keeps back when nobody knows whether the partner holds an
 * authorization for it (`inDoubt`): recorded held, never sent, so a person sees it
 * (GET /api/admin/payouts `refunds`, "Refunds owed" on /admin) and refunds by hand what the chain
 * shows did not go to the partner. Should the authorization's row turn up and reconciliation find
 * it expired unused, its decision rewrites this one's amount and hold (owedRefund), still held:
 * a person is this return's only actor, so it is never paid twice.
 */
export const inDoubtReturn = (r: Refund & { inDoubt: string }): Refund => ({
  requestId: withheldReturnId(r.requestId),
  payer: r.payer,
  network: r.network,
  asset: r.asset,
  paidMicros: r.withheldMicros,
  withheldMicros: 0n,
  reason: `the partner's share kept back from refund ${r.requestId}: nobody knows whether the partner holds an authorization for it`,
  hold: `${IN_DOUBT} an authorization of the operating wallet may have been handed over to the partner for this call, and none is known to be recorded (${r.inDoubt}). Check the wallet's transfers to the partner around this refund's time and, once every authorization it signed then has expired (300 s), refund this by hand: all of it if none landed, else the kept share minus the landed transfer's amount (the partner was paid that, and only that)${
    // The refund it completes may be held too (a settlement that disagrees, no payer address): its
    // payer and amount are in doubt as much as that one's.
    holdOf(r) ? `; and, as refund ${r.requestId}, ${holdOf(r)}` : ""
  }`,
});

/**
 * What the recorded upstream authorizations of `requestId` can still move or have moved (none
 * decided not to have landed), in micro-USDC; undefined when none is recorded.
 */
export async function recordedUpstreamMicros(db: D1Database, requestId: string) {
  const row = await db
    .prepare(
      `SELECT count(*) AS n, coalesce(sum(CASE WHEN chain_status IS NOT 'not_landed' THEN amount_micro END), 0) AS micros
       FROM upstream_payments WHERE request_id = ?1`,
    )
    .bind(requestId)
    .first<{ n: number; micros: number }>();
  return row?.n ? BigInt(row.micros) : undefined;
}

/**
 * The refund that gives back what the refund of `requestId` kept back for a partner whose
 * authorization (`upstream`) expired unused or was cancelled: that partner can no longer collect
 * it, so the caller gets the rest of the price. All that was kept when no other authorization of
 * the request may still move (a call signs one: what was kept beyond its amount was kept in doubt,
 * e.g. the listed share after an error of ours), else at most this one's amount. Undefined when
 * that refund kept nothing back, or there is none (the caller was not charged, or the call was
 * served).
 */
export async function withheldReturn(
  db: D1Database,
  requestId: string,
  upstream: { amountMicros: bigint; asset: string; network: string; cancelled?: boolean },
): Promise<Refund | undefined> {
  // `movable` counts the row being decided too (still undecided while this is read).
  const first = await db
    .prepare(
      `SELECT payer, withheld_micro, asset, network, hold,
              (SELECT count(*) FROM upstream_payments WHERE request_id = ?1 AND chain_status IS NOT 'not_landed') AS movable
       FROM refunds WHERE request_id = ?1`,
    )
    .bind(requestId)
    .first<{
      payer: string;
      withheld_micro: number;
      asset: string | null;
      network: string | null;
      hold: string | null;
      movable: number;
    }>();
  if (!first || first.withheld_micro <= 0) return undefined;
  const kept = BigInt(first.withheld_micro);
  return {
    requestId: withheldReturnId(requestId),
    payer: first.payer,
    network: first.network ?? upstream.network,
    asset: first.asset ?? upstream.asset,
    paidMicros: first.movable <= 1 || kept < upstream.amountMicros ? kept : upstream.amountMicros,
    withheldMicros: 0n,
    reason: `the partner's share kept back from refund ${requestId}: its authorization ${upstream.cancelled ? "was cancelled" : "expired unused"}, so the partner can no longer collect it`,
    // Held with the refund it completes: its payer and amount are in doubt as much as that one's.
    ...(first.hold ? { hold: `held with refund ${requestId}: ${first.hold}` } : {}),
  };
}

/** What an in-doubt listing says when only its authorization's record was missing (partner-calls.ts). */
export const UNRECORDED_DOUBT = "its record could not be written on the answer's path";

/**
 * Takes back the listing of a share kept in doubt only because its authorization's record was
 * missing, once that record is in D1 (its first write failed, a retry wrote it): reconciliation
 * then returns the share itself when the authorization expires unused, and sees it paid when it
 * landed. Run after the retry's write and again after the refund's batch, so whichever comes last
 * finds both. Only a listing nobody has acted on: never decided by reconciliation, recorded by a
 * person or sent; its hold tells a person to wait 300 s, the retry takes about a second.
 */
export function releaseUnrecordedDoubt(db: D1Database, requestId: string) {
  return db
    .prepare(
      `DELETE FROM refunds WHERE request_id = ?1 || '${WITHHELD_SUFFIX}' AND status = 'owed'
         AND valid_before IS NULL AND resolved_at IS NULL AND hold LIKE '${IN_DOUBT}%'
         AND hold NOT LIKE '${IN_DOUBT_DECIDED}%' AND instr(hold, ?2) > 0
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?1)`,
    )
    .bind(requestId, UNRECORDED_DOUBT)
    .run();
}

/** A partner call's refund: recorded as owed, then sent (only by the request that recorded it). */
export async function refundCaller(env: Bindings, r: Refund): Promise<RefundOutcome> {
  const now = Date.now();
  const refund = owedRefund(env.DB, r, await refundNonce(r.requestId), now);
  const kept = r.inDoubt && r.withheldMicros > 0n ? inDoubtReturn({ ...r, inDoubt: r.inDoubt }) : undefined;
  // Both or neither: a refund that kept a share back in doubt is never recorded without its listing.
  const [written, listed] = kept
    ? await env.DB.batch([refund, owedRefund(env.DB, kept, await refundNonce(kept.requestId), now)])
    : [await refund.run()];
  if (!written) return storedOutcome(env.DB, r.requestId);
  // Only the rows this request wrote: a retry that finds them recorded already says nothing again.
  if (written.meta.changes && holdOf(r)) warnHeldOnRequest(env, r.requestId, r);
  if (kept && listed?.meta.changes) warnHeldOnRequest(env, r.requestId, kept);
  if (!written.meta.changes || holdOf(r)) return storedOutcome(env.DB, r.requestId);
  const sent = await sendRecordedRefund(env, recorded(r));
  // A send that failed on the request path said so only in the row: a run warns of its own
  // failed sends (reconcile.ts), and the next run is 5 minutes away at best.
  if (sent.status === "owed") await warnUnsentOnRequest(env, r.requestId);
  return sent;
}

async function warnUnsentOnRequest(env: Bindings, requestId: string) {
  const row = await env.DB.prepare(
    "SELECT amount_micro, error FROM refunds WHERE request_id = ?1 AND status = 'owed' AND error IS NOT NULL",
  )
    .bind(requestId)
    .first<{ amount_micro: number; error: string }>()
    // Only a log line: a read that fails must not turn the caller's answer into an error.
    .catch(() => null);
  if (!row) return;
  const action = refundSendAdvice(row.error);
  warnRefundLine(env, "refund not sent", {
    on: "request",
    request_id: requestId,
    amount_micro: row.amount_micro,
    error: row.error,
    ...(action ? { action } : {}),
  });
}

/**
 * The warn line of a refund the request path recorded held for a person (its hold, or a share kept
 * back in doubt): reconciliation warns of those it holds (reconcile.ts warnRefund), and one held
 * here is never picked by a run (refundsToSettle), so without this line nothing but the dashboard
 * would tell of it. `request_id` is the caller's X-Request-Id, `refund_id` the row held.
 */
function warnHeldOnRequest(env: Bindings, requestId: string, held: Refund) {
  warnRefundLine(env, "refund held for a person", {
    on: "request",
    request_id: requestId,
    refund_id: held.requestId,
    amount_micro: Number(refundAmount(held)),
    hold: holdOf(held),
  });
}

/** A refund as its row stands (recorded before, held, or sent by someone else). */
async function storedOutcome(db: D1Database, requestId: string): Promise<RefundOutcome> {
  const row = await db
    .prepare("SELECT status, amount_micro, tx_hash FROM refunds WHERE request_id = ?1")
    .bind(requestId)
    .first<{ status: "owed" | "refunded"; amount_micro: number; tx_hash: string | null }>();
  return {
    status: row?.status ?? "owed",
    amount: BigInt(row?.amount_micro ?? 0),
    transaction: row?.tx_hash ?? null,
  };
}

/**
 * Sends a refund recorded as owed, and records the outcome. Safe to call again for the same
 * request (its nonce lands once). A refund of nothing (the partner could collect the whole price)
 * stays a row with amount 0.
 */
export async function sendRecordedRefund(env: Bindings, r: RecordedRefund): Promise<RefundOutcome> {
  if (r.amount === 0n) return { status: "owed", amount: r.amount, transaction: null };
  const outcome = await sendRefund(env, r).catch((e: unknown) => ({
    ok: false as const,
    error: e instanceof Error ? e.message : String(e),
  }));
  if (outcome.ok) await markRefunded(env.DB, r.requestId, outcome.transaction);
  else if ("skipped" in outcome) return storedOutcome(env.DB, r.requestId);
  // Only while still owed: a send that lost a race to one that landed must not undo it.
  else
    await env.DB.prepare(
      "UPDATE refunds SET error = ?2, updated_at = ?3 WHERE request_id = ?1 AND status = 'owed'",
    )
      // Shown on the dashboard and in its warn lines: the facilitator client (x402-gate.ts) has
      // already hidden its key in any error page it quotes.
      .bind(r.requestId, outcome.error, Date.now())
      .run();
  return outcome.ok
    ? { status: "refunded", amount: r.amount, transaction: outcome.transaction }
    : { status: "owed", amount: r.amount, transaction: null };
}

/**
 * Marks a refund landed. Never over a refund the maintainer recorded as paid by hand (their
 * transfer stays on the row): a guard only, since one is recorded only once the chain shows the
 * wallet's last authorization can no longer land (resolveRefundByHand).
 */
export const markRefunded = (db: D1Database, requestId: string, txHash: string) =>
  db
    .prepare(
      "UPDATE refunds SET status = 'refunded', tx_hash = ?2, error = NULL, updated_at = ?3 WHERE request_id = ?1 AND resolved_at IS NULL",
    )
    .bind(requestId, txHash, Date.now())
    .run();

/**
 * Marks a refund landed when the chain shows its authorization spent but no log of the spend is
 * found (a node that prunes logs, or a search that missed the block). Only the operating wallet's
 * own transfer spends that nonce (this Worker never cancels one), so the payer was paid; reading it
 * again every run would never find more, and a person could not record it either (the hand route
 * refuses a spent authorization). The row keeps the chain's evidence in `error` instead of a hash.
 */
export const markRefundedWithoutLog = (db: D1Database, requestId: string, evidence: string) =>
  db
    .prepare(
      `UPDATE refunds SET status = 'refunded', tx_hash = NULL, error = ?2, updated_at = ?3
       WHERE request_id = ?1 AND status = 'owed' AND resolved_at IS NULL`,
    )
    .bind(requestId, `landed, transaction not found: ${withoutRetryNote(evidence)}`, Date.now())
    .run();

/** A refund's last send, as its row records it: the wallet that signed it → the payer, for the amount owed. */
export interface SentRefund {
  payer: string;
  amount_micro: number;
  auth_nonce: string | null;
  asset: string | null;
  auth_from: string | null;
  valid_before: number | null;
}

/** What the chain says of a refund's last authorization, read at `head` (reconcile.ts, and a hand refund). */
export async function judgeRefund(
  chain: ChainReader,
  head: Awaited<ReturnType<ChainReader["head"]>>,
  row: SentRefund,
  usdc: string,
): Promise<Decision> {
  const validBefore = row.valid_before ?? 0;
  const terms = {
    payer: row.auth_from ?? "",
    payTo: row.payer,
    asset: row.asset ?? usdc,
    amountAtomic: BigInt(row.amount_micro),
    nonce: row.auth_nonce ?? "",
    validBefore,
  };
  return decide(
    terms,
    await readAuthorization(chain, head, terms, (validBefore - MAX_TIMEOUT_SECONDS) * 1000),
  );
}

/** The one nonce every refund of a request is signed with (bytes32). */
export async function refundNonce(requestId: string) {
  const { keccak256, stringToHex } = await import("../signer");
  return keccak256(stringToHex(`x402-skills refund:${requestId}`));
}

/** Refunds reconciliation looks at: owed, not held, worth something, not touched this minute. */
export interface OwedRefundRow {
  request_id: string;
  payer: string;
  amount_micro: number;
  reason: string;
  /** NULL: written before migration 0010, maybe sent with another nonce. */
  auth_nonce: string | null;
  asset: string | null;
  auth_from: string | null;
  /** NULL: never sent. */
  valid_before: number | null;
}
export const refundsToSettle = (db: D1Database, network: string, nowMs: number, limit: number) =>
  db
    .prepare(
      `SELECT request_id, payer, amount_micro, reason, auth_nonce, asset, auth_from, valid_before FROM refunds
       WHERE status = 'owed' AND hold IS NULL AND amount_micro > 0 AND updated_at < ?2
         AND (network = ?1 OR network IS NULL)
       ORDER BY updated_at LIMIT ?3`,
    )
    .bind(network, nowMs - 60_000, limit)
    .all<OwedRefundRow>();

/**
 * A refund reconciliation looked at and left as it is: it goes to the back of the queue. Only while
 * owed: a row settled meanwhile (a send that settled, then threw) keeps its record as written.
 */
export const touchRefund = (db: D1Database, requestId: string, note?: string) =>
  db
    .prepare(
      "UPDATE refunds SET updated_at = ?2, hold = coalesce(?3, hold) WHERE request_id = ?1 AND status = 'owed'",
    )
    .bind(requestId, Date.now(), note ?? null)
    .run();

async function sendRefund(env: Bindings, r: RecordedRefund) {
  const key = operatingKey(env);
  if (!key)
    return {
      ok: false as const,
      error: "no operating wallet configured (PARTNER_PAYER_KEY unset or not a 0x private key)",
    };
  // Without KV the hand records' copies cannot be read, and a refund a person paid would be paid
  // again: nothing is signed (said here, not left to the read's TypeError).
  if (!(env as Partial<Bindings>).KV)
    return {
      ok: false as const,
      error: "the KV binding is missing: a refund is not sent until its hand records can be read",
    };
  // A person recorded it by hand and D1 no longer says so (restored to before the record): the
  // person's transfer used no nonce of ours, so the chain would take this one too. Held for them.
  const byHand = await handRecordOf(env, r.requestId);
  if (byHand) {
    const hold = `recorded by hand (${byHand.outcome}${byHand.tx_hash ? `, tx ${byHand.tx_hash}` : ""}, ${byHand.amount_micro} micro-USDC) on ${new Date(byHand.at).toISOString()}, a record D1 no longer holds (restored?): record it again as it was; never sent by the wallet`;
    await env.DB.prepare(
      "UPDATE refunds SET hold = ?2, updated_at = ?3 WHERE request_id = ?1 AND status = 'owed' AND hold IS NULL",
    )
      .bind(r.requestId, hold, Date.now())
      .run();
    warnRefundLine(env, "refund held for a person", { on: "send", refund_id: r.requestId, hold });
    return { ok: false as const, skipped: true };
  }
  // Loaded when a refund is sent: @x402/evm and viem stay out of the isolate's start-up.
  const [{ privateKeyToAccount, getAddress }, { transferWithAuthorization }, { usdcDomain }] =
    await Promise.all([import("../signer"), import("./transfer-authorization"), import("./usdc-domain")]);
  const cfg = publicConfig(env, "http://localhost");
  const domain = usdcDomain(r.network, r.asset);
  const requirements: PaymentRequirements = {
    scheme: "exact",
    network: r.network as PaymentRequirements["network"],
    asset: r.asset,
    amount: r.amount.toString(),
    payTo: r.payer,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: domain,
  };
  const account = privateKeyToAccount(key);
  const authorization = {
    from: account.address,
    to: getAddress(r.payer),
    value: r.amount.toString(),
    validAfter: "0",
    validBefore: String(Math.floor(Date.now() / 1000) + MAX_TIMEOUT_SECONDS),
    nonce: await refundNonce(r.requestId),
  };
  // Signed here rather than by @x402/evm's client, which draws a random nonce for every payload.
  const signature = await account.signTypedData(
    transferWithAuthorization(authorization, {
      ...domain,
      chainId: Number(r.network.split(":")[1]),
      verifyingContract: getAddress(r.asset),
    }),
  );
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: { url: `refund:${r.requestId}`, description: r.reason, mimeType: "application/json" },
    accepted: requirements,
    payload: { authorization, signature },
  };
  // Recorded before sending: reconciliation reads this authorization's fate from the chain, under
  // the wallet that signed it. A row that is no longer owed (or is held) is not sent.
  const sending = await env.DB.prepare(
    `UPDATE refunds SET auth_from = ?2, valid_before = ?3, updated_at = ?4
     WHERE request_id = ?1 AND status = 'owed' AND hold IS NULL AND auth_nonce = ?5`,
  )
    .bind(r.requestId, account.address, Number(authorization.validBefore), Date.now(), authorization.nonce)
    .run();
  if (!sending.meta.changes) return { ok: false as const, skipped: true };
  const { facilitatorClient } = await x402Server();
  const settled = await facilitatorClient(env, cfg).settle(payload, requirements);
  // As for a caller's payment (settlement.ts settlementOutcome): a success that names no
  // transaction is no proof the refund moved; the row stays owed, its authorization sent, and
  // reconciliation reads the nonce on chain.
  if (settled.success && TX_HASH.test(settled.transaction ?? ""))
    return { ok: true as const, transaction: settled.transaction };
  return {
    ok: false as const,
    error: settled.success
      ? `refund settlement answered success without a transaction hash (${JSON.stringify(settled.transaction ?? null)})`
      : (settled.errorReason ?? "refund settlement failed"),
  };
}
