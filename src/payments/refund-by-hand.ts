import { redactSecrets } from "../config";
import { rpcUrlProblem } from "../config-urls";
import type { Bindings } from "../env";
import { varText } from "../var-text";
import { type ChainReader, rpcChainReader } from "./reconcile-chain";
import type { Decision } from "./reconcile-decide";
import { REST_HOLD, REST_SUFFIX, restOwed, shareOf, shareOwed } from "./refund-rest";
import { warnRefundLine } from "./refund-warn";
import {
  IN_DOUBT,
  IN_DOUBT_DECIDED,
  judgeRefund,
  NOTHING_OWED_CONTRADICTED,
  nothingOwed,
  refundNonce,
  type SentRefund,
  WITHHELD_SUFFIX,
} from "./refunds";

/**
 * Refunds a maintainer paid from their own wallet, recorded by hand (POST
 * /api/admin/resolve/refunds/{request_id} and the dashboard's "Record refund" form). A refund the
 * operating wallet sent is recorded only once the chain shows that send can never pay, so a refund
 * is never paid twice (docs/OPERATIONS.md, "Refunding by hand"). And a share kept back in doubt that
 * the partner was paid in full, recorded as nothing owed (dismissInDoubt).
 */

/**
 * Seconds past a send's valid_before before a person may record the refund as paid by hand: the
 * chain's clock lags ours, so until then the wallet's authorization may still land (and the chain
 * is not read: its head would not be past it either).
 */
const HAND_AFTER_SECONDS = 60;

/** Retry-After of a hand refund refused because the chain could not be read (503). */
export const HAND_CHECK_RETRY_AFTER_S = 30;
/** The most a maintainer's note on a decision by hand may hold (characters), kept with the row. */
export const HAND_NOTE_MAX = 500;
/**
 * The most a hand refund may say it paid (micro-USDC: 1,000,000 USDC), far above any price here: a
 * bound on what the API takes, so a slip of the keyboard past it is a 422, not a record. Less is
 * recorded as said, and flagged overpaid when above what was owed.
 */
export const HAND_PAID_MAX_MICRO = 1_000_000_000_000;

type HandCheck = { status: "refused" | "unavailable"; detail: string } | undefined;

/**
 * Whether a refund the wallet sent, its authorization expired on our clock, can be recorded as paid
 * by hand: the chain, read at its head, decides. Its nonce spent by the wallet's transfer (the log
 * found, or none: nothing else spends it, as this Worker never cancels) → it was paid, refused. Unused
 * at a head not yet past valid_before → it may still land, refused. Unused at a head past it → no
 * transfer can use it any more (transferWithAuthorization requires block time < validBefore):
 * undefined, record it. Spent on another transfer or cancelled (the evidence a refund is held
 * with) → this refund was not paid by it: the person decides, undefined. No chain to read →
 * unavailable, nothing recorded.
 */
async function checkWalletSend(
  env: Bindings,
  requestId: string,
  row: SentRefund & { network: string | null },
  given: ChainReader | undefined,
): Promise<HandCheck> {
  const unavailable = (why: string): HandCheck => ({
    status: "unavailable",
    detail: `Refund ${requestId}: cannot check the chain for the wallet's send; nothing recorded (${why})`,
  });
  if (!row.auth_from || !row.auth_nonce)
    return {
      status: "refused",
      detail: `Refund ${requestId} was sent, but its row names no authorizer or nonce to check on chain: nothing recorded`,
    };
  const rpc = varText(env.RPC_URL).trim();
  if (!given && !rpc) return unavailable("RPC_URL is not set");
  // Said by name instead of viem's "HTTP request failed … Invalid URL" (its value is not shown).
  const malformed = given ? undefined : rpcUrlProblem(rpc);
  if (malformed) return unavailable(malformed);
  let d: Decision;
  try {
    const chain = given ?? (await rpcChainReader(rpc));
    const network = row.network ?? varText(env.X402_NETWORK);
    const chainId = await chain.chainId();
    if (`eip155:${chainId}` !== network)
      return unavailable(`RPC_URL serves chain ${chainId}, the refund is on ${network}`);
    d = await judgeRefund(chain, await chain.head(), row, varText(env.USDC_ADDRESS));
  } catch (e) {
    return unavailable(redactSecrets(e instanceof Error ? e.message : String(e), env));
  }
  if (d.outcome === "paid")
    return {
      status: "refused",
      detail: `Refund ${requestId} landed from the operating wallet (tx ${d.txHash}): reconciliation records it; nothing recorded`,
    };
  if (d.outcome === "wait")
    return {
      status: "refused",
      detail: d.noLog
        ? `Refund ${requestId}: the operating wallet's refund authorization is spent on chain: this refund was paid (its transaction is not known yet); nothing recorded`
        : `Refund ${requestId} is being sent: the chain's latest block is not past the operating wallet's authorization (valid until ${new Date(
            (row.valid_before ?? 0) * 1000,
          ).toISOString()}), so it may still land; check again in a minute`,
    };
  return undefined;
}

