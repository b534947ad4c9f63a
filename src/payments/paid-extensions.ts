import type { ResourceServerExtension } from "@x402/core/types";
import {
  createJWSOfferReceiptIssuer,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
} from "@x402/extensions/offer-receipt";
import {
  declarePaymentIdentifierExtension,
  PAYMENT_IDENTIFIER,
  paymentIdentifierResourceServerExtension,
} from "@x402/extensions/payment-identifier";
import type { Bindings } from "../env";
import { receiptKey } from "./receipt-key";

/** Offers are valid as long as an authorization signed for them may take to settle. */
const OFFER_VALIDITY_SECONDS = 300;

/**
 * x402 extensions of every sold route: the payment-identifier (idempotent retries, see
 * idempotency.ts) and, when a signing key is configured, signed offers in the 402
 * (`extensions["offer-receipt"].info.offers`, built by @x402/extensions). Receipts are not left to
 * the extension's settlement hook: it runs before the body is final and cannot hash it, so
 * `signReceipt` adds them from outside.
 */
export function paidExtensions(env: Bindings, baseUrl: string) {
  const key = receiptKey(env.RECEIPT_SIGNING_KEY, baseUrl);
  // Once per key and origin: the gate asks on every request (x402-gate.ts configKey). The public
  // half names the key: a new key under the same fragment (kid) is another key.
  const memoKey = `${keyId(key)}|${baseUrl}`;
  if (memo?.key === memoKey) return memo.value;
  memo = { key: memoKey, value: build(key) };
  return memo.value;
}

let memo: { key: string; value: ReturnType<typeof build> } | undefined;

function build(key: ReturnType<typeof receiptKey>) {
  const declarations: Record<string, unknown> = {
    [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false),
  };
  const server: ResourceServerExtension[] = [paymentIdentifierResourceServerExtension];
  if (!("error" in key)) {
    Object.assign(
      declarations,
      declareOfferReceiptExtension({ offerValiditySeconds: OFFER_VALIDITY_SECONDS }),
    );
    const { enrichSettlementResponse: _receiptsAddedOutside, ...offers } = createOfferReceiptExtension(
      createJWSOfferReceiptIssuer(key.kid, key.signer),
    );
    server.push(offers);
  }
  return { id: keyId(key), declarations, server };
}

const keyId = (key: ReturnType<typeof receiptKey>) =>
  "error" in key ? "no-receipt-key" : `${key.kid}|${key.publicJwk.x}`;
