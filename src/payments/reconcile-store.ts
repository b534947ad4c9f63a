import type { Bindings } from "../env";
import { pricingConfig } from "../partners/config";
import { partnerById } from "../partners/listing";
import { servicePrices } from "../partners/pricing";
import { NO_PAYOUT, type StoredPayout } from "./ledger";
import { type Decision, spentElsewhere } from "./reconcile-decide";
import { rederivedOverpaid, rederivedRests } from "./refund-rest";
import {
  contradictedNothingOwed,
  owedRefund,
  type Refund,
  rederivedNothingOwed,
  refundNonce,
  withheldReturn,
} from "./refunds";

/**
 * The D1 side of reconciliation: which claims to look at, and what each decision writes. Every
 * statement is conditional, so a request or run racing this one changes nothing twice.
 */

export interface NonceRow {
  nonce: string;
  request_id: string;
  resource: string;
  status: string;
  payer: string;
  pay_to: string;
  asset: string;
  network: string;
  amount_atomic: number;
  auth_nonce: string;
  valid_before: number;
  created_at: number;
  /** What the request recorded it owes a partner (migration 0009); NULL when it recorded nothing. */
  payout: string | null;
}

export interface UpstreamRow {
  id: number;
  request_id: string;
  payer: string;
  pay_to: string;
  asset: string;
  network: string;
  amount_micro: number;
  auth_nonce: string;
  valid_before: number;
  created_at: number;
}

/**
 * Rows per batch; a run takes batch after batch while its budget lasts (reconcile-budget.ts), each
 * leaving out the rows the run already looked at (`nowMs` of candidates below).
 */
export const BATCH = 40;

/**
 * Of each batch, rows that can be decided now come first, up to this many: their authorization
 * expired (on our clock, a minute ago, so the chain's latest block has passed it too), so the
 * chain answers landed or not for good. Without it every new row (never looked at, so first by
 * checked_at) came before them, and under steady traffic an expired authorization looked at once
 * while still valid was never decided: its refund never sent, its partner never owed. The rest of
 * the batch goes by the queue's own order, so rows still valid (a partner that settles at once is
 * decided landed on its first look) are looked at even behind a backlog of expired ones.
 */
const DUE_FIRST = 30;

/** Seconds past valid_before after which a row counts as due: the chain's clock lags ours. */
const DUE_AFTER_SECONDS = 60;

const dueBefore = (nowMs: number) => Math.floor(nowMs / 1000) - DUE_AFTER_SECONDS;

/**
 * A claim judged "used, no log" this many runs (noteNoLog) is read again only every
 * NO_LOG_EVERY_MS until it is held: a short queue is read every 5 minutes, and reading it on every
 * run until the day's hold cost ~288 runs, up to ~576 eth_getLogs per claim.
 */
export const NO_LOG_SPACED_AFTER = 2;
export const NO_LOG_EVERY_MS = 2 * 3_600_000;

/** A row judged "used, no log" often enough to be spaced out (above), and looked at since `?5`. */
const SPACED = "no_log_runs >= ?6 AND coalesce(checked_at, 0) >= ?5";

/**
 * How long a 'running' claim is left to its request: longer than any request can still act on it
 * (handler timeouts, two 45 s settle calls when the facilitator answers settlement_pending, a
 * partner's 10 s, 30 s of waitUntil). Its authorization's expiry alone is not enough: a buyer may
 * sign one valid for a few seconds, and its request still settles (and pays a partner) after it;
 * a run deciding the claim meanwhile recorded the payment without the refund the request's
 * unconfirmed answer then promised, or a partner share as not yet paid that the request paid.
 */
export const RUNNING_LEFT_TO_REQUEST_MS = 5 * 60_000;

/**
 * 'failed' rows at once (never one held for a person, nor one spaced out: noteNoLog); 'running'
 * ones only a minute after their authorization expired (always due, then) and once their request
 * cannot still be settling them (RUNNING_LEFT_TO_REQUEST_MS). Due rows first (up to DUE_FIRST,
 * least recently looked at first), then the rest by checked_at. Never a row looked at since
 * `nowMs`, the run's start (sendToBack stamps each): a run's next batch holds only rows it has
 * not read yet.
 */