/**
 * The return of a share a refund kept back for a partner whose authorization did not land, decided
 * before returns existed (GET /api/admin/payouts lists it under withheld_not_returned with no
 * return_request_id): no row holds it, so the maintainer's hand refund writes one, refunded, for
 * what withheldReturn would have returned: all that was kept when no other authorization of the
 * request can still land (a call signs one), else at most this one's amount. Written only while no
 * row exists, so a later automatic return finds it and sends nothing.
 */
const handReturn = (
  db: D1Database,
  requestId: string,
  tx: string,
  paidMicro: number,
  note: string | undefined,
  nowMs: number,
  nonce: string,
) =>
  db
    .prepare(
      `INSERT INTO refunds (request_id, payer, owed_micro, amount_micro, withheld_micro, reason, status, tx_hash,
         created_at, updated_at, auth_nonce, asset, network, resolved_at, resolved_note)
       SELECT ?1, r.payer,
              CASE WHEN EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?7 AND chain_status IS NOT 'not_landed')
                THEN min(r.withheld_micro, u.amount_micro) ELSE r.withheld_micro END,
              ?8, 0, ?2, 'refunded', ?3, ?4, ?4, ?5,
              coalesce(r.asset, u.asset), coalesce(r.network, u.network), ?4, ?6
       FROM refunds r JOIN upstream_payments u ON u.request_id = r.request_id AND u.chain_status = 'not_landed'
       WHERE r.request_id = ?7 AND r.withheld_micro > 0
         AND NOT EXISTS (SELECT 1 FROM refunds WHERE lower(tx_hash) = ?3)
       ON CONFLICT (request_id) DO NOTHING`,
    )
    .bind(
      requestId,
      `the partner's share kept back from refund ${requestId.slice(0, -WITHHELD_SUFFIX.length)}: its authorization did not land; refunded by hand`,
      tx,
      nowMs,
      nonce,
      note ?? null,
      requestId.slice(0, -WITHHELD_SUFFIX.length),
      paidMicro,
    );

/**
 * SQL: the undecided partner authorizations of request `request` (a bound parameter; NULL matches
 * none) whose valid_before is not before `lastLanding` (our clock minus HAND_AFTER_SECONDS): as
 * for the wallet's own sends, the chain's clock lags ours, so until then each may still land.
 */
const mayStillLand = (request: string, lastLanding: string) =>
  `SELECT id, valid_before FROM upstream_payments
   WHERE request_id = ${request} AND chain_status IS NULL AND valid_before >= ${lastLanding}`;

export async function readRow(db: D1Database, requestId: string): Promise<RefundRow | null> {
  const row = await db
    .prepare(
      `SELECT request_id, payer, amount_micro, owed_micro, withheld_micro, reason, status, tx_hash, error, hold,
              valid_before, resolved_at, resolved_note, overpaid_settled_at, overpaid_settled_note, created_at, updated_at,
              ${nothingOwed()} AS nothing_owed
       FROM refunds WHERE request_id = ?1`,
    )
    .bind(requestId)
    .first<Omit<RefundRow, "nothing_owed"> & { nothing_owed: number }>();
  return row && { ...row, nothing_owed: row.nothing_owed === 1 };
}

