import * as z from "zod";
import { microsToUsd as usd } from "../money";

/** Query of GET /api/admin/payouts: the owed summary, or every ledger row as CSV. */
export const payoutsQuery = z.object({ format: z.enum(["json", "csv"]).default("json") });

/** Body of a payout batch (POST /api/admin/payouts/{partner_id}/settle). */
export const settleBody = z.object({
  tx_hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "a 0x-prefixed 32-byte transaction hash")
    .meta({ description: "Transaction that paid the partner." }),
  through_id: z.int().min(1).optional().meta({
    description:
      "The last payout row the transfer covers (partners[].through_id of GET /api/admin/payouts, read with the amount you paid): rows recorded after it stay owed. Omitted: every row owed now.",
  }),
});

/** What the marketplace owes its partners, from the payout ledger (amounts in micro-dollars). */

export async function owedSummary(db: D1Database) {
  const [byService, byPartner, batches, upstream, refunds, withheld] = await db.batch([
    db.prepare(
      `SELECT partner_id, service_id, count(*) AS calls,
              sum(CASE WHEN paid_upstream = 0 AND batch_id IS NULL THEN partner_share_micro ELSE 0 END) AS owed_micro,
              sum(partner_share_micro) AS earned_micro, sum(marketplace_fee_micro) AS fee_micro,
              sum(paid_upstream) AS paid_upstream_calls
       FROM payout_ledger GROUP BY partner_id, service_id ORDER BY partner_id, service_id`,
    ),
    db.prepare(
      `SELECT partner_id,
              sum(CASE WHEN paid_upstream = 0 AND batch_id IS NULL THEN partner_share_micro ELSE 0 END) AS owed_micro,
              max(CASE WHEN paid_upstream = 0 AND batch_id IS NULL THEN id END) AS through_id,
              sum(partner_share_micro) AS earned_micro, count(*) AS calls
       FROM payout_ledger GROUP BY partner_id ORDER BY partner_id`,
    ),
    db.prepare("SELECT id, partner_id, amount_micro, tx_hash, created_at FROM payout_batches ORDER BY id"),
    // Spent from the operating wallet; "unrecovered" when the caller was not charged for that
    // call, less what a refund withheld from the caller because the partner could collect it.
    db.prepare(
      `SELECT u.partner_id, count(*) AS calls, sum(u.amount_micro) AS amount_micro,
              sum(CASE WHEN l.id IS NULL THEN max(u.amount_micro - coalesce(r.withheld_micro, 0), 0) ELSE 0 END)
                AS unrecovered_micro
       FROM upstream_payments u LEFT JOIN payout_ledger l ON l.request_id = u.request_id
       LEFT JOIN refunds r ON r.request_id = u.request_id
       WHERE u.chain_status IS NOT 'not_landed'
       GROUP BY u.partner_id ORDER BY u.partner_id`,
    ),
    // Refunds (payments/refunds.ts): callers settled before we paid a partner that then failed,
    // and calls whose result was withheld while their payment landed. `hold`: waits for a person.
    // Owed ones first, so none of them falls out of the list.
    db.prepare(
      `SELECT request_id, payer, amount_micro, withheld_micro, reason, status, tx_hash, error, hold, valid_before,
              created_at
       FROM refunds ORDER BY status = 'owed' DESC, id DESC LIMIT 1000`,
    ),
    // What a refund kept back for a partner whose authorization then expired unused: the caller
    // is owed it back. Reconciliation records the return with the decision (refunds.ts: request id
    // `<request_id>:withheld`); listed until it lands. No return recorded: decided before returns
    // existed, for a person to refund.
    db.prepare(
      `SELECT u.request_id, u.partner_id, u.service_id, r.payer, r.withheld_micro,
              t.request_id AS return_request_id, t.status AS return_status, t.hold AS return_hold,
              t.error AS return_error
       FROM upstream_payments u JOIN refunds r ON r.request_id = u.request_id AND r.withheld_micro > 0
       LEFT JOIN refunds t ON t.request_id = u.request_id || ':withheld'
       WHERE u.chain_status = 'not_landed' AND t.status IS NOT 'refunded'
       ORDER BY u.id DESC LIMIT 1000`,
    ),
  ]);
  type Row = Record<string, number | string>;
  const rows = (r: D1Result | undefined) => (r?.results ?? []) as Row[];
  const withUsd = (r: Row) => ({
    ...r,
    owed_usd: usd(Number(r.owed_micro ?? 0)),
    ...(r.earned_micro !== undefined ? { earned_usd: usd(Number(r.earned_micro)) } : {}),
  });
  return {
    services: rows(byService).map(withUsd),
    partners: rows(byPartner).map(withUsd),
    batches: rows(batches).map((b) => ({ ...b, amount_usd: usd(Number(b.amount_micro)) })),
    upstream_payments: rows(upstream).map((u) => ({
      ...u,
      amount_usd: usd(Number(u.amount_micro)),
      unrecovered_usd: usd(Number(u.unrecovered_micro)),
    })),
    refunds: rows(refunds),
    withheld_not_returned: rows(withheld).map((w) => ({ ...w, withheld_usd: usd(Number(w.withheld_micro)) })),
    total_owed_usd: usd(rows(byPartner).reduce((s, r) => s + Number(r.owed_micro ?? 0), 0)),
  };
}

/** Ledger rows per D1 read of the CSV export: the table is never pruned, so it is read in pages. */
const CSV_PAGE_ROWS = 2_000;