export function candidates(db: D1Database, network: string, nowMs: number) {
  return db
    .prepare(
      `SELECT nonce, request_id, resource, status, payer, pay_to, asset, network, amount_atomic, auth_nonce,
              valid_before, created_at, payout
       FROM (SELECT *, valid_before < ?2 AS due,
                    row_number() OVER (PARTITION BY valid_before < ?2
                                       ORDER BY coalesce(checked_at, 0), updated_at) AS turn
             FROM payment_nonces
             WHERE auth_nonce IS NOT NULL AND valid_before IS NOT NULL AND network = ?1 AND hold IS NULL
               AND NOT (${SPACED}) AND coalesce(checked_at, 0) < ?8
               AND (status = 'failed' OR (status = 'running' AND valid_before < ?2 AND created_at < ?7)))
       ORDER BY NOT (due AND turn <= ?4), coalesce(checked_at, 0), updated_at LIMIT ?3`,
    )
    .bind(
      network,
      dueBefore(nowMs),
      BATCH,
      DUE_FIRST,
      nowMs - NO_LOG_EVERY_MS,
      NO_LOG_SPACED_AFTER,
      nowMs - RUNNING_LEFT_TO_REQUEST_MS,
      nowMs,
    )
    .all<NonceRow>();
}

/**
 * A row the run looked at and left open (undecided, or its chain read failed) goes to the back of
 * its queue (checked_at): without this, a batch's worth of rows an RPC cannot answer came first
 * again on every run and nothing behind them was ever checked. updated_at is left to what it
 * means to the admin views.
 */
export async function sendToBack(db: D1Database, kind: "payment" | "upstream", key: string | number) {
  const table = kind === "payment" ? "payment_nonces" : "upstream_payments";
  const column = kind === "payment" ? "nonce" : "id";
  await db.prepare(`UPDATE ${table} SET checked_at = ?2 WHERE ${column} = ?1`).bind(key, Date.now()).run();
}

/**
 * Undecided upstream authorizations (not held, not spaced out, not looked at since the run's
 * start `nowMs`), in the same order as candidates: due first, then the rest.
 */
export function upstreamCandidates(db: D1Database, network: string, nowMs: number) {
  return db
    .prepare(
      `SELECT id, request_id, payer, pay_to, asset, network, amount_micro, auth_nonce, valid_before, created_at
       FROM (SELECT *, valid_before < ?2 AS due,
                    row_number() OVER (PARTITION BY valid_before < ?2 ORDER BY coalesce(checked_at, 0), id) AS turn
             FROM upstream_payments
             WHERE chain_status IS NULL AND auth_nonce IS NOT NULL AND valid_before IS NOT NULL AND network = ?1
               AND hold IS NULL AND NOT (${SPACED}) AND coalesce(checked_at, 0) < ?7)
       ORDER BY NOT (due AND turn <= ?4), coalesce(checked_at, 0), id LIMIT ?3`,
    )
    .bind(network, dueBefore(nowMs), BATCH, DUE_FIRST, nowMs - NO_LOG_EVERY_MS, NO_LOG_SPACED_AFTER, nowMs)
    .all<UpstreamRow>();
}

const logRow = (
  db: D1Database,
  kind: "payment" | "upstream",
  ref: string,
  requestId: string,
  outcome: string,
  d: Exclude<Decision, { outcome: "wait" }>,
  now: number,
) =>
  db
    .prepare(
      `INSERT INTO reconciliations (kind, ref, request_id, outcome, evidence, tx_hash, block_number, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (kind, ref) DO NOTHING`,
    )
    .bind(kind, ref, requestId, outcome, d.evidence, d.txHash ?? null, d.blockNumber ?? null, now);

/**
 * The partner's share a reconciled call owes: what its request recorded with the claim when its
 * settlement went unconfirmed or its ledger write failed (the share, or 'none': a partner that
 * never served is owed nothing);
 * for a claim that recorded nothing (a request cut off while 'running', or a claim from before
 * migration 0009), the share of the partner service its resource names, at today's prices.
 */
function owedShare(env: Bindings, row: NonceRow): StoredPayout | undefined {
  if (row.payout === NO_PAYOUT) return undefined;
  if (row.payout !== null) return storedShare(row);
  const m = /^partner:([^/]+)\/(.+)$/.exec(row.resource);
  const partner = m && partnerById(m[1] ?? "");
  const service = partner?.services.find((s) => s.id === m?.[2]);
  const pricing = pricingConfig(env);
  if (!partner || !service || "error" in pricing) return undefined;
  const prices = servicePrices(service, pricing.multiplierMilli);
  return {
    partnerId: partner.id,
    serviceId: service.id,
    shareMicros: prices.partnerMicros.toString(),
    feeMicros: prices.feeMicros.toString(),
  };
}

/**
 * A share kept with a claim. One that cannot be read (only this Worker writes them) is logged and
 * owed to no one: the payment itself is still recorded, which matters more than failing the claim
 * on every run.
 */