/**
 * A nothing-owed row a decision re-derived (refunds.ts rederivedNothingOwed): its person had been
 * told to refund it by hand, and may have while the decision ran, so a hand refund still takes it.
 * One a person recorded directly (never contradicted) takes none: one decision per row.
 */
const rederivedSql = `hold LIKE '${IN_DOUBT_DECIDED}%'`;
const rederived = (row: RefundRow) => row.nothing_owed && !!row.hold?.startsWith(IN_DOUBT_DECIDED);

/**
 * A hand refund recorded (or corrected) for another amount than its row owed: the rest is listed
 * (restOwed) or the row flagged overpaid, and a maintainer alerting on warn lines sees it.
 */
export function differsFromOwed(env: Bindings, row: RefundRow) {
  const owed = row.owed_micro ?? 0;
  if (row.owed_micro === null || owed === row.amount_micro) return false;
  warnRefundLine(env, "hand refund differs from what was owed", {
    refund_id: row.request_id,
    tx_hash: row.tx_hash,
    paid_micro: row.amount_micro,
    owed_micro: owed,
    ...(owed > row.amount_micro
      ? { rest_refund_id: `${row.request_id}${REST_SUFFIX}` }
      : { overpaid_micro: row.amount_micro - owed }),
  });
  return true;
}

/** Why a refund recorded as nothing owed takes no other decision: one decision per row. */
const dismissedAlready = (row: RefundRow) =>
  `Refund ${row.request_id} is already recorded as nothing owed (${new Date(row.resolved_at ?? 0).toISOString()}: ${row.resolved_note}): nothing recorded`;

/** A refund as the maintainer's resolve answers it. */
export interface RefundRow {
  request_id: string;
  payer: string;
  /** Owed: what the row owes. Refunded: what was paid (by hand: what the person's transfer paid). */
  amount_micro: number;
  /**
   * A hand refund's: what the row owes (migration 0023; NULL before, or not by hand): what it owed when
   * recorded, and of a partner's share what the share owes after each later decision (rederivedOverpaid).
   */
  owed_micro: number | null;
  withheld_micro: number;
  reason: string;
  status: "owed" | "refunded";
  tx_hash: string | null;
  error: string | null;
  hold: string | null;
  valid_before: number | null;
  resolved_at: number | null;
  resolved_note: string | null;
  /** An overpaid hand refund a person settled (paid back or written off: the note says), migration 0024. */
  overpaid_settled_at: number | null;
  overpaid_settled_note: string | null;
  created_at: number;
  updated_at: number;
  /** Refunded to nobody: a share kept back in doubt a person found the partner was paid (dismissInDoubt). */
  nothing_owed: boolean;
}

export type HandRefund =
  | { status: "recorded" | "replayed"; row: RefundRow; rest?: RefundRow; differs?: boolean }
  | { status: "unknown" }
  | { status: "refused" | "unavailable"; detail: string; row: RefundRow };

/**
 * Records a held or owed refund as paid by hand with `txHash` (the maintainer's own transfer), or a
 * share's return that no row holds yet (handReturn). Only while no authorization the wallet signed
 * can still pay it, or has: never sent; or HAND_AFTER_SECONDS past its valid_before and the chain
 * (RPC_URL, or `opts.reader`) shows it can no longer land and did not (checkWalletSend). Then one
 * conditional UPDATE, on the row as it was checked, so it cannot race a send: sendRefund claims a
 * row (auth_from, valid_before) only while it is owed, and this writes only while the row is owed
 * and its valid_before is still the one checked. One transfer pays one refund: a hash another
 * refund holds is refused. The same hash again answers the recorded row. A partner's share
 * (`<request_id>:withheld`, or a rest of a hand refund of it: shareOf) is recorded only once no
 * undecided authorization of its request may
 * still land, by HAND_AFTER_SECONDS' reckoning (mayStillLand): until then the partner may yet be
 * paid from it, and the caller's refund of it would be paid twice over.
 *
 * `paidMicro` is what the person's transfer paid, in the row's unit: the record keeps it as the
 * row's amount, and what the row owes as owed_micro (of a share, re-derived at each later decision),
 * since a decision (reconciliation
 * re-deriving a share's amount) may change the row while the person pays it. Paid short: the rest
 * is listed, owed and held (restOwed). Paid more: GET /api/admin/payouts flags the row
 * (overpaid_micro). A share a decision re-derived to nothing owed while the person paid it is
 * recorded too, owed 0, so overpaid by all of it until a decision raises what it owes: refusing it
 * would list the payment nowhere.
 */
