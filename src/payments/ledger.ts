import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { PayoutShare } from "../env";

/** What an EIP-3009 authorization promises: kept with its claim for reconciliation against the chain. */
export interface AuthorizationTerms {
  /** `<network>:<asset>:<payer>:<nonce>`, lowercased: the claim's primary key. */
  key: string;
  payer: string;
  payTo: string;
  asset: string;
  network: string;
  amountAtomic: bigint;
  nonce: string;
  validBefore: number;
  x402Version: number;
}

/** What the route asked for, as the gate matched it and the facilitator verified the payment against. */
export type MatchedRequirements = Pick<PaymentRequirements, "network" | "asset" | "payTo" | "amount">;

/**
 * The identity of a payment authorization: for EIP-3009 (USDC's transferWithAuthorization) the
 * signer's nonce, which the token contract also accepts only once. Scoped by network, asset and
 * payer so equal nonces of different signers never collide. `network`/`asset` are those of the
 * route's requirements the payment was matched to, never the payload's own `accepted` (the payer
 * writes that: another asset there would give the same authorization a second key), so a v1
 * payload ("base") and a v2 one ("eip155:8453") for the same signature share one key.
 */
export function authorizationKey(
  payment: PaymentPayload,
  requirements: Omit<MatchedRequirements, "amount">,
): AuthorizationTerms | undefined {
  // Exactly the EIP-3009 shape, nothing beside it: the facilitator chooses what it settles from
  // the payload's shape (a `permit2Authorization` makes it a Permit2 payment), so an extra part
  // would be what moves the money while this key, the replay guard and reconciliation followed a
  // decoy authorization with a fresh nonce on every call.
  const parts = Object.keys(payment.payload ?? {});
  if (parts.length !== 2 || !parts.includes("authorization") || !parts.includes("signature"))
    return undefined;
  const auth = (
    payment.payload as {
      authorization?: {
        from?: unknown;
        to?: unknown;
        nonce?: unknown;
        value?: unknown;
        validBefore?: unknown;
      };
    }
  ).authorization;
  if (typeof auth?.from !== "string" || typeof auth.nonce !== "string") return undefined;
  const { network, asset } = requirements;
  let amountAtomic = 0n;
  try {
    amountAtomic = BigInt(String(auth.value ?? "0"));
  } catch {}
  return {
    key: `${network}:${asset}:${auth.from}:${auth.nonce}`.toLowerCase(),
    payer: auth.from,
    payTo: typeof auth.to === "string" ? auth.to : requirements.payTo,
    asset,
    network,
    amountAtomic,
    nonce: auth.nonce,
    validBefore: Number(auth.validBefore ?? 0) || 0,
    x402Version: payment.x402Version,
  };
}

/** Claims an authorization for one request. False when another request holds or used it. */
export async function claimAuthorization(
  db: D1Database,
  terms: AuthorizationTerms,
  requestId: string,
  resource: string,
) {
  const now = Date.now();
  const result = await db
    .prepare(
      `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at,
         payer, pay_to, asset, network, amount_atomic, auth_nonce, valid_before, x402_version)
       VALUES (?1, ?2, ?3, 'running', ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (nonce) DO NOTHING`,
    )
    .bind(
      terms.key,
      requestId,
      resource,
      now,
      terms.payer,
      terms.payTo,
      terms.asset,
      terms.network,
      Number(terms.amountAtomic),
      terms.nonce,
      terms.validBefore,
      terms.x402Version,
    )
    .run();
  return result.meta.changes === 1;
}

/**
 * Whether the claim of `key` is this request's, still unsettled: a claim whose INSERT D1 answered
 * with an error may have committed all the same (a connection lost after the commit).
 */
export async function claimIsOurs(db: D1Database, key: string, requestId: string) {
  const row = await db
    .prepare("SELECT request_id, status FROM payment_nonces WHERE nonce = ?1")
    .bind(key)
    .first<{ request_id: string; status: string }>();
  return row?.request_id === requestId && row.status === "running";
}

/** Frees an authorization whose call failed before settlement, so the buyer may retry with it. */
export async function releaseAuthorization(db: D1Database, key: string, requestId: string) {
  await db
    .prepare("DELETE FROM payment_nonces WHERE nonce = ?1 AND request_id = ?2 AND status = 'running'")
    .bind(key, requestId)
    .run();
}

/** `payment_nonces.payout` of a call that owes no partner anything (migration 0009). */
export const NO_PAYOUT = "none";

/**
 * A payout share as kept with its claim (migration 0009) for reconciliation to write later.
 * `paidUpstream` is not kept: reconciliation reads it from upstream_payments, as the chain left it.
 */
export interface StoredPayout {
  partnerId: string;
  serviceId: string;
  shareMicros: string;
  feeMicros: string;
}