function storedShare(row: NonceRow): StoredPayout | undefined {
  try {
    const v = JSON.parse(row.payout ?? "") as Partial<StoredPayout>;
    const micros = (x: unknown) => typeof x === "string" && /^\d{1,15}$/.test(x);
    if (
      typeof v.partnerId === "string" &&
      typeof v.serviceId === "string" &&
      micros(v.shareMicros) &&
      micros(v.feeMicros)
    )
      return v as StoredPayout;
  } catch {
    // logged below
  }
  console.error(
    JSON.stringify({
      level: "error",
      msg: "reconcile: unreadable payout kept with a claim",
      request_id: row.request_id,
      payout: row.payout,
    }),
  );
  return undefined;
}

/** A reconciled partner call's payout row, as the request would have written it had it confirmed. */
function payoutFor(
  db: D1Database,
  row: NonceRow,
  share: StoredPayout | undefined,
  txHash: string,
  now: number,
) {
  if (!share) return [];
  return [
    db
      .prepare(
        `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash,
           request_id, paid_upstream, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
                EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?7 AND chain_status IS NOT 'not_landed'), ?8
         WHERE EXISTS (SELECT 1 FROM payment_nonces WHERE nonce = ?9 AND status = 'settled')
         ON CONFLICT (request_id) DO NOTHING`,
      )
      .bind(
        share.partnerId,
        share.serviceId,
        Number(share.shareMicros),
        Number(share.feeMicros),
        row.payer,
        txHash,
        row.request_id,
        now,
        row.nonce,
      ),
  ];
}

/**
 * A withheld call whose payment landed: its caller got 502 settlement_unconfirmed and no result,
 * and was told to pay again. They get back the price minus what a partner that served is owed.
 * Only 'failed' claims: a claim left 'running' may belong to a call that was served. A claim from
 * before migration 0009 recorded no share; for a call whose partner cannot be told from its
 * resource (a refinery recipe, an MCP call) the refund is held for the maintainer, since a
 * partner that served may be owed part of it.
 */
function withheldCallRefund(row: NonceRow, share: StoredPayout | undefined): Refund {
  const unknownShare =
    row.payout === null && (row.resource === "refinery_recipes" || row.resource.startsWith("mcp:"));
  return {
    requestId: row.request_id,
    payer: row.payer,
    network: row.network,
    asset: row.asset,
    paidMicros: BigInt(row.amount_atomic),
    withheldMicros: BigInt(share?.shareMicros ?? 0),
    reason:
      "settlement_unconfirmed: the payment landed on chain after the paid result was withheld; refunded by reconciliation",
    ...(unknownShare
      ? {
          hold: "the claim recorded no partner share (before migration 0009): check whether a partner served this call, then refund the price less its share",
        }
      : {}),
  };
}

/**
 * What a payment decision's batch recorded: `send`, the refund it recorded as owed, for the caller
 * to send; `held`, the refund it recorded held for a person instead (withheldCallRefund), for the
 * caller to count and warn of. Only the batch whose write took the row answers either, so
 * overlapping runs (the Cron and POST /api/admin/reconcile) send, count and warn of it once.
 */
export interface PaymentApplied {
  send?: Refund;
  held?: Refund;
}

/**
 * Writes one payment decision; every statement is conditional, so a racing request or run is
 * harmless. Answers the refund this run recorded (PaymentApplied): only the run whose batch wrote
 * it sends it, so a refund is never paid twice.
 */
export async function applyPayment(env: Bindings, row: NonceRow, d: Decision): Promise<PaymentApplied> {
  const db = env.DB;
  const now = Date.now();
  if (d.outcome === "wait") {
    // To the back of the queue (runs take the least recently touched first), so claims that keep
    // waiting never starve the rest of a run's batch.
    await db
      .prepare("UPDATE payment_nonces SET updated_at = ?2 WHERE nonce = ?1 AND status = 'failed'")
      .bind(row.nonce, now)
      .run();
    return {};
  }
  if (d.outcome === "paid") {
    const share = owedShare(env, row);
    const refund = row.status === "failed" ? withheldCallRefund(row, share) : undefined;
    const written = await db.batch([
      // Before the claim becomes 'settled': it is written only while the claim is still 'failed'.
      ...(refund
        ? [owedRefund(db, refund, await refundNonce(row.request_id), now, { claimFailed: row.nonce })]
        : []),
      db
        .prepare(
          `INSERT INTO payments (request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce,
             created_at, reconciled_at)
           SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, ?2, nonce, ?3, ?3
           FROM payment_nonces WHERE nonce = ?1 AND status IN ('failed', 'running')
           ON CONFLICT DO NOTHING`,
        )
        .bind(row.nonce, d.txHash, now),
      db
        .prepare(
          "UPDATE payment_nonces SET status = 'settled', updated_at = ?2 WHERE nonce = ?1 AND status IN ('failed', 'running')",
        )
        .bind(row.nonce, now),
      ...payoutFor(db, row, share, d.txHash, now),
      logRow(db, "payment", row.nonce, row.request_id, "settled", d, now),
    ]);
    if (!refund || !written[0]?.meta.changes) return {};
    return refund.hold ? { held: refund } : { send: refund };
  }
  await db.batch([
    db
      .prepare(
        "UPDATE payment_nonces SET status = 'released', updated_at = ?2 WHERE nonce = ?1 AND status IN ('failed', 'running')",
      )
      .bind(row.nonce, now),
    logRow(db, "payment", row.nonce, row.request_id, "released", d, now),
  ]);
  return {};
}