export async function resolveRefundByHand(
  env: Bindings,
  requestId: string,
  txHash: string,
  paidMicro: number,
  note: string | undefined,
  opts: { reader?: ChainReader; nowMs?: number } = {},
): Promise<HandRefund> {
  const db = env.DB;
  const nowMs = opts.nowMs ?? Date.now();
  const tx = txHash.toLowerCase();
  const lastLanding = Math.floor(nowMs / 1000) - HAND_AFTER_SECONDS;
  const before = await db
    .prepare(
      "SELECT status, payer, amount_micro, auth_nonce, asset, network, auth_from, valid_before FROM refunds WHERE request_id = ?1",
    )
    .bind(requestId)
    .first<SentRefund & { status: string; network: string | null }>();
  const sent = before?.valid_before ?? null;
  const check =
    before?.status === "owed" && sent !== null && sent < lastLanding
      ? await checkWalletSend(env, requestId, before, opts.reader)
      : undefined;
  // SQLite reads every SET expression from the row as it was: owed_micro is what it owed before.
  // Of a share's family, what the share still owes of what landed (restOwed's figure, so a rest is
  // owed_micro - amount_micro): its listed amount may predate an authorization that landed since.
  const [written, returned] = check
    ? []
    : await db.batch([
        db
          .prepare(
            `WITH ${shareOwed("?7")}
             UPDATE refunds SET owed_micro = CASE WHEN (SELECT kept FROM d) > 0 THEN max(0, (SELECT kept - landed - paid FROM d))
                 WHEN status = 'owed' THEN amount_micro ELSE 0 END, amount_micro = ?8,
               status = 'refunded', tx_hash = ?2, error = NULL, resolved_at = ?3, resolved_note = ?4, updated_at = ?3
             WHERE request_id = ?1 AND (status = 'owed' OR (${nothingOwed()} AND ${rederivedSql}))
               AND (valid_before IS NULL OR valid_before < ?5) AND valid_before IS ?6
               AND NOT EXISTS (SELECT 1 FROM refunds WHERE lower(tx_hash) = ?2)
               AND NOT EXISTS (${mayStillLand("?7", "?5")})`,
          )
          .bind(requestId, tx, nowMs, note ?? null, lastLanding, sent, shareOf(requestId), paidMicro),
        ...(requestId.endsWith(WITHHELD_SUFFIX)
          ? [handReturn(db, requestId, tx, paidMicro, note, nowMs, await refundNonce(requestId))]
          : []),
        restOwed(db, requestId, tx, nowMs, await refundNonce(`${requestId}${REST_SUFFIX}`)),
      ]);
  const row = await readRow(db, requestId);
  if (!row) return { status: "unknown" };
  if (check) return { ...check, row };
  const rest = async () => {
    const r = row.owed_micro !== null && row.owed_micro > row.amount_micro;
    return r ? ((await readRow(db, `${requestId}${REST_SUFFIX}`)) ?? undefined) : undefined;
  };
  if (written?.meta.changes || returned?.meta.changes)
    return { status: "recorded", row, rest: await rest(), differs: differsFromOwed(env, row) };
  if (row.nothing_owed && !rederived(row)) return { status: "refused", row, detail: dismissedAlready(row) };
  if (row.status === "refunded" && row.resolved_at !== null && row.tx_hash?.toLowerCase() === tx)
    return row.amount_micro === paidMicro
      ? { status: "replayed", row, rest: await rest() }
      : {
          status: "refused",
          row,
          detail: `Refund ${requestId} is already recorded as paid by hand with this transaction, for ${row.amount_micro} micro-USDC, not ${paidMicro}: nothing recorded (if ${paidMicro} is what it paid, correct the record with outcome amount_corrected)`,
        };
  if (row.status === "refunded" && !row.nothing_owed)
    return {
      status: "refused",
      row,
      detail:
        row.resolved_at === null
          ? `Refund ${requestId} already landed from the operating wallet (${row.tx_hash ? `tx ${row.tx_hash}` : "its transaction not found on chain"}): nothing recorded`
          : `Refund ${requestId} is already recorded as paid by hand with another transaction (${row.tx_hash})`,
    };
  const landing = await db
    .prepare(`${mayStillLand("?1", "?2")} ORDER BY valid_before DESC LIMIT 1`)
    .bind(shareOf(requestId), lastLanding)
    .first<{ id: number; valid_before: number }>();
  if (landing)
    return {
      status: "refused",
      row,
      detail: `Refund ${requestId} is a partner's share, and the partner's authorization upstream_payments ${landing.id} of this request is not decided yet and may still land until ${new Date(
        landing.valid_before * 1000,
      ).toISOString()}, paying the partner from this share; reconciliation decides it. Nothing recorded: check again after ${new Date(
        (landing.valid_before + HAND_AFTER_SECONDS) * 1000,
      ).toISOString()}, and refund only what the wallet's transfers show the partner was not paid.`,
    };
  if (row.valid_before !== null && row.valid_before >= lastLanding)
    return {
      status: "refused",
      row,
      detail: `Refund ${requestId} is being sent: the operating wallet's authorization may land until ${new Date(
        row.valid_before * 1000,
      ).toISOString()}; reconciliation records it if it does. Check again after ${new Date(
        (row.valid_before + HAND_AFTER_SECONDS) * 1000,
      ).toISOString()}.`,
    };
  const holder = await db
    .prepare("SELECT request_id FROM refunds WHERE lower(tx_hash) = ?1 LIMIT 1")
    .bind(tx)
    .first<{ request_id: string }>();
  return {
    status: "refused",
    row,
    detail: holder
      ? `Transaction ${tx} is already recorded for refund ${holder.request_id}: one transfer pays one refund`
      : `Refund ${requestId} changed while it was being recorded: read it again`,
  };
}

