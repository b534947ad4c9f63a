import * as z from "zod";
import { TX_HASH, TX_HASH_RULE, microsToUsd as usd, usdToMicros } from "../money";
import { nothingOwed } from "./nothing-owed";

/** Query of GET /api/admin/payouts: the owed summary, or every ledger row as CSV. */
export const payoutsQuery = z.object({ format: z.enum(["json", "csv"]).default("json") });

/** Largest payout accepted, in dollars: its micro-dollars stay an exact integer (below 2^53). */
const MAX_PAYOUT_USD = 9_000_000_000;

/**
 * An amount paid, in dollars as GET /api/admin/payouts shows owed_usd: USDC has 6 decimals, so a
 * seventh cannot have been transferred (a 7th decimal is refused, never rounded to a cent that
 * would then match or miss the ledger by accident). Exact: a JSON number of at most 6 decimals
 * round-trips through micro-dollars.
 */
export const payoutAmount = z
  .number()
  // Aborting: the exactness check cannot read a number past the bounds (1e21 has no fixed form).
  .gt(0, { abort: true })
  .max(MAX_PAYOUT_USD, { abort: true })
  .refine((v) => usd(usdToMicros(v)) === v, {
    message: "Decimal input should have no more than 6 decimal places",
    params: { type: "decimal_max_places", ctx: { decimal_places: 6 } },
  });

