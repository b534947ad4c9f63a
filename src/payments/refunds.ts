import type { PaymentRequirements } from "@x402/core/types";
import { publicConfig } from "../config";
import type { Bindings, VerifiedPayment } from "../env";
import { x402Server } from "./x402-lazy";
import { MAX_TIMEOUT_SECONDS, USDC_EXTRA } from "./x402-terms";

/**
 * Refunds of callers settled before the marketplace spent money for them (an x402-priced partner:
 * routes/partners.ts settles the caller first, so a caller whose payment fails never costs us
 * the partner's price). When the partner then fails, the caller gets back what we kept: the price
 * minus what the partner can collect from our operating wallet (`withheld`, which is disputed
 * with the partner, never paid twice). So an attacker, or a partner that takes our payment and
 * answers an error, can never make us pay out more than we collected.
 *
 * The refund is an x402 `exact` payment from the operating wallet (PARTNER_PAYER_KEY) to the
 * payer, settled by the same facilitator (which pays the gas). If it cannot go through, the row
 * stays `owed` and GET /api/admin/payouts lists it.
 */
export interface RefundRequest {
  requestId: string;
  payment: VerifiedPayment;
  payer: string;
  paidMicros: bigint;
  withheldMicros: bigint;
  reason: string;
}

export async function refundCaller(env: Bindings, r: RefundRequest) {
  const amount = r.paidMicros > r.withheldMicros ? r.paidMicros - r.withheldMicros : 0n;
  const now = Date.now();
  await env.DB.prepare(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, 'owed', ?6, ?6) ON CONFLICT (request_id) DO NOTHING`,
  )
    .bind(r.requestId, r.payer, Number(amount), Number(r.withheldMicros), r.reason, now)
    .run();
  if (amount === 0n) return { status: "owed" as const, amount, transaction: null };
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
    ? { status: "refunded" as const, amount, transaction: outcome.transaction }
    : { status: "owed" as const, amount, transaction: null };
}

async function sendRefund(env: Bindings, r: RefundRequest, amount: bigint) {
  if (!env.PARTNER_PAYER_KEY) return { ok: false as const, error: "no operating wallet configured" };
  const [{ x402Client }, { registerExactEvmScheme }, { privateKeyToAccount }] = await Promise.all([
    import("@x402/core/client"),
    import("@x402/evm/exact/client"),
    import("../signer"),
  ]);
  const cfg = publicConfig(env, "http://localhost");
  const requirements: PaymentRequirements = {
    scheme: "exact",
    network: r.payment.requirements.network,
    asset: r.payment.requirements.asset,
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