export type Dismissal =
  | { status: "recorded" | "replayed"; row: RefundRow }
  | { status: "unknown" }
  | { status: "refused"; detail: string; row: RefundRow };

/**
 * Whether a refund, as GET /api/admin/payouts lists it, is one dismissInDoubt takes: the dashboard
 * offers its form beside such a row only (the UPDATE below is what decides).
 */
export const inDoubtUndecided = (r: Record<string, unknown>) =>
  r.status === "owed" &&
  (r.valid_before ?? null) === null &&
  (r.resolved_at ?? null) === null &&
  typeof r.hold === "string" &&
  ((String(r.request_id).endsWith(WITHHELD_SUFFIX) &&
    r.hold.startsWith(IN_DOUBT) &&
    !r.hold.startsWith(IN_DOUBT_DECIDED)) ||
    (String(r.request_id).endsWith(REST_SUFFIX) &&
      (r.hold.startsWith(REST_HOLD) || r.hold.startsWith(IN_DOUBT_DECIDED))));

/**
 * Records a share kept back in doubt as owed to nobody: a person checked the operating wallet's
 * transfers and found the partner was paid all of it (a part paid: refund the rest by hand instead,
 * resolveRefundByHand). Only a `<request_id>:withheld` listing held in doubt (inDoubtReturn), owed
 * and never sent, that reconciliation has not decided since: that decision found the authorization
 * it waited for did not land, so the partner was not paid with it and the share is the caller's.
 * And only while the request's recorded partner authorizations (upstream_payments) do not say
 * otherwise: none undecided (held for a person or not: its decision is still to come, and a
 * not_landed one would find the listing already taken), none not_landed (the partner was not paid
 * with it), and what landed covers the share (else the caller is owed the rest). Without any
 * recorded, the person's word is all there is; should one turn up later and its decision (landed
 * or not) leave what landed short of the share, that decision's batch gives the row back to a
 * person, owed for the rest and held (refunds.ts contradictedNothingOwed): a hand refund takes it.
 * One conditional UPDATE on all of that, so it cannot race the rewrite of that decision (owedRefund
 * rewrites a row only while it is owed and not resolved, so a dismissed row stays as recorded until
 * a decision contradicts it) nor a hand refund (which writes only an owed row), and no send ever
 * claims it (sendRefund: owed rows only). It becomes refunded, by hand and with no transfer
 * (nothingOwed: what tells it from a refund paid, which always has one; sums of money refunded leave
 * it out), and keeps its amount, hold and reason for the record, with resolved_note (the person's
 * evidence, required). The same note again answers the recorded row.
 *
 * Also the rest a hand refund paid short of (`<request_id>:rest`, restOwed), never sent: a person
 * who refunded by hand only the part of a share the partner was not paid (the wallet's transfers
 * show the partner paid the rest, none recorded) records the rest so, on their word and note.
 */
