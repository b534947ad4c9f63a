import type { PaymentRequirements } from "@x402/core/types";
import { publicConfig } from "../config";
import type { Bindings } from "../env";
import { x402Server } from "./x402-lazy";
import { MAX_TIMEOUT_SECONDS, USDC_EXTRA } from "./x402-terms";

/**
 * Refunds of callers who paid and did not get what they paid for, in two cases:
 * - a caller settled before the marketplace spent money for them (an x402-priced partner:
 *   routes/partners.ts settles the caller first, so a caller whose payment fails never costs us
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
 * payer, settled by the same facilitator (which pays the gas). It is sent once, by whoever wrote
 * its `refunds` row: if it cannot go through, the row stays `owed` (with the error) and GET
 * /api/admin/payouts lists it for the maintainer. It is never retried automatically: a refund
 * whose settlement got no answer may still land, and a second one would pay the caller twice.
 */
export interface Refund {
  requestId: string;
  payer: string;
  network: string;
  asset: string;
  paidMicros: bigint;
  withheldMicros: bigint;
  reason: string;
}

export interface RefundOutcome {
  status: "owed" | "refunded";
  amount: bigint;
  transaction: string | null;
}

const refundAmount = (r: Refund) => (r.paidMicros > r.withheldMicros ? r.paidMicros - r.withheldMicros : 0n);

/**
 * The statement that records a refund as owed, once per request. With `whileClaimFailed` (a
 * payment_nonces key) it writes only while that claim is still 'failed', so it can sit in the
 * batch that settles the claim and no second run or racing request records it again.
 */
export function owedRefund(db: D1Database, r: Refund, now: number, whileClaimFailed?: string) {
  const values = [r.requestId, r.payer, Number(refundAmount(r)), Number(r.withheldMicros), r.reason, now];
  if (whileClaimFailed === undefined)
    return db
      .prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'owed', ?6, ?6) ON CONFLICT (request_id) DO NOTHING`,
      )
      .bind(...values);
  return db
    .prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, ?5, 'owed', ?6, ?6
       WHERE EXISTS (SELECT 1 FROM payment_nonces WHERE nonce = ?7 AND status = 'failed')
       ON CONFLICT (request_id) DO NOTHING`,
    )
    .bind(...values, whileClaimFailed);
}

/** A partner call's refund: recorded as owed, then sent (only by the request that recorded it). */
export async function refundCaller(env: Bindings, r: Refund): Promise<RefundOutcome> {
  const written = await owedRefund(env.DB, r, Date.now()).run();
  if (!written.meta.changes) {
    const row = await env.DB.prepare(
      "SELECT status, amount_micro, tx_hash FROM refunds WHERE request_id = ?1",
    )
      .bind(r.requestId)
      .first<{ status: "owed" | "refunded"; amount_micro: number; tx_hash: string | null }>();
    return {
      status: row?.status ?? "owed",
      amount: BigInt(row?.amount_micro ?? 0),
      transaction: row?.tx_hash ?? null,
    };
  }
  return sendRecordedRefund(env, r);
}

/**
 * Sends a refund whose `refunds` row the caller just wrote as owed, and records the outcome. A
 * refund of nothing (the partner could collect the whole price) stays a row with amount 0.
 */
export async function sendRecordedRefund(env: Bindings, r: Refund): Promise<RefundOutcome> {
  const amount = refundAmount(r);
  if (amount === 0n) return { status: "owed", amount, transaction: null };
  const outcome = await sendRefund(env, r, amount).catch((e: unknown) => ({
    ok: false as const,
    error: e instanceof Error ? e.message : String(e),
  }));
  await env.DB.prepare(
    "UPDATE refunds SET status = ?2, tx_hash = ?3, error = ?4, updated_at = ?5 WHERE request_id = ?1",
  )
    .bind(
      r.requestId,
      outcome.ok ? "refunded" : "owed",
      outcome.ok ? outcome.transaction : null,
      outcome.ok ? null : outcome.error,
      Date.now(),
    )
    .run();
  return outcome.ok
    ? { status: "refunded", amount, transaction: outcome.transaction }
    : { status: "owed", amount, transaction: null };
}

async function sendRefund(env: Bindings, r: Refund, amount: bigint) {
  if (!env.PARTNER_PAYER_KEY) return { ok: false as const, error: "no operating wallet configured" };
  const [{ x402Client }, { registerExactEvmScheme }, { privateKeyToAccount }] = await Promise.all([
    import("@x402/core/client"),
    import("@x402/evm/exact/client"),
    import("../signer"),
  ]);
  const cfg = publicConfig(env, "http://localhost");
  const requirements: PaymentRequirements = {
    scheme: "exact",
    network: r.network as PaymentRequirements["network"],
    asset: r.asset,
    amount: amount.toString(),
    payTo: r.payer,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    extra: USDC_EXTRA,
  };
  const client = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(env.PARTNER_PAYER_KEY as `0x${string}`),
  });
  const payload = await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: `refund:${r.requestId}`, description: r.reason, mimeType: "application/json" },
    accepts: [requirements],
  });
  const { facilitatorClient } = await x402Server();
  const settled = await facilitatorClient(env, cfg).settle(payload, requirements);
  return settled.success
    ? { ok: true as const, transaction: settled.transaction }
    : { ok: false as const, error: settled.errorReason ?? "refund settlement failed" };
}
