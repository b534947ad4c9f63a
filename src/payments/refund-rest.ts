import { nothingOwed } from "../partners/nothing-owed";
import { IN_DOUBT_DECIDED, WITHHELD_SUFFIX } from "./refunds";

/**
 * The rest of a hand refund that paid short of what its row owed (`<request_id>:rest`, restOwed):
 * owed and held for the person who paid the first part. When that row is a partner's share
 * (`<request_id>:withheld`), its rests (`…:withheld:rest`, `…:rest:rest`) are the same share: the
 * partner may still be paid from them, so they get the share's guards and each decision on the
 * request's partner authorizations re-derives them (rederivedRests).
 */

/** The request id under which what a hand refund paid short of what its row owed is listed. */
export const REST_SUFFIX = ":rest";
/** How such a row's hold starts: what lets a person record it as nothing owed (dismissInDoubt). */
export const REST_HOLD = "paid by hand ";

/**
 * The request whose partner's share a refund is: `<request_id>:withheld`, or a rest of a hand
 * refund of it, however deep; null for any other refund.
 */
export function shareOf(requestId: string) {
  let id = requestId;
  while (id.endsWith(REST_SUFFIX)) id = id.slice(0, -REST_SUFFIX.length);
  return id.endsWith(WITHHELD_SUFFIX) ? id.slice(0, -WITHHELD_SUFFIX.length) : null;
}

/**
 * SQL: whether refunds row `t` is a rest (`:rest`, once or more) of the share of the request bound
 * as `request` (no LIKE: request ids may hold `%` or `_`).
 */
const restOfShare = (t: string, request: string) => {
  const share = `${request} || '${WITHHELD_SUFFIX}'`;
  const tail = `substr(${t}.request_id, length(${share}) + 1)`;
  return `(substr(${t}.request_id, 1, length(${share})) = ${share} AND ${tail} <> '' AND replace(${tail}, '${REST_SUFFIX}', '') = '')`;
};

/**
 * SQL: the CTE `d (kept, landed, pending, paid, owed)` of the share of the request bound as
 * `request`: its kept share (the request's refund's withheld_micro; NULL without that row), what its
 * partner authorizations landed and what those undecided may yet move, what hand refunds of the
 * share and its rests paid, and what is still owed of it, max(0, kept - landed - pending - paid):
 * the one formula restOwed and rederivedRests both write. `decided`: an authorization being decided in the same batch (its id,
 * and what it landed), counted as landed whatever its row says yet.
 */
export const shareOwed = (request: string, decided?: { id: string; landed: string }) => {
  const other = decided ? ` AND id <> ${decided.id}` : "";
  return `d (kept, landed, pending, paid, owed) AS (
         SELECT kept, landed, pending, paid, max(0, kept - landed - pending - paid) FROM (SELECT
           (SELECT withheld_micro FROM refunds WHERE request_id = ${request}) AS kept,
           coalesce((SELECT sum(amount_micro) FROM upstream_payments
                     WHERE request_id = ${request}${other} AND chain_status = 'landed'), 0)${decided ? ` + CAST(${decided.landed} AS INTEGER)` : ""} AS landed,
           coalesce((SELECT sum(amount_micro) FROM upstream_payments
                     WHERE request_id = ${request}${other} AND chain_status IS NULL), 0) AS pending,
           coalesce((SELECT sum(p.amount_micro) FROM refunds p
                     WHERE (p.request_id = ${request} || '${WITHHELD_SUFFIX}' OR ${restOfShare("p", request)})
                       AND p.status = 'refunded' AND NOT ${nothingOwed("p")}), 0) AS paid))`;
};

