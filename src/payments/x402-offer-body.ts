import type { PaymentRequired } from "@x402/core/types";
import { formatUsd, microsToUsd } from "../money";
import { decodePaymentRequiredHeader } from "./x402-headers";
import { v1OutputSchema, v1Requirement } from "./x402-v1";

/** Free-text errors of the x402 server, in the snake_case vocabulary of the facilitator's reasons. */
const REASON_OF_TEXT: Record<string, string> = {
  "No matching payment requirements": "payment_requirements_mismatch",
};
const machineReason = (error: string) =>
  /^[a-z][a-z0-9_]*$/.test(error) ? error : (REASON_OF_TEXT[error] ?? "payment_invalid");

/**
 * What to do about a facilitator's refusal whose code names no cause a payer can act on. An
 * unfunded wallet's transfer fails the facilitator's simulation: "send a new payment" alone had an
 * agent resend the same failing payment.
 */
const SHORT = "the paying wallet holds less USDC than that: fund it, then sign a new payment.";
const ADVICE: Record<string, string> = {
  invalid_exact_evm_transaction_simulation_failed:
    "the paying wallet may hold less USDC than that (or this authorization was already used): check the wallet's USDC balance on that network, then sign a new payment.",
  invalid_exact_evm_insufficient_balance: SHORT,
  insufficient_funds: SHORT,
};

/**
 * The 402 body for a PAYMENT-REQUIRED header (see explain402 in x402-explain.ts): the same offer
 * in x402 v1 form, an `error` in words and a machine `reason`. Loaded with the x402 server stack
 * (x402-v1.ts reads @x402/evm's network table), never at start-up. `cardKeys`: whether the route
 * also takes a card-credit key (skills do; partner try routes and refinery recipes take x402 only,
 * and checkout sells no key for them), so the text offers one only where it pays.
 */
export function explain(header: string, note: string | undefined, cardKeys = true): string | undefined {
  let required: PaymentRequired;
  try {
    required = decodePaymentRequiredHeader(header);
  } catch {
    return undefined;
  }
  const offer = required.accepts[0];
  const price = offer ? formatUsd(microsToUsd(offer.amount)) : "a price";
  const what = offer
    ? `${price} (${offer.amount} atomic units of USDC ${offer.asset} on ${offer.network}, paid to ${offer.payTo})`
    : price;
  const reason =
    required.error && required.error !== "Payment required" ? machineReason(required.error) : undefined;
  const error = note
    ? `${note} This call costs ${what}.`
    : reason
      ? `Payment rejected: ${required.error}. This call costs ${what}; ${ADVICE[reason] ?? "send a new payment."}`
      : `Payment required: this call costs ${what}. Pay with x402 (v2: PAYMENT-SIGNATURE header, requirements in PAYMENT-REQUIRED; v1: X-PAYMENT, requirements in this body)${cardKeys ? " or a card-credit key (Authorization: Bearer mk_...)" : ""}.`;
  // What the route takes and returns, for v1 crawlers: the bazaar extension's, in v1 form.
  const outputSchema = v1OutputSchema(required.extensions);
  const v1Accepts = required.accepts.flatMap((r) => v1Requirement(r, required.resource, outputSchema) ?? []);
  const body = v1Accepts.length
    ? {
        x402Version: 1,
        error,
        reason: reason ?? "payment_required",
        accepts: v1Accepts,
        resource: required.resource,
        ...(required.extensions ? { extensions: required.extensions } : {}),
      }
    : { ...required, error, reason: reason ?? "payment_required" };
  return JSON.stringify(body);
}