/**
 * A served call whose upstream authorization expired unused (or was cancelled): the operating
 * wallet never paid the partner, so the call's payout row is owed after all, as payoutFor writes
 * it for such a call from the start (paid upstream only while some authorization for the request
 * may still land). Only while this row is still undecided, so only the batch deciding it flips
 * it; never a row already in a payout batch.
 */
const owedAfterAll = (db: D1Database, row: UpstreamRow) =>
  db
    .prepare(
      `UPDATE payout_ledger SET paid_upstream = 0
       WHERE request_id = ?1 AND paid_upstream = 1 AND batch_id IS NULL
         AND EXISTS (SELECT 1 FROM upstream_payments WHERE id = ?2 AND chain_status IS NULL)
         AND NOT EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?1 AND id <> ?2
                           AND chain_status IS NOT 'not_landed')`,
    )
    .bind(row.request_id, row.id);

/**
 * Writes one upstream decision. An authorization that never landed can no longer be collected by
 * its partner: a served call owes the partner its share through the payout ledger, and a failed
 * call's caller gets back the share its refund kept back. Both are written only by the batch that
 * decides the row (conditional on it being undecided), so overlapping runs change nothing twice;
 * answers the refund this run recorded as owed, for the caller to send. Any decision that leaves what
 * landed for the request short of a share a person recorded as nothing owed gives that share back
 * to a person, held, in the same batch (contradictedNothingOwed).
 */
export async function applyUpstream(
  db: D1Database,
  row: UpstreamRow,
  d: Decision,
): Promise<Refund | undefined> {
  // Still undecided (its authorization may yet land): behind the rest until the next run.
  if (d.outcome === "wait") {
    await sendToBack(db, "upstream", row.id);
    return undefined;
  }
  const now = Date.now();
  const status = d.outcome === "paid" ? "landed" : "not_landed";
  // Given back only for an authorization that can no longer move anything: expired unused, or
  // cancelled. One whose nonce the chain shows spent (a transfer that does not match what we
  // signed) moved money somewhere: marked, logged for a person, and nothing is refunded or owed
  // again on its account.
  const movedNothing = status === "not_landed" && !spentElsewhere(d);
  const returned = movedNothing
    ? await withheldReturn(db, row.request_id, {
        amountMicros: BigInt(row.amount_micro),
        asset: row.asset,
        network: row.network,
        cancelled: d.outcome === "unpaid" && d.cancelled === true,
      })
    : undefined;
  const written = await db.batch([
    // Before the row is decided: both write only while it is still undecided.
    ...(returned
      ? [owedRefund(db, returned, await refundNonce(returned.requestId), now, { upstreamUndecided: row.id })]
      : []),
    ...(movedNothing ? [owedAfterAll(db, row)] : []),
    // A share a person recorded as nothing owed (the partner was paid it all) that this decision
    // leaves short of what landed: back to a person, owed and held (after the return's rewrite);
    // one given back so before: its amount made true to this decision too (rederivedNothingOwed),
    // and so the open rests of hand refunds of the share (rederivedRests), and the overpaid flags
    // of those paid (rederivedOverpaid).
    ...(d.outcome === "paid" || movedNothing
      ? [contradictedNothingOwed, rederivedNothingOwed, rederivedRests, rederivedOverpaid].map((statement) =>
          statement(
            db,
            row,
            d.outcome === "paid" ? row.amount_micro : 0,
            d.outcome === "paid"
              ? `upstream_payments ${row.id} landed for ${row.amount_micro} micro-USDC`
              : `upstream_payments ${row.id} ${d.outcome === "unpaid" && d.cancelled ? "was cancelled" : "expired unused"}: it moved nothing`,
            now,
          ),
        )
      : []),
    db
      .prepare(
        "UPDATE upstream_payments SET chain_status = ?2, tx_hash = coalesce(tx_hash, ?3) WHERE id = ?1 AND chain_status IS NULL",
      )
      .bind(row.id, status, d.outcome === "paid" ? d.txHash : null),
    logRow(db, "upstream", String(row.id), row.request_id, status, d, now),
  ]);
  return returned && written[0]?.meta.changes ? returned : undefined;
}