/**
 * What a hand refund (recorded or corrected in the same batch, at `nowMs` with `tx`) paid short of
 * what its row owed then, as a row of its own: owed and held (a hand refund takes it, no send ever
 * does: the person who paid the first part may be paying the rest already), so the rest stays
 * listed ("Refunds owed") until a person records it too. Written only by the batch that wrote the
 * hand refund (its updated_at and transaction), once. Of a share's family (shareOf) the rest is what
 * the share still owes of what landed (shareOwed's kept - landed - paid, this payment counted), not
 * what the row owed when it was listed: an authorization that landed since paid the partner part of
 * it, and the caller is owed only the other part; none when that is 0. Undecided ones are not
 * subtracted at birth (rederivedRests does so at each later decision): a rest left unwritten could
 * not come back when one of them expired unused, and the caller's part would be listed nowhere; a
 * hand refund of the rest waits for them anyway (the share's "may still land" guard). A share with no kept figure (no refund row of its
 * request) keeps the row's own: owed_micro - amount_micro. `bornMs`: the created_at of the rest a
 * correction rewrites (it is owed since then: the dashboard's age of a row reads created_at). Of a share the rest does
 * not ask owed_micro: that is net of undecided authorizations too (rederivedOverpaid), so a payment
 * between the two figures would otherwise write no rest, and the caller's part would be listed
 * nowhere once one of them expired unused.
 */
export const restOwed = (
  db: D1Database,
  requestId: string,
  tx: string,
  nowMs: number,
  nonce: string,
  bornMs: number | null = null,
) =>
  db
    .prepare(
      `WITH ${shareOwed("?5")}
       INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
         hold, auth_nonce, asset, network)
       SELECT ?1 || '${REST_SUFFIX}', payer, rest, 0,
              'the rest of refund ' || ?1 || ', paid by hand short of what it owed', 'owed', coalesce(?6, ?3), ?3,
              '${REST_HOLD}' || amount_micro || ' micro-USDC of the ' || owed_micro || ' refund ' || ?1
                || ' owed when it was recorded (tx ' || tx_hash || ')'
                || CASE WHEN kept > 0 THEN ', and of the ' || kept || ' kept of this partner''s share its authorizations landed '
                  || landed || CASE WHEN pending > 0 THEN ' (those not decided yet may still move ' || pending || ')' ELSE '' END
                  || ' and hand refunds paid ' || paid ELSE '' END
                || ': refund the other ' || rest || ' by hand, or, if nobody is owed it (the partner was paid that part of a share kept in doubt), record it as nothing owed with a note naming the transfer. Reconciliation never sends it',
              ?4, asset, network
       FROM (SELECT r.*, d.kept, d.landed, d.pending, d.paid,
                    CASE WHEN d.kept > 0 THEN max(0, d.kept - d.landed - d.paid) ELSE r.owed_micro - r.amount_micro END AS rest
             FROM refunds r, d
             WHERE r.request_id = ?1 AND r.updated_at = ?3 AND r.tx_hash = ?2
               AND (d.kept > 0 OR r.owed_micro > r.amount_micro))
       WHERE rest > 0
       ON CONFLICT (request_id) DO NOTHING`,
    )
    .bind(requestId, tx, nowMs, nonce, shareOf(requestId), bornMs);

/** SQL: a rest no person or decision has touched since restOwed wrote it (a correction may rewrite it). */
export const untouchedRest = (t = "refunds") =>
  `(${t}.status = 'owed' AND ${t}.resolved_at IS NULL AND ${t}.valid_before IS NULL AND ${t}.auth_from IS NULL
    AND ${t}.hold LIKE '${REST_HOLD}%')`;

/**
 * The statement that keeps each open rest of a request's share true to a decision on one of its
 * partner authorizations (`upstream`, decided landed with `landedMicros` its amount, else 0), in
 * the batch that takes it (only while that row is undecided), as rederivedNothingOwed keeps the
 * share itself: owed the kept share (the request's refund's withheld_micro) minus what landed (this
 * decision counted), what those still undecided may yet move, and what hand refunds of the share
 * and its rests paid, never below 0. So an authorization that lands for the rest stops it telling a
 * person to pay what the partner was paid. At 0 it is nothing owed (refunded, by nobody: resolved_at
 * this decision's time, no transfer), held "decided since" so that a hand refund paid meanwhile is
 * still recorded (flagged overpaid) and a later decision that raises it makes it owed again. A rest
 * a person recorded (paid, or nothing owed on their word) is never touched, nor one sent.
 */
