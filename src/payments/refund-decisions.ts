import type { Bindings } from "../env";
import { type Dismissal, dismissInDoubt, type HandRefund, resolveRefundByHand } from "./refund-by-hand";
import { correctHandAmount, type Settled, settleOverpayment } from "./refund-corrections";

/**
 * The decisions a person takes on a refund (POST /api/admin/resolve/refunds/{request_id} and the
 * dashboard's forms), beside none: a hand refund paid (tx_hash, amount_micro).
 */
export const REFUND_OUTCOMES = ["nothing_owed", "amount_corrected", "overpayment_settled"] as const;
export type RefundOutcome = (typeof REFUND_OUTCOMES)[number];
export const isRefundOutcome = (o: string | undefined): o is RefundOutcome =>
  (REFUND_OUTCOMES as readonly string[]).includes(o ?? "");

/** The fields each decision reads, checked by its caller (a note for nothing_owed and overpayment_settled, else tx_hash and amount_micro). */
export interface RefundDecision {
  tx_hash?: string;
  amount_micro?: number;
  note?: string;
}

/** Takes decision `outcome` (none: a hand refund) on refund `requestId`. */
export function decideRefund(
  env: Bindings,
  requestId: string,
  outcome: RefundOutcome | undefined,
  d: RefundDecision,
): Promise<HandRefund | Dismissal | Settled> {
  if (outcome === "nothing_owed") return dismissInDoubt(env.DB, requestId, d.note as string);
  if (outcome === "overpayment_settled") return settleOverpayment(env.DB, requestId, d.note as string);
  const decide = outcome === "amount_corrected" ? correctHandAmount : resolveRefundByHand;
  return decide(env, requestId, d.tx_hash as string, d.amount_micro as number, d.note);
}
