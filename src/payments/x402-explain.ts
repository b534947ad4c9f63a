import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { formatUsd, microsToUsd } from "../money";
import { isUnpaidOffer } from "./x402-http";
import { v1Requirement } from "./x402-v1";

/** Free-text errors of the x402 server, in the snake_case vocabulary of the facilitator's reasons. */
const REASON_OF_TEXT: Record<string, string> = {
  "No matching payment requirements": "payment_requirements_mismatch",
};
const machineReason = (error: string) =>
  /^[a-z][a-z0-9_]*$/.test(error) ? error : (REASON_OF_TEXT[error] ?? "payment_invalid");

/**
 * The x402 server puts the v2 requirements in the PAYMENT-REQUIRED header and leaves the body
 * empty. The body carries the same offer in x402 **v1** form (`x402Version: 1`, `accepts` with
 * `network: "base"`, `maxAmountRequired`, …) so v1 clients (x402-fetch, x402-axios) can pay, plus
 * the v2 `resource` and `extensions` (bazaar) and an `error` in words with a machine `reason`.
 * v2 clients and crawlers read the header first (@x402/core's client, @agentcash/discovery), so one
 * answer serves both versions. A network without a v1 name keeps the v2 form in the body.
 */
export const explain402: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const res = c.res;
  if (res.status !== 402) return;
  const header = res.headers.get("payment-required");
  if (!header || !res.headers.get("content-type")?.includes("json")) return;
  const note = c.get("creditNote");
  // The gate sends the unpaid offer already explained (once per cached answer); only a note about
  // a refused card key changes its text.
  if (isUnpaidOffer(c)) {
    if (note === undefined) return;
  } else {
    const existing = await res.clone().text();
    if (existing && existing !== "{}") return;
  }
  // The same header and note always explain the same way: decoded and written once per isolate.
  const cacheKey = `${note ?? ""}\u0000${header}`;
  let body = explained.get(cacheKey);
  if (body === undefined) {
    body = explain(header, note);
    if (body === undefined) return;
    if (explained.size >= MAX_EXPLAINED) explained.clear();
    explained.set(cacheKey, body);
  }
  const headers = new Headers(res.headers);
  headers.set("content-type", "application/json");
  c.res = new Response(body, { status: 402, headers });
};

// Offers differ by route, price tier, configuration and reason; the bound only stops growth from
// headers nobody will send again (a rejected payment's reason is part of its header).
const MAX_EXPLAINED = 512;
const explained = new Map<string, string>();

export function explain(header: string, note: string | undefined): string | undefined {
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
      ? `Payment rejected: ${required.error}. This call costs ${what}; send a new payment.`
      : `Payment required: this call costs ${what}. Pay with x402 (v2: PAYMENT-SIGNATURE header, requirements in PAYMENT-REQUIRED; v1: X-PAYMENT, requirements in this body) or a card-credit key (Authorization: Bearer mk_...).`;
  const v1Accepts = required.accepts.flatMap((r) => v1Requirement(r, required.resource) ?? []);
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