/**
 * Every payout-ledger row as CSV, streamed: pages of CSV_PAGE_ROWS by id, so the export's memory
 * stays one page whatever the ledger holds (200,000 rows were 42 MB in one string). The rows are
 * those up to the highest id when the export starts; each page's batch_id is as of its read (a
 * payout marked meanwhile shows on the later pages only: settle with `through_id`, not from this
 * file). The first page is read before the answer starts, so a D1 failure there is a plain 500; a
 * later one ends the stream with an error (logged), never a quietly short file.
 */
export async function ledgerCsv(db: D1Database, requestId: string): Promise<ReadableStream<Uint8Array>> {
  const header =
    "id,partner_id,service_id,partner_share_usd,marketplace_fee_usd,payer,tx_hash,request_id,paid_upstream,batch_id,created_at";
  const cell = (v: string | number | null) => {
    const s = v === null ? "" : String(v);
    return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  const line = (r: Record<string, string | number | null>) =>
    [
      r.id,
      r.partner_id,
      r.service_id,
      usd(Number(r.partner_share_micro)),
      usd(Number(r.marketplace_fee_micro)),
      r.payer,
      r.tx_hash,
      r.request_id,
      r.paid_upstream,
      r.batch_id,
      new Date(Number(r.created_at)).toISOString(),
    ]
      .map((v) => cell(v as string | number | null))
      .join(",");
  const last = Number(
    (await db.prepare("SELECT coalesce(max(id), 0) AS last FROM payout_ledger").first<number>("last")) ?? 0,
  );
  const page = async (after: number) =>
    (
      await db
        .prepare(
          `SELECT id, partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id,
                  paid_upstream, batch_id, created_at FROM payout_ledger WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT ?3`,
        )
        .bind(after, last, CSV_PAGE_ROWS)
        .all<Record<string, string | number | null>>()
    ).results;
  const encoder = new TextEncoder();
  let rows = await page(0);
  let chunk = `${header}\n`;
  return new ReadableStream({
    async pull(controller) {
      if (rows.length) chunk += `${rows.map(line).join("\n")}\n`;
      controller.enqueue(encoder.encode(chunk));
      chunk = "";
      if (rows.length < CSV_PAGE_ROWS) return controller.close();
      try {
        rows = await page(Number(rows[rows.length - 1]?.id));
      } catch (e) {
        console.error(
          JSON.stringify({ level: "error", request_id: requestId, error: `payout CSV export: ${e}` }),
        );
        controller.error(e);
      }
    },
  });
}

/**
 * Records a payout batch: every owed row of the partner (not yet batched, not already paid
 * upstream) is attached to it in the same transaction, so owed amounts go to zero and history
 * stays. Only rows up to `throughId` when given: a call recorded between reading the amount and
 * submitting the transfer stays owed instead of being marked paid by a transfer that never
 * included it.
 */
export async function settlePartner(db: D1Database, partnerId: string, txHash: string, throughId?: number) {
  const now = Date.now();
  const owedWhere = `partner_id = ?1 AND batch_id IS NULL AND paid_upstream = 0 AND id <= ${
    throughId === undefined ? "9223372036854775807" : "?4"
  }`;
  const results = await db.batch([
    db
      .prepare(
        `INSERT INTO payout_batches (partner_id, amount_micro, tx_hash, created_at)
         SELECT ?1, sum(partner_share_micro), ?2, ?3 FROM payout_ledger WHERE ${owedWhere} HAVING count(*) > 0`,
      )
      .bind(partnerId, txHash, now, ...(throughId === undefined ? [] : [throughId])),
    db
      .prepare(`UPDATE payout_ledger SET batch_id = last_insert_rowid() WHERE ${owedWhere} AND changes() = 1`)
      .bind(...(throughId === undefined ? [partnerId] : [partnerId, null, null, throughId])),
    db.prepare(
      "SELECT id, partner_id, amount_micro, tx_hash, created_at FROM payout_batches WHERE id = last_insert_rowid()",
    ),
  ]);
  const inserted = results[0]?.meta.changes ?? 0;
  if (inserted !== 1) return undefined;
  const batch = results[2]?.results[0] as {
    id: number;
    amount_micro: number;
    tx_hash: string;
    created_at: number;
  };
  return { ...batch, amount_usd: usd(batch.amount_micro), rows: results[1]?.meta.changes ?? 0 };
}

/** The EIP-3009 authorization the operating wallet handed to a partner (for reconciliation). */
export interface UpstreamAuthorization {
  payer: string;
  payTo: string;
  nonce: string;
  network: string;
  asset: string;
  validBefore: number;
}

/**
 * What the operating wallet paid a partner for one of our requests. Written when the partner was
 * paid, so it stands even if the caller's own payment never settles; the caller-side payout row
 * (same request_id, paid_upstream = 1) is never owed, so nothing is counted twice.
 */
export async function recordUpstreamPayment(
  db: D1Database,
  p: {
    requestId: string;
    partnerId: string;
    serviceId: string;
    amountMicros: bigint;
    transaction: string | null;
    upstreamStatus: number;
    authorization?: UpstreamAuthorization;
  },
) {
  const a = p.authorization;
  await db
    .prepare(
      // Once per request and authorization: the write is retried after the answer when D1 fails,
      // and an insert that committed but reported an error must not be counted twice.
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
       WHERE NOT EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?1 AND auth_nonce IS ?12)`,
    )
    .bind(
      p.requestId,
      p.partnerId,
      p.serviceId,
      Number(p.amountMicros),
      p.transaction,
      p.upstreamStatus,
      Date.now(),
      a?.payer ?? null,
      a?.payTo ?? null,
      a?.asset ?? null,
      a?.network ?? null,
      a?.nonce ?? null,
      a?.validBefore ?? null,
    )
    .run();
}
