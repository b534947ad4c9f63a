import type { PaymentPayload, PaymentRequired, SettleResponse } from "@x402/core/types";
import { Base64EncodedRegex, safeBase64Decode, safeBase64Encode } from "@x402/core/utils";

/*
 * The x402 header codecs, as @x402/core/http defines them (base64 of JSON, the same regex check
 * before decoding), on the library's own base64 helpers. Importing them from @x402/core/http
 * would evaluate its whole HTTP resource server and its zod schemas at start-up; the middlewares
 * that only read or write a header (quotas, idempotency, receipts, settlement) import these.
 */

function decode<T>(header: string, what: string): T {
  if (!Base64EncodedRegex.test(header)) throw new Error(`Invalid payment ${what} header`);
  return JSON.parse(safeBase64Decode(header)) as T;
}

export const decodePaymentSignatureHeader = (header: string) => decode<PaymentPayload>(header, "signature");
export const decodePaymentRequiredHeader = (header: string) => decode<PaymentRequired>(header, "required");
export const decodePaymentResponseHeader = (header: string) => decode<SettleResponse>(header, "response");

/** Without `extensionResponses`: those are for the server, not the buyer (as the library does). */
export function encodePaymentResponseHeader(response: SettleResponse): string {
  const buyerFacing: SettleResponse & { extensionResponses?: unknown } = { ...response };
  delete buyerFacing.extensionResponses;
  return safeBase64Encode(JSON.stringify(buyerFacing));
}
