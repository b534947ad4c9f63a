import type { PaymentPayload } from "@x402/core/types";
import type { VerifiedPayment } from "./payments/x402-http";

/**
 * Bindings come from `wrangler types` (worker-configuration.d.ts); secrets are optional because a
 * deployment may run without card payments or an admin token, and the code must say so clearly.
 */
export interface Secrets {
  STRIPE_SECRET_KEY?: string;
  STRIPE_WEBHOOK_SECRET?: string;
  /** Stripe API origin; the local stack and tests point it at the emulator. */
  STRIPE_API_BASE?: string;
  ADMIN_TOKEN?: string;
  CDP_API_KEY_ID?: string;
  CDP_API_KEY_SECRET?: string;
  /** Operating wallet key the marketplace pays x402-priced partner upstreams with (optional). */
  PARTNER_PAYER_KEY?: string;
  /** Private Ed25519 JWK (JSON) that signs offers and receipts (payments/receipt-key.ts). */
  RECEIPT_SIGNING_KEY?: string;
  /** JSON-RPC endpoint of the X402_NETWORK chain; reconciliation reads authorizations there. */
  RPC_URL?: string;
}

export type Bindings = Env & Secrets;

export interface Variables {
  requestId: string;
  body: unknown;
  query: unknown;
  params: unknown;
  /** Set when a card-credit key ran dry, so the 402 explains why. */
  creditNote: string | undefined;
  /** Set by a partner try call that the caller pays for: the partner's share goes to the payout ledger. */
  payout: PayoutShare | undefined;
  /** The answer is the route's unpaid 402 offer, sent already explained (payments/x402-http.ts). */
  x402UnpaidOffer: boolean | undefined;
  /** The x402 middleware verified this request's PAYMENT-SIGNATURE and let it through. */
  x402Verified: boolean | undefined;
  /** That verified payment: settled once, after the handler or early (payments/x402-http.ts). */
  x402Payment: VerifiedPayment | undefined;
  /** The EIP-3009 authorization this request claimed in D1 (see payments/settlement.ts). */
  paymentClaim: { key: string; payment: PaymentPayload; released: boolean } | undefined;
  /** A card credit paid this call (set by payments/gate.ts): the answer gets a card_credit receipt. */
  cardCredit: { keyHash: string } | undefined;
}

export interface PayoutShare {
  partnerId: string;
  serviceId: string;
  shareMicros: bigint;
  feeMicros: bigint;
  /** The marketplace already paid the partner over x402 from its operating wallet. */
  paidUpstream: boolean;
}

export interface AppEnv {
  Bindings: Bindings;
  Variables: Variables;
}
