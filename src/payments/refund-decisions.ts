import type { Bindings } from "../env";
import { type Dismissal, dismissInDoubt, type HandRefund, resolveRefundByHand } from "./refund-by-hand";
import { correctHandAmount, type Settled, settleOverpayment } from "./refund-corrections";
import { journalHandRecord } from "./refund-journal";

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

/**
 * Takes decision `outcome` (none: a hand refund) on refund `requestId`. A decision that ends what
 * the wallet would send (paid by hand, corrected, nothing owed) is also copied to KV
 * (refund-journal.ts), recorded or replayed: a copy KV refused answers unavailable, and sending the
 * same decision again (a replay) writes it.
 */
export async function decideRefund(
  env: Bindings,
  requestId: string,
  outcome: RefundOutcome | undefined,
  d: RefundDecision,
): Promise<HandRefund | Dismissal | Settled> {
  if (outcome === "overpayment_settled") return settleOverpayment(env.DB, requestId, d.note as string);
  const r =
    outcome === "nothing_owed"
      ? await dismissInDoubt(env.DB, requestId, d.note as string)
      : await (outcome === "amount_corrected" ? correctHandAmount : resolveRefundByHand)(
          env,
          requestId,
          d.tx_hash as string,
          d.amount_micro as number,
          d.note,
        );
  if (r.status !== "recorded" && r.status !== "replayed") return r;
  const copied = await journalHandRecord(env, requestId, {
    outcome: outcome ?? "paid",
    tx_hash: r.row.tx_hash,
    amount_micro: r.row.amount_micro,
    // The record's own time, so a replay that rewrites the copy keeps it.
    at: r.row.resolved_at ?? Date.now(),
  });
  if (copied) return r;
  return {
    status: "unavailable",
    detail: `Refund ${requestId} is recorded, but its copy outside D1 (KV: what stops the wallet sending it again after a D1 restore) could not be written: send the same decision again`,
    row: r.row,
  };
}
