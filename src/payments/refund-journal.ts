import type { Bindings } from "../env";

/**
 * A copy, outside D1, of each refund a person recorded as paid by hand (or corrected, or recorded as
 * nothing owed): KV, which a D1 Time Travel restore does not roll back. The wallet's sends read it
 * before signing: after a restore to before the record, the row is owed again and never sent, and
 * nothing else knows the person paid (their transfer used no nonce of ours, so the chain would take
 * the wallet's authorization too; the audit of 2026-11-26 saw the payer refunded twice). Kept 35
 * days, past Time Travel's 30.
 */
const PREFIX = "refund-by-hand:";
export const KEPT_SECONDS = 35 * 86_400;

export interface HandRecordCopy {
  /** The decision: paid by hand (with its transfer), corrected, or nothing owed. */
  outcome: "paid" | "amount_corrected" | "nothing_owed";
  tx_hash: string | null;
  amount_micro: number;
  at: number;
}

/** Writes the copy; false when KV refused it (the caller asks the person to send the decision again). */
export async function journalHandRecord(env: Bindings, requestId: string, copy: HandRecordCopy) {
  try {
    await env.KV.put(`${PREFIX}${requestId}`, JSON.stringify(copy), { expirationTtl: KEPT_SECONDS });
    return true;
  } catch (e) {
    console.error(
      JSON.stringify({
        level: "warn",
        msg: "hand refund: its copy could not be written to KV",
        request_id: requestId,
        error: String(e),
      }),
    );
    return false;
  }
}

/** The copy of a hand record of refund `requestId`, or null; throws when KV cannot be read. */
export async function handRecordOf(env: Bindings, requestId: string): Promise<HandRecordCopy | null> {
  const text = await env.KV.get(`${PREFIX}${requestId}`);
  return text === null ? null : (JSON.parse(text) as HandRecordCopy);
}
