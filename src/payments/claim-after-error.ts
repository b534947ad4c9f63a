import type { Context } from "hono";
import type { AppEnv } from "../env";
import { logWriteFailure } from "../http/after-response";

/**
 * Whether D1 refused a statement before running it: it was queued and dropped because the
 * database is overloaded ("D1 DB is overloaded. Too many requests queued." / "Too much data
 * queued." / "Requests queued for too long.", D1's error list), so it wrote nothing. Any other
 * error (a connection lost among them) may have come after the commit.
 */
const refusedBeforeRunning = (e: unknown) => /D1 DB is overloaded\./.test(String(e));

/**
 * After D1 answered a claim (an x402 authorization's, an Idempotency-Key's) with `error`: whether
 * it committed anyway for this request (the connection lost after the commit), so the call goes
 * on under it; refused instead, the same retry would find the claim taken until it expired. A
 * claim D1 refused as overloaded wrote nothing: nothing is read back or freed, and an overloaded
 * D1 is asked for nothing more. When the read back fails too, the claim that may be this
 * request's is freed by `release` (only this request's, only while running): tried once, not
 * after the answer, its failure logged as attempt 1, never `final` (most likely no claim was
 * written, and one that was is freed once it expires: nothing is left for a person to do).
 */
export async function ownsClaimAfterError(
  c: Context<AppEnv>,
  error: unknown,
  what: string,
  isOurs: () => Promise<boolean>,
  release: () => Promise<unknown>,
): Promise<boolean> {
  if (refusedBeforeRunning(error)) return false;
  try {
    return await isOurs();
  } catch {
    await release().catch((e: unknown) => logWriteFailure(c.get("requestId"), what, e, 1));
    return false;
  }
}