export async function dismissInDoubt(
  db: D1Database,
  requestId: string,
  note: string,
  nowMs = Date.now(),
): Promise<Dismissal> {
  const written = await db
    .prepare(
      `UPDATE refunds SET status = 'refunded', tx_hash = NULL, error = NULL, resolved_at = ?2, resolved_note = ?3,
         updated_at = ?2
       WHERE request_id = ?1 AND status = 'owed' AND valid_before IS NULL AND auth_from IS NULL
         AND resolved_at IS NULL
         AND ((substr(request_id, -${REST_SUFFIX.length}) = '${REST_SUFFIX}'
               AND (hold LIKE '${REST_HOLD}%' OR hold LIKE '${IN_DOUBT_DECIDED}%'))
           OR (substr(request_id, -${WITHHELD_SUFFIX.length}) = '${WITHHELD_SUFFIX}'
             AND hold LIKE '${IN_DOUBT}%' AND hold NOT LIKE '${IN_DOUBT_DECIDED}%'
             AND NOT EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?4 AND chain_status IS NOT 'landed')
             AND coalesce((SELECT sum(amount_micro) FROM upstream_payments WHERE request_id = ?4), refunds.amount_micro)
               >= refunds.amount_micro))`,
    )
    .bind(requestId, nowMs, note, requestId.slice(0, -WITHHELD_SUFFIX.length))
    .run();
  const row = await readRow(db, requestId);
  if (!row) return { status: "unknown" };
  if (written.meta.changes) return { status: "recorded", row };
  const refused = (detail: string): Dismissal => ({
    status: "refused",
    row,
    detail: `Refund ${requestId} ${detail}`,
  });
  if (row.nothing_owed)
    return row.resolved_note === note
      ? { status: "replayed", row }
      : { status: "refused", row, detail: dismissedAlready(row) };
  if (row.status === "refunded")
    return refused(
      row.resolved_at === null
        ? `already landed from the operating wallet (${row.tx_hash ? `tx ${row.tx_hash}` : "its transaction not found on chain"}): nothing recorded`
        : `is already recorded as paid by hand (tx ${row.tx_hash}): nothing recorded`,
    );
  if (!requestId.endsWith(WITHHELD_SUFFIX) || !row.hold?.startsWith(IN_DOUBT))
    return refused(
      `is not a partner's share kept back in doubt (a ${WITHHELD_SUFFIX} refund held "${IN_DOUBT} …") nor the rest of a hand refund (${REST_SUFFIX}): only such a listing can be recorded as nothing owed; a refund you paid is recorded with tx_hash. Nothing recorded`,
    );
  if (row.valid_before !== null)
    return refused(
      `was sent by the operating wallet (its authorization valid until ${new Date(row.valid_before * 1000).toISOString()}): only a listing never sent can be recorded as nothing owed. Nothing recorded`,
    );
  if (row.hold.startsWith(IN_DOUBT_DECIDED) && row.hold.includes(NOTHING_OWED_CONTRADICTED))
    return refused(
      `was recorded as nothing owed, and a decision since on the request's partner authorizations (by reconciliation or a person's resolve) contradicts that record: what landed for the request is less than the share, so the amount now recorded is the caller's (its hold says what was recorded and what the chain says); refund it by hand (tx_hash). Nothing recorded`,
    );
  if (row.hold.startsWith(IN_DOUBT_DECIDED))
    return refused(
      `was decided by reconciliation since it was listed: the authorization this share waited for did not land, so the partner was not paid with it and the amount recorded is the caller's; refund it by hand (tx_hash). Nothing recorded`,
    );
  const chain = await contradiction(db, requestId.slice(0, -WITHHELD_SUFFIX.length), row.amount_micro, nowMs);
  return refused(chain ?? "changed while it was being recorded: read it again");
}

