import { redactSecrets } from "../config";
import type { Bindings } from "../env";
import { MAX_TIMEOUT_SECONDS } from "./x402-terms";

/**
 * The one writer of a refund's warn line (held for a person, not sent, recorded by hand for another
 * amount than owed): a maintainer alerts on warn lines, and a hold or a send's error may quote the
 * RPC URL, whose path or query is often its key, so every line is redacted on the way out.
 */
export function warnRefundLine(env: Bindings, msg: string, fields: Record<string, unknown>) {
  console.warn(redactSecrets(JSON.stringify({ level: "warn", msg, ...fields }), env));
}

/**
 * What to do about a refund whose send failed for a balance (undefined for any other error): the
 * maintainer's to fix, and nothing else will. Nothing is lost meanwhile: the row stays owed and
 * reconciliation sends it again, with the same nonce, once the failed authorization expired.
 */
export function refundSendAdvice(error: string | null | undefined): string | undefined {
  if (!error || !/insufficient_(balance|funds)/i.test(error)) return undefined;
  return `the operating wallet (PARTNER_PAYER_KEY's address) most likely holds less USDC than this refund (or the facilitator's gas wallet is empty): fund it; reconciliation sends the refund again (same nonce, paid at most once) once the failed authorization expired, ${MAX_TIMEOUT_SECONDS} s after the send`;
}
