import { HTTPFacilitatorClient } from "@x402/core/server";
import {
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
} from "@x402/core/types";

const PENDING = "settlement_pending";
// Entries live from a pending answer to the library's one retry, moments later; the bound only
// matters if a retry never comes (a thrown request), so old entries are simply dropped.
const MAX_PENDING = 256;

/**
 * A facilitator client that remembers a `settlement_pending` answer until the settle after it.
 *
 * @x402/core answers a pending settlement (a broadcast transaction, no receipt yet) by asking
 * /settle once more with the same payload and returns only that second answer. When the retry
 * reaches a facilitator instance without the pending record (several instances, or several
 * signers), it verifies and broadcasts again; that second transaction reverts on the spent nonce
 * while the first may still land; or it refuses before sending (the spent nonce fails its
 * simulation), which read alone would be "nothing moved": the buyer told "not charged" and the
 * claim dropped, so a landed first transfer would never be reconciled. After a pending answer, a
 * failure that does not name the pending transaction is answered as that pending answer instead
 * (its transaction is the one to look for), which settlement.ts reports as unconfirmed.
 */
export class PendingAwareFacilitatorClient extends HTTPFacilitatorClient {
  private readonly pending = new Map<string, SettleResponse>();

  override async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const key = nonceOf(payload, requirements);
    const earlier = key ? this.pending.get(key) : undefined;
    if (key) this.pending.delete(key);
    let result: SettleResponse;
    try {
      result = await super.settle(payload, requirements);
    } catch (e) {
      if (earlier) return earlier;
      // A pending answer sent with a non-2xx status arrives as a SettleError, which the library
      // also retries as pending: remembered the same way.
      const pending = pendingFromError(e, requirements);
      if (key && pending) this.remember(key, pending);
      throw e;
    }
    if (result.success) return result;
    // The answer about the pending transaction itself (the instance that holds its record saw it
    // revert) is kept as it is, with its transaction; any other failure after a pending answer is
    // answered as the pending one.
    if (earlier) return result.transaction === earlier.transaction ? result : earlier;
    if (key && result.errorReason === PENDING && result.transaction) this.remember(key, result);
    return result;
  }

  private remember(key: string, pending: SettleResponse) {
    if (this.pending.size >= MAX_PENDING) this.pending.clear();
    this.pending.set(key, pending);
  }
}

/** The SettleResponse a thrown SettleError carries, when it says `settlement_pending` with a transaction. */
function pendingFromError(e: unknown, requirements: PaymentRequirements): SettleResponse | undefined {
  if (!(e instanceof SettleError) || e.errorReason !== PENDING || !e.transaction) return undefined;
  return answerOf(e, requirements.network);
}

/**
 * A settle answer sent with a 5xx or a 429, as @x402/core throws it (a SettleError, whose status
 * the library drops when it hands the answer on): its reason marked with the status,
 * `insufficient_funds (HTTP 500)`, which settlement.ts reads as unconfirmed whatever the code (its
 * REFUSED_BEFORE_SENDING says why). `settlement_pending` is left as it is: the library asks
 * /settle once more on it (above).
 */
export function markedByStatus(e: unknown): unknown {
  if (!(e instanceof SettleError) || e.errorReason === PENDING) return e;
  if (e.statusCode < 500 && e.statusCode !== 429) return e;
  const answer = answerOf(e, e.network);
  return new SettleError(e.statusCode, {
    ...answer,
    errorReason: `${e.errorReason || "no reason"} (HTTP ${e.statusCode})`,
  });
}

/** The answer a thrown SettleError carries, as the SettleResponse it was. */
function answerOf(e: SettleError, network: SettleResponse["network"]): SettleResponse {
  return {
    success: false,
    ...(e.errorReason ? { errorReason: e.errorReason } : {}),
    ...(e.errorMessage ? { errorMessage: e.errorMessage } : {}),
    ...(e.payer ? { payer: e.payer } : {}),
    transaction: e.transaction ?? "",
    network: e.network ?? network,
  };
}

/**
 * The authorization a settle is about: its signer's nonce on the network of the requirements it is
 * settled against (what the facilitator verified), not the payload's own `accepted`, which the
 * payer writes; as the claim's key is (ledger.ts).
 */
function nonceOf(payload: PaymentPayload, requirements: PaymentRequirements): string | undefined {
  const auth = (payload.payload as { authorization?: { from?: unknown; nonce?: unknown } } | undefined)
    ?.authorization;
  return typeof auth?.from === "string" && typeof auth.nonce === "string"
    ? `${requirements.network}:${auth.from}:${auth.nonce}`.toLowerCase()
    : undefined;
}