/** Body of a payout batch (POST /api/admin/payouts/{partner_id}/settle). */
export const settleBody = z
  .object({
    tx_hash: z.string().regex(TX_HASH, TX_HASH_RULE).meta({
      description:
        "Transaction that paid the partner (compared case-insensitively). One transaction pays one batch: the same body again answers the batch it recorded.",
    }),
    through_id: z.int().min(1).optional().meta({
      description:
        "The last payout row the transfer covers (partners[].through_id of GET /api/admin/payouts, read with the amount you paid): rows recorded after it stay owed. Requires amount_usd. Omitted: every row owed now.",
    }),
    amount_usd: payoutAmount.optional().meta({
      description:
        "What the transfer paid, in dollars (partners[].owed_usd read with through_id). The batch is recorded only if the rows it would cover sum to exactly this (409 otherwise, nothing recorded): a row that became owed after you read the amount stays owed. Required with through_id.",
    }),
  })
  // A through_id without the amount read with it is the hole this field closes: a row below
  // through_id that became owed since (an upstream authorization that expired unused or was cancelled) would be
  // marked paid by a transfer that never included it.
  .superRefine((b, ctx) => {
    if (b.through_id !== undefined && b.amount_usd === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["amount_usd"],
        message: "Field required",
        params: { type: "missing" },
      });
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
    // tx_reused: a batch from before migration 0013 whose transaction an earlier batch holds too
    // (since then one transfer pays one batch), for the maintainer to check.
    db.prepare(
      `SELECT b.id, b.partner_id, b.amount_micro, b.tx_hash, b.created_at,
              b.tx_unique = 0 AND EXISTS (SELECT 1 FROM payout_batches e
                WHERE e.tx_unique = 0 AND e.id < b.id AND lower(e.tx_hash) = lower(b.tx_hash)) AS tx_reused
       FROM payout_batches b ORDER BY b.id`,
    ),
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
    // `nothing_owed` (1 or 0, as tx_reused): refunded to nobody, a kept share a person found the
    // partner was paid (its status says refunded, and no transfer did). Owed ones first, so none of
    // them falls out of the list.
    // `owed_micro`: a hand refund's, what it owes (a share's follows each later decision; its
    // amount_micro is what was paid);
    // `overpaid_micro` when that was more, listed first with the owed ones, for a person to settle,
    // until they do (overpaid_settled_at and _note, migration 0024: paid back or written off).
    db.prepare(
      `SELECT request_id, payer, amount_micro, owed_micro, withheld_micro, reason, status, tx_hash, error, hold,
              valid_before, created_at, resolved_at, resolved_note, ${nothingOwed()} AS nothing_owed,
              CASE WHEN amount_micro > owed_micro AND overpaid_settled_at IS NULL THEN amount_micro - owed_micro END
                AS overpaid_micro,
              overpaid_settled_at, overpaid_settled_note
       FROM refunds
       ORDER BY status = 'owed' OR (amount_micro > coalesce(owed_micro, amount_micro) AND overpaid_settled_at IS NULL) DESC,
         id DESC
       LIMIT 1000`,
    ),
    // What a refund kept back for a partner whose authorization then expired unused: the caller
    // is owed it back. Reconciliation records the return with the decision (refunds.ts: request id
    // `<request_id>:withheld`); listed until it lands. No return recorded: decided before returns
    // existed, for a person to refund. A return a person recorded as nothing owed (the partner was
    // paid it) leaves the list like any refunded one: a decision that contradicts that record makes
    // it owed again, held, in the batch that decides (payments/refunds.ts contradictedNothingOwed).
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

/** A payout batch as the settle answers it: `rows` is how many ledger rows it covers. */
export interface PayoutBatch {
  id: number;
  partner_id: string;
  amount_micro: number;
  amount_usd: number;
  tx_hash: string;
  created_at: number;
  rows: number;
}

/** What a settle did: recorded a batch, found its transaction already recorded, or nothing. */
export type Settlement =
  | { status: "recorded"; batch: PayoutBatch }
  /** The transaction is this partner's batch already, for the amount given (a retry): unchanged. */
  | { status: "replayed"; batch: PayoutBatch }
  /** The transaction is already another partner's batch, or one for another amount. */
  | { status: "tx_used"; batch: PayoutBatch }
  | { status: "nothing_owed" }
  /** The rows the batch would cover sum to `owed_micro`, not the amount the transfer paid. */
  | { status: "amount_mismatch"; owed_micro: number; rows: number };

const BATCH_ROW = `SELECT b.id, b.partner_id, b.amount_micro, b.tx_hash, b.created_at,
         (SELECT count(*) FROM payout_ledger WHERE batch_id = b.id) AS rows
       FROM payout_batches b`;
type BatchRow = Omit<PayoutBatch, "amount_usd">;
const withUsd = (b: BatchRow): PayoutBatch => ({ ...b, amount_usd: usd(b.amount_micro) });

/**
 * Records a payout batch: the owed rows of the partner (not yet batched, not already paid
 * upstream) up to `throughId` are attached to it, so owed amounts go to zero and history stays; a
 * call recorded after the amount was read stays owed. With `amountMicro` (what the transfer paid)
 * the batch is recorded only if those rows sum to exactly that: a row below `throughId` that
 * became owed since (reconciliation found its upstream authorization expired unused or was cancelled) is not
 * marked paid by a transfer that never included it. The transaction is stored in lower case and
 * pays one batch (checked against every batch here; migration 0013's unique index holds it for
 * batches written since): the same partner, transaction and amount again answer the batch
 * recorded (a retry after a lost answer), anything else with it is refused.
 *
 * One D1 batch, which D1 runs as one transaction with no other write in between: the sum the
 * INSERT checks is the sum of the rows the UPDATE attaches. The rows attached are counted back and
 * compared, so a broken assumption is a loud error, never a batch that silently covers other rows.
 */
export async function settlePartner(
  db: D1Database,
  partnerId: string,
  txHash: string,
  cover: { throughId?: number; amountMicro?: number } = {},
): Promise<Settlement> {
  const tx = txHash.toLowerCase();
  // ?1 partner, ?2 last row covered: ids stay far below 2^53.
  const owed = "partner_id = ?1 AND batch_id IS NULL AND paid_upstream = 0 AND id <= ?2";
  const through = cover.throughId ?? Number.MAX_SAFE_INTEGER;
  const amount = cover.amountMicro ?? null;
  const [existing, owedNow, inserted, attached, recorded] = await db.batch([
    // The first batch that holds the hash, in any letter case (batches from before 0013 included).
    db.prepare(`${BATCH_ROW} WHERE lower(b.tx_hash) = ?1 ORDER BY b.id LIMIT 1`).bind(tx),
    db
      .prepare(
        `SELECT count(*) AS rows, coalesce(sum(partner_share_micro), 0) AS owed_micro FROM payout_ledger WHERE ${owed}`,
      )
      .bind(partnerId, through),
    db
      .prepare(
        `INSERT INTO payout_batches (partner_id, amount_micro, tx_hash, created_at, tx_unique)
         SELECT ?1, sum(partner_share_micro), ?3, ?5, 1 FROM payout_ledger
         WHERE ${owed} AND NOT EXISTS (SELECT 1 FROM payout_batches WHERE lower(tx_hash) = ?3)
         HAVING count(*) > 0 AND (?4 IS NULL OR sum(partner_share_micro) = ?4)`,
      )
      .bind(partnerId, through, tx, amount, Date.now()),
    db
      .prepare(`UPDATE payout_ledger SET batch_id = last_insert_rowid() WHERE ${owed} AND changes() = 1`)
      .bind(partnerId, through),
    db.prepare(`${BATCH_ROW} WHERE b.id = last_insert_rowid()`),
  ]);
  const first = <T>(r: D1Result | undefined) => r?.results[0] as T | undefined;
  const counted = first<{ rows: number; owed_micro: number }>(owedNow) ?? { rows: 0, owed_micro: 0 };
  if (inserted?.meta.changes === 1) {
    const batch = first<BatchRow>(recorded);
    if (!batch || attached?.meta.changes !== counted.rows || batch.rows !== counted.rows)
      throw new Error(
        `payout batch for ${partnerId}: ${counted.rows} owed rows counted, ${attached?.meta.changes} attached, ${batch?.rows} in the batch`,
      );
    return { status: "recorded", batch: withUsd(batch) };
  }
  const before = first<BatchRow>(existing);
  if (before) {
    const same =
      before.partner_id === partnerId &&
      (cover.amountMicro === undefined || cover.amountMicro === before.amount_micro);
    return { status: same ? "replayed" : "tx_used", batch: withUsd(before) };
  }
  if (counted.rows === 0) return { status: "nothing_owed" };
  return { status: "amount_mismatch", owed_micro: counted.owed_micro, rows: counted.rows };
}

/**
 * Why a settle recorded no new batch, for the 409 of the API and of the dashboard (which refuses a
 * replay too: its button pressed again is told the transfer is recorded already, not shown
 * "Payout recorded." twice).
 */
export function settleRefusal(
  partnerId: string,
  s: Exclude<Settlement, { status: "recorded" }>,
  cover: { throughId?: number; amountMicro?: number } = {},
): { detail: string; extra: Record<string, unknown> } {
  const rows = cover.throughId === undefined ? "" : ` up to through_id ${cover.throughId}`;
  switch (s.status) {
    case "replayed":
      return {
        detail: `Transaction ${s.batch.tx_hash} is already recorded as payout batch ${s.batch.id} for ${partnerId} ($${s.batch.amount_usd}): nothing more was marked paid`,
        extra: { batch: s.batch },
      };
    case "tx_used":
      return {
        detail: `Transaction ${s.batch.tx_hash} is already recorded as payout batch ${s.batch.id} (${s.batch.partner_id}, $${s.batch.amount_usd}): one transfer pays one batch`,
        extra: { batch: s.batch },
      };
    case "nothing_owed":
      return { detail: `Nothing is owed to ${partnerId}${rows}`, extra: { owed_usd: 0 } };
    case "amount_mismatch":
      return {
        detail: `The rows owed to ${partnerId}${rows} sum to $${usd(s.owed_micro)} now, not the $${usd(
          cover.amountMicro ?? 0,
        )} transferred: the amount is not the one read with through_id, or a row became owed after it was read (an upstream authorization that expired unused or was cancelled). Nothing was recorded; read GET /api/admin/payouts again.`,
        extra: { owed_usd: usd(s.owed_micro), owed_rows: s.rows, amount_usd: usd(cover.amountMicro ?? 0) },
      };
  }
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
