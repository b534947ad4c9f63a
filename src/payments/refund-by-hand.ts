import { redactSecrets } from "../config";
import type { Bindings } from "../env";
import { type ChainReader, rpcChainReader } from "./reconcile-chain";
import type { Decision } from "./reconcile-decide";
import { judgeRefund, refundNonce, type SentRefund, WITHHELD_SUFFIX } from "./refunds";

/**
 * Refunds a maintainer paid from their own wallet, recorded by hand (POST
 * /api/admin/resolve/refunds/{request_id} and the dashboard's "Record refund" form). A refund the
 * operating wallet sent is recorded only once the chain shows that send can never pay, so a refund
 * is never paid twice (docs/OPERATIONS.md, "Refunding by hand").
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
  if (!given && !env.RPC_URL) return unavailable("RPC_URL is not set");
  let d: Decision;
  try {
    const chain = given ?? (await rpcChainReader(env.RPC_URL as string));
    const network = row.network ?? env.X402_NETWORK;
    const chainId = await chain.chainId();
    if (`eip155:${chainId}` !== network)
      return unavailable(`RPC_URL serves chain ${chainId}, the refund is on ${network}`);
    d = await judgeRefund(chain, await chain.head(), row, env.USDC_ADDRESS);
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
  note: string | undefined,
  nowMs: number,
  nonce: string,
) =>
  db
    .prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, tx_hash, created_at,
         updated_at, auth_nonce, asset, network, resolved_at, resolved_note)
       SELECT ?1, r.payer,
              CASE WHEN EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?7 AND chain_status IS NOT 'not_landed')
                THEN min(r.withheld_micro, u.amount_micro) ELSE r.withheld_micro END,
              0, ?2, 'refunded', ?3, ?4, ?4, ?5,
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
    );

/** A refund as the maintainer's resolve answers it. */
export interface RefundRow {
  request_id: string;
  payer: string;
  amount_micro: number;
  withheld_micro: number;
  reason: string;
  status: "owed" | "refunded";
  tx_hash: string | null;
  error: string | null;
  hold: string | null;
  valid_before: number | null;
  resolved_at: number | null;
  resolved_note: string | null;
  created_at: number;
  updated_at: number;
}

export type HandRefund =
  | { status: "recorded" | "replayed"; row: RefundRow }
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
 * refund holds is refused. The same hash again answers the recorded row.
 */
export async function resolveRefundByHand(
  env: Bindings,
  requestId: string,
  txHash: string,
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
  const [written, returned] = check
    ? []
    : await db.batch([
        db
          .prepare(
            `UPDATE refunds SET status = 'refunded', tx_hash = ?2, error = NULL, resolved_at = ?3, resolved_note = ?4,
               updated_at = ?3
             WHERE request_id = ?1 AND status = 'owed' AND (valid_before IS NULL OR valid_before < ?5)
               AND valid_before IS ?6
               AND NOT EXISTS (SELECT 1 FROM refunds WHERE lower(tx_hash) = ?2)`,
          )
          .bind(requestId, tx, nowMs, note ?? null, lastLanding, sent),
        ...(requestId.endsWith(WITHHELD_SUFFIX)
          ? [handReturn(db, requestId, tx, note, nowMs, await refundNonce(requestId))]
          : []),
      ]);
  const row = await db
    .prepare(
      `SELECT request_id, payer, amount_micro, withheld_micro, reason, status, tx_hash, error, hold, valid_before,
              resolved_at, resolved_note, created_at, updated_at
       FROM refunds WHERE request_id = ?1`,
    )
    .bind(requestId)
    .first<RefundRow>();
  if (!row) return { status: "unknown" };
  if (check) return { ...check, row };
  if (written?.meta.changes || returned?.meta.changes) return { status: "recorded", row };
  if (row.status === "refunded")
    return row.resolved_at !== null && row.tx_hash?.toLowerCase() === tx
      ? { status: "replayed", row }
      : {
          status: "refused",
          row,
          detail:
            row.resolved_at === null
              ? `Refund ${requestId} already landed from the operating wallet (${row.tx_hash ? `tx ${row.tx_hash}` : "its transaction not found on chain"}): nothing recorded`
              : `Refund ${requestId} is already recorded as paid by hand with another transaction (${row.tx_hash})`,
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
