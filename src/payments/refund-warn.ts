import { redactSecrets } from "../config";
import type { Bindings } from "../env";

/**
 * The one writer of a refund's warn line (held for a person, not sent, recorded by hand for another
 * amount than owed): a maintainer alerts on warn lines, and a hold or a send's error may quote the
 * RPC URL, whose path or query is often its key, so every line is redacted on the way out.
 */
export function warnRefundLine(env: Bindings, msg: string, fields: Record<string, unknown>) {
  console.warn(redactSecrets(JSON.stringify({ level: "warn", msg, ...fields }), env));
}