const storedPayout = (p: PayoutShare) =>
  JSON.stringify({
    partnerId: p.partnerId,
    serviceId: p.serviceId,
    shareMicros: p.shareMicros.toString(),
    feeMicros: p.feeMicros.toString(),
  } satisfies StoredPayout);

/**
 * Keeps with a claim still 'running' what its call owes a partner if the payment lands (`payout`:
 * the share, or 'none'), and moves it to `status`.
 */
async function keepWithRunningClaim(
  db: D1Database,
  key: string,
  requestId: string,
  payout: PayoutShare | undefined,
  status: "running" | "failed",
) {
  await db
    .prepare(
      "UPDATE payment_nonces SET payout = ?3, status = ?4, updated_at = ?5 WHERE nonce = ?1 AND request_id = ?2 AND status = 'running'",
    )
    .bind(key, requestId, payout ? storedPayout(payout) : NO_PAYOUT, status, Date.now())
    .run();
}

/**
 * The facilitator's settle call ended without an answer (timeout, garbled reply): the transfer may
 * or may not be on chain. The authorization stays reserved ('failed') and is listed for
 * reconciliation in GET /api/admin/payments; it never runs another call. What the call owes a
 * partner if the payment lands is kept with it.
 */
export const markAuthorizationUnconfirmed = (
  db: D1Database,
  key: string,
  requestId: string,
  payout?: PayoutShare,
) => keepWithRunningClaim(db, key, requestId, payout, "failed");

/**
 * A settled call whose ledger write failed stays 'running' until a retry or reconciliation writes
 * it; reconciliation knows what a partner is owed only from what is kept with the claim.
 */
export const keepPayoutWithClaim = (db: D1Database, key: string, requestId: string, payout?: PayoutShare) =>
  keepWithRunningClaim(db, key, requestId, payout, "running");

export interface SettledPayment {
  key: string;
  requestId: string;
  resource: string;
  payment: PaymentPayload;
  /** The route's requirements the payment was verified against (x402Payment.requirements). */
  requirements: MatchedRequirements;
  settlement: SettleResponse;
  payout?: PayoutShare;
}

/**
 * One ledger row per settled payment, written with the nonce's final state (and, for a partner
 * call, the partner's payout row) in one batch. Asset, payee, network and amount are the route's
 * requirements, not what the payload says it accepted; the payer is the authorization's signer.
 * The facilitator's answer gives only the transaction: a payer, amount or network it reports
 * otherwise is not ours to record (settlement.ts logs the disagreement).
 */
export async function recordSettledPayment(db: D1Database, p: SettledPayment) {
  const now = Date.now();
  const { amount, asset, payTo, network } = p.requirements;
  const payer = authorizationKey(p.payment, p.requirements)?.payer ?? "";
  await db.batch([
    db
      .prepare("UPDATE payment_nonces SET status = 'settled', updated_at = ?2 WHERE nonce = ?1")
      .bind(p.key, now),
    db
      .prepare(
        `INSERT INTO payments (request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`,
      )
      .bind(
        p.requestId,
        p.resource,
        Number(amount),
        asset,
        payer,
        payTo,
        network,
        p.settlement.transaction,
        p.key,
        now,
      ),
    ...(p.payout ? [payoutRow(db, p.payout, payer, p.settlement.transaction, p.requestId, now)] : []),
  ]);
}

/**
 * recordSettledPayment again, after an attempt D1 answered with an error: that attempt may have
 * committed (the connection lost after the commit), and its batch is one transaction, so a ledger
 * row of this payment (its nonce, request and transaction) means the whole write stands. Only that
 * row counts as done: a UNIQUE conflict with any other row is still the error it was.
 */
export async function rewriteSettledPayment(db: D1Database, p: SettledPayment) {
  try {
    await recordSettledPayment(db, p);
  } catch (e) {
    if (!/UNIQUE constraint failed: payments\./.test(String(e))) throw e;
    const { results } = await db
      .prepare("SELECT request_id, nonce, tx_hash FROM payments WHERE nonce = ?1 OR request_id = ?2")
      .bind(p.key, p.requestId)
      .all<{ request_id: string; nonce: string; tx_hash: string }>();
    const ours = (r: (typeof results)[number]) =>
      r.request_id === p.requestId &&
      r.nonce === p.key &&
      r.tx_hash.toLowerCase() === p.settlement.transaction.toLowerCase();
    if (results.length !== 1 || !results.every(ours)) throw e;
  }
}

function payoutRow(
  db: D1Database,
  share: PayoutShare,
  payer: string,
  tx: string,
  requestId: string,
  now: number,
) {
  return db
    .prepare(
      `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
    )
    .bind(
      share.partnerId,
      share.serviceId,
      Number(share.shareMicros),
      Number(share.feeMicros),
      payer,
      tx,
      requestId,
      share.paidUpstream ? 1 : 0,
      now,
    );
}