export function rederivedRests(
  db: D1Database,
  upstream: { id: number; request_id: string },
  landedMicros: number,
  said: string,
  now: number,
) {
  return db
    .prepare(
      `WITH ${shareOwed("?1", { id: "?2", landed: "?3" })},
       n (owed, said) AS (
         SELECT owed,
           'the partner''s authorizations of this request landed for ' || landed || ' micro-USDC of the ' || kept
           || ' kept' || CASE WHEN pending > 0 THEN ' (and those not decided yet may still move ' || pending || ')' ELSE '' END
           || ', and hand refunds of the share paid ' || paid
         FROM d)
       UPDATE refunds SET
         status = CASE WHEN (SELECT owed FROM n) = 0 THEN 'refunded' ELSE 'owed' END,
         amount_micro = (SELECT owed FROM n),
         resolved_at = CASE WHEN (SELECT owed FROM n) = 0 THEN ?5 END,
         resolved_note = CASE WHEN (SELECT owed FROM n) = 0 THEN 'nothing owed, by reconciliation: ' || ?4 END,
         error = NULL, updated_at = ?5,
         hold = '${IN_DOUBT_DECIDED} (' || ?4 || '): ' || (SELECT said FROM n)
           || CASE WHEN (SELECT owed FROM n) = 0
             THEN ': nothing is owed (a hand refund paid meanwhile is still recorded, flagged overpaid)'
             ELSE ': the caller is owed ' || CASE WHEN (SELECT pending FROM d) > 0 THEN 'at least ' ELSE '' END
               || 'the other ' || (SELECT owed FROM n) || '. Refund this by hand, for the amount now recorded, or record it as nothing owed with a note naming the transfer. Reconciliation never sends it' END
           || '; before this decision: ' || hold
       WHERE ${restOfShare("refunds", "?1")} AND valid_before IS NULL AND auth_from IS NULL
         AND ((status = 'owed' AND resolved_at IS NULL
               AND (hold LIKE '${REST_HOLD}%' OR hold LIKE '${IN_DOUBT_DECIDED}%'))
           OR (${nothingOwed()} AND hold LIKE '${IN_DOUBT_DECIDED}%'))
         AND (SELECT kept FROM d) > 0 AND amount_micro <> (SELECT owed FROM n)
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE id = ?2 AND chain_status IS NULL)`,
    )
    .bind(upstream.request_id, upstream.id, landedMicros, said, now);
}

/**
 * The statement that keeps the overpaid flag of each hand refund of a request's share (the
 * `<request_id>:withheld` row and its rests: GET /api/admin/payouts' overpaid_micro, amount_micro
 * over owed_micro) true to a decision on one of its partner authorizations, in the same batch as
 * rederivedRests and on the same figures: the share owed the caller the kept share minus what landed
 * (this decision counted) and what those undecided may yet move, and each hand refund owed that
 * minus what the family's refunds before it paid (a rest is born after the row it is the rest of, so
 * a shorter id came first). Without it, a refund recorded before an authorization landed kept saying
 * it paid what was owed (the partner and the caller both paid from one share), and one recorded
 * against a share re-derived to 0 stayed "overpaid by all of it" after the authorization that made it
 * 0 expired unused. Only owed_micro is rewritten (the person's record, note and the row's status
 * stand); never a settled overpayment (a person closed it), nor a record kept before migration 0023
 * (no owed_micro).
 */
export function rederivedOverpaid(
  db: D1Database,
  upstream: { id: number; request_id: string },
  landedMicros: number,
  _said: string,
  now: number,
) {
  const family = (t: string) => `(${t}.request_id = ?1 || '${WITHHELD_SUFFIX}' OR ${restOfShare(t, "?1")})`;
  const paidBefore = `coalesce((SELECT sum(p.amount_micro) FROM refunds p
      WHERE ${family("p")} AND p.status = 'refunded' AND NOT ${nothingOwed("p")}
        AND length(p.request_id) < length(refunds.request_id)), 0)`;
  const owed = `max(0, (SELECT kept - landed - pending FROM d) - ${paidBefore})`;
  return db
    .prepare(
      `WITH ${shareOwed("?1", { id: "?2", landed: "?3" })}
       UPDATE refunds SET owed_micro = ${owed}, updated_at = ?4
       WHERE ${family("refunds")} AND status = 'refunded' AND resolved_at IS NOT NULL AND tx_hash IS NOT NULL
         AND owed_micro IS NOT NULL AND overpaid_settled_at IS NULL
         AND (SELECT kept FROM d) > 0 AND owed_micro <> ${owed}
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE id = ?2 AND chain_status IS NULL)`,
    )
    .bind(upstream.request_id, upstream.id, landedMicros, now);
}