/**
 * What the recorded partner authorizations of `requestId` say against recording its kept share
 * (`kept`, micro-USDC) as nothing owed, as a refusal's words; undefined when nothing (none
 * recorded, or landed ones that cover it): the conditions of dismissInDoubt's UPDATE, told apart.
 */
async function contradiction(
  db: D1Database,
  requestId: string,
  kept: number,
  nowMs: number,
): Promise<string | undefined> {
  const { results } = await db
    .prepare(
      "SELECT id, amount_micro, chain_status, hold, valid_before FROM upstream_payments WHERE request_id = ?1 ORDER BY id",
    )
    .bind(requestId)
    .all<{
      id: number;
      amount_micro: number;
      chain_status: string | null;
      hold: string | null;
      valid_before: number | null;
    }>();
  const undecided = results.find((u) => u.chain_status === null);
  // A hand refund of the share is refused until every such authorization is past landing
  // (resolveRefundByHand): the words say when, while that is still to come.
  const lastValid = Math.max(0, ...results.map((u) => (u.chain_status === null ? (u.valid_before ?? 0) : 0)));
  const whenPast =
    lastValid >= Math.floor(nowMs / 1000) - HAND_AFTER_SECONDS
      ? `, once no undecided authorization of the request can land any more: wait until after ${new Date(
          (lastValid + HAND_AFTER_SECONDS) * 1000,
        ).toISOString()} (a hand refund of the share is refused before then, as the partner may still be paid from it)`
      : "";
  // One not held may be one the runs found spent on a transfer other than the one signed: they
  // leave it undecided and record that nowhere here (only the Cron run's errors say it), and the
  // resolve refuses it (not held). So the words name that case and what a person can still do.
  if (undecided)
    return undecided.hold === null
      ? `has a partner authorization recorded that is not decided yet (upstream_payments ${undecided.id}): reconciliation decides it once it lands or expires unused, unless the chain shows its nonce spent on a transfer other than the one signed, which no run decides (each Cron run fails naming "upstream ${undecided.id}: … left undecided for a person") and POST /api/admin/resolve/upstream_payments/${undecided.id} does not take (it is not held). While it is undecided whether the partner was paid is not known and nothing owed cannot be recorded: wait for its decision (not landed: the share is the caller's), or check the operating wallet's transfers to the partner and refund by hand (tx_hash) what they show the partner was not paid${whenPast}. Nothing recorded`
      : `has a partner authorization recorded that is not decided yet (upstream_payments ${undecided.id}, held for a person: decide it with POST /api/admin/resolve/upstream_payments/${undecided.id}), so whether the partner was paid is not known: its decision settles this share (expired unused or cancelled: it is the caller's, to refund by hand). Nothing recorded`;
  const notLanded = results.find((u) => u.chain_status === "not_landed");
  if (notLanded)
    return `has a partner authorization the chain shows did not land (upstream_payments ${notLanded.id}): the partner was not paid with it, so the amount recorded is the caller's; refund it by hand (tx_hash). Nothing recorded`;
  const landed = results.reduce((sum, u) => sum + u.amount_micro, 0);
  if (results.length && landed < kept)
    return `has partner authorizations recorded that landed for ${landed} micro-USDC, less than the ${kept} kept: the partner was paid only that, and the caller is owed the other ${kept - landed}; refund that by hand (tx_hash, and say so in the note). Nothing recorded`;
  return undefined;
}
