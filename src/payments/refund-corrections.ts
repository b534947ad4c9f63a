import type { Bindings } from "../env";
import { nothingOwed } from "../partners/nothing-owed";
import { differsFromOwed, type HandRefund, type RefundRow, readRow } from "./refund-by-hand";
import { REST_SUFFIX, restOwed, shareOf, untouchedRest } from "./refund-rest";
import { refundNonce } from "./refunds";

/**
 * Corrections of a hand refund already recorded (docs/OPERATIONS.md, "Refunding by hand"): its
 * amount typed wrong (a slipped zero turns 3000 owed into 30000 "overpaid"), and an overpayment
 * settled (paid back, or written off). Without them such a row stayed flagged on top of the
 * dashboard for good, and every follow-up was a 409.
 */

export type Settled =
  | { status: "recorded" | "replayed"; row: RefundRow }
  | { status: "unknown" }
  | { status: "refused"; detail: string; row: RefundRow };

/** SQL: the partner authorizations of the request bound as `request` that are not decided yet. */
const undecided = (request: string) =>
  `SELECT id FROM upstream_payments WHERE request_id = ${request} AND chain_status IS NULL`;

/**
 * Records an overpaid hand refund as settled, with the person's note (required: "paid back in tx
 * …" or "written off: …"): GET /api/admin/payouts no longer flags it (overpaid_micro), and the
 * row keeps what was paid and owed. The same note again answers the recorded row. Of a share's
 * family (shareOf), refused while an authorization of its request is undecided: that decision
 * re-derives what the share owes, and may find the "overpaid" part owed after all (an expiry), which
 * a settled row would hide.
 */
export async function settleOverpayment(
  db: D1Database,
  requestId: string,
  note: string,
  nowMs = Date.now(),
): Promise<Settled> {
  const written = await db
    .prepare(
      `UPDATE refunds SET overpaid_settled_at = ?2, overpaid_settled_note = ?3, updated_at = ?2
       WHERE request_id = ?1 AND status = 'refunded' AND owed_micro IS NOT NULL AND amount_micro > owed_micro
         AND overpaid_settled_at IS NULL AND NOT EXISTS (${undecided("?4")})`,
    )
    .bind(requestId, nowMs, note, shareOf(requestId))
    .run();
  const row = await readRow(db, requestId);
  if (!row) return { status: "unknown" };
  if (written.meta.changes) return { status: "recorded", row };
  if (row.overpaid_settled_at !== null)
    return row.overpaid_settled_note === note
      ? { status: "replayed", row }
      : {
          status: "refused",
          row,
          detail: `Refund ${requestId}'s overpayment is already settled (${new Date(row.overpaid_settled_at).toISOString()}: ${row.overpaid_settled_note}): nothing recorded`,
        };
  const overpaid = row.status === "refunded" && row.owed_micro !== null && row.amount_micro > row.owed_micro;
  const pending =
    overpaid &&
    (await db
      .prepare(`${undecided("?1")} LIMIT 1`)
      .bind(shareOf(requestId))
      .first<{ id: number }>());
  if (pending)
    return {
      status: "refused",
      row,
      detail: `Refund ${requestId} is of a partner's share, and the partner's authorization upstream_payments ${pending.id} of this request is not decided yet: its decision re-derives what the share owes and may find this overpayment owed to the caller after all. Nothing recorded: settle it once reconciliation has decided that authorization`,
    };
  return {
    status: "refused",
    row,
    detail: `Refund ${requestId} is not a hand refund recorded for more than it owed: no overpayment to settle. Nothing recorded`,
  };
}

/**
 * Corrects the amount a hand refund was recorded with (`tx`: the transaction it was recorded with;
 * `paidMicro`: what that transfer really paid), while its rest (`<request_id>:rest`) is as the
 * record wrote it, owed and untouched: in one batch the rest follows (rewritten for what is still
 * short of what the row owes, of a share what the share still owes of what landed, or removed when
 * nothing is), and an overpayment settled before
 * is no longer (its amount changed). A rest someone acted on (recorded, or re-derived by a
 * decision) is refused: correct nothing behind their back. Only a hand refund recorded with the
 * amounts it paid and owed (migration 0023); the note, if any, is added to the record's.
 */
export async function correctHandAmount(
  env: Bindings,
  requestId: string,
  txHash: string,
  paidMicro: number,
  note: string | undefined,
  nowMs = Date.now(),
): Promise<HandRefund> {
  const db = env.DB;
  const tx = txHash.toLowerCase();
  const rest = `${requestId}${REST_SUFFIX}`;
  const restTouched = `SELECT 1 FROM refunds r WHERE r.request_id = ?1 || '${REST_SUFFIX}' AND NOT ${untouchedRest("r")}`;
  const corrected = "SELECT 1 FROM refunds WHERE request_id = ?1 AND updated_at = ?3 AND amount_micro = ?4";
  // The rest is rewritten by a delete and an insert: it keeps the time it was first owed. Read
  // before the batch, which writes nothing if the rest is touched meanwhile (restTouched).
  const born = await db
    .prepare(`SELECT created_at FROM refunds WHERE request_id = ?1 AND ${untouchedRest()}`)
    .bind(rest)
    .first<number>("created_at");
  const [written] = await db.batch([
    db
      .prepare(
        `UPDATE refunds SET amount_micro = ?4, overpaid_settled_at = NULL, overpaid_settled_note = NULL, updated_at = ?3,
           resolved_note = coalesce(resolved_note || '; ', '') || 'amount corrected from ' || amount_micro || ' to ' || CAST(?4 AS INTEGER)
             || coalesce(': ' || ?5, '')
         WHERE request_id = ?1 AND status = 'refunded' AND tx_hash = ?2 AND resolved_at IS NOT NULL
           AND NOT ${nothingOwed()} AND owed_micro IS NOT NULL AND amount_micro <> ?4 AND NOT EXISTS (${restTouched})`,
      )
      .bind(requestId, tx, nowMs, paidMicro, note ?? null),
    db
      .prepare(`DELETE FROM refunds WHERE request_id = ?2 AND ${untouchedRest()} AND EXISTS (${corrected})`)
      .bind(requestId, rest, nowMs, paidMicro),
    restOwed(db, requestId, tx, nowMs, await refundNonce(rest), born),
  ]);
  const row = await readRow(db, requestId);
  if (!row) return { status: "unknown" };
  const restRow = async () => (await readRow(db, rest)) ?? undefined;
  if (written?.meta.changes)
    return { status: "recorded", row, rest: await restRow(), differs: differsFromOwed(env, row) };
  const refused = (detail: string): HandRefund => ({
    status: "refused",
    row,
    detail: `Refund ${requestId} ${detail}`,
  });
  if (
    row.status !== "refunded" ||
    row.resolved_at === null ||
    row.nothing_owed ||
    row.tx_hash?.toLowerCase() !== tx
  )
    return refused(
      `is not recorded as paid by hand with transaction ${tx}: only such a record can be corrected (record a hand refund without an outcome). Nothing recorded`,
    );
  if (row.owed_micro === null)
    return refused(
      "was recorded by hand before records kept what was paid and owed: its amount cannot be corrected. Nothing recorded",
    );
  if (row.amount_micro === paidMicro) return { status: "replayed", row, rest: await restRow() };
  return refused(
    `has a rest (${rest}) someone acted on since it was listed (recorded, or re-derived by a decision): the correction would change it behind their back. Nothing recorded`,
  );
}
