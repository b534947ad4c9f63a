import * as z from "zod";
import { reconciliationReport } from "./reconcile";
import { heldClaims } from "./reconcile-holds";
import { nothingOwed } from "./refunds";
import { MAX_TIMEOUT_SECONDS } from "./x402-terms";

/** Filters of the admin view of the x402 ledger (GET /api/admin/payments). */
export const paymentsQuery = z.object({
  resource: z.string().max(200).optional(),
  request_id: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/**
 * A 'running' authorization older than its own validity window can no longer settle: if it is
 * still running then, the ledger write after its settlement failed, or the Worker was cut off.
 */
const RUNNING_GRACE_MS = MAX_TIMEOUT_SECONDS * 1000;

/**
 * The x402 ledger: settled payments, newest first, with totals over the filter. The WHERE holds
 * only the filters given: `(?2 IS NULL OR request_id = ?2)` kept SQLite off the request_id index,
 * so with 20,000 payments and 20,000 refunds one request id read 80,003 rows; now it reads a few.
 */
export async function ledgerReport(db: D1Database, q: z.output<typeof paymentsQuery>) {
  const args: string[] = [];
  const filters: string[] = [];
  for (const [column, value] of [
    ["resource", q.resource],
    ["request_id", q.request_id],
  ] as const) {
    if (value === undefined) continue;
    args.push(value);
    filters.push(`p.${column} = ?${args.length}`);
  }
  const where = filters.length ? `WHERE ${filters.join(" AND ")}` : "";
  const [rows, totals, refunded] = await db.batch([
    db
      .prepare(
        `SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at, reconciled_at
       FROM payments p ${where} ORDER BY id DESC LIMIT ?${args.length + 1}`,
      )
      .bind(...args, q.limit),
    db
      .prepare(
        `SELECT count(*) AS count, coalesce(sum(amount_atomic), 0) AS amount_atomic FROM payments p ${where}`,
      )
      .bind(...args),
    // Refunds of those payments (payments/refunds.ts), so the totals can be read net: a
    // payment's own refund, the return of a partner share it kept back (`<id>:withheld`) and the
    // rests of hand refunds of either (`<id>:rest`, `<id>:withheld:rest`, a rest's `…:rest:rest`:
    // owed, held for a person, so left out they hid money owed). Every row of a payment is its
    // request id or starts `<id>:` (request ids are our UUIDs, with no ':'), so one range of the
    // unique request_id index per filtered payment: a filtered view reads its own refunds, not
    // every refund and payment twice over.
    db
      .prepare(
        `SELECT count(CASE WHEN NOT ${nothingOwed("r")} THEN 1 END) AS count,
                coalesce(sum(CASE WHEN NOT ${nothingOwed("r")} THEN r.amount_micro ELSE 0 END), 0) AS amount_atomic,
                coalesce(sum(CASE WHEN r.status = 'refunded' AND NOT ${nothingOwed("r")} THEN r.amount_micro ELSE 0 END), 0)
                  AS refunded_atomic,
                coalesce(sum(CASE WHEN ${nothingOwed("r")} THEN r.amount_micro ELSE 0 END), 0) AS nothing_owed_atomic
         FROM payments p JOIN refunds r ON r.request_id = p.request_id
           OR (r.request_id >= p.request_id || ':' AND r.request_id < p.request_id || ';')
         ${where}`,
      )
      .bind(...args),
  ]);
  // Authorizations whose settlement was never confirmed (facilitator gave no answer, or the
  // ledger write failed after settling): check each against the chain before crediting anyone.
  // One reconciliation held for a person is listed under needs_person instead.
  const unconfirmed = await db
    .prepare(
      `SELECT nonce, request_id, resource, status, updated_at FROM payment_nonces
     WHERE (status = 'failed' OR (status = 'running' AND updated_at < ?1)) AND hold IS NULL
     ORDER BY updated_at DESC LIMIT 1000`,
    )
    .bind(Date.now() - RUNNING_GRACE_MS)
    .all();
  return {
    payments: rows?.results ?? [],
    totals: totals?.results[0] ?? { count: 0, amount_atomic: 0 },
    // amount_atomic: refunds recorded (owed or sent); refunded_atomic: those that landed;
    // nothing_owed_atomic: shares kept back in doubt a person found the partner was paid (owed to
    // nobody, refunded to nobody: in neither of the others, kept apart for the record).
    refunds: refunded?.results[0] ?? {
      count: 0,
      amount_atomic: 0,
      refunded_atomic: 0,
      nothing_owed_atomic: 0,
    },
    unconfirmed: unconfirmed.results,
    // Claims and upstream authorizations whose nonce is spent with no log found, for a day of runs:
    // no longer read; each names its POST .../resolve (back to the queue, or landed or not).
    needs_person: await heldClaims(db),
    // What the reconciler decided from the chain (payments/reconcile.ts), newest first.
    reconciliations: await reconciliationReport(db, q.limit),
  };
}

/**
 * A real read of the ledger (its table exists and D1 answers), for /health: one row at most, since
 * /health is public and a count(*) read the whole (never pruned) table on every probe.
 */
export async function ledgerAnswers(db: D1Database) {
  await db.prepare("SELECT 1 FROM payment_nonces LIMIT 1").first();
}
