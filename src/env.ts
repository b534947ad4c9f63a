import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";

/**
 * Bindings come from `wrangler types` (worker-configuration.d.ts); secrets are optional because a
 * deployment may run without card payments or an admin token, and the code must say so clearly.
 */
export interface Secrets {
  /**
   * Stripe API key: card checkout, and the key that seals bought API keys until "Reveal my key"
   * (payments/key-reveal.ts). Unset: card payments are off and the card routes answer 503.
   */
  STRIPE_SECRET_KEY?: string;
  /** Signing secret of the Stripe webhook endpoint; unset, the webhook answers 503. */
  STRIPE_WEBHOOK_SECRET?: string;
  /** Stripe API origin; the local stack and tests point it at the emulator. Unset: Stripe itself. */
  STRIPE_API_BASE?: string;
  /** Bearer token of /api/admin/* and the /admin dashboard sign-in; unset, both answer 503. */
  ADMIN_TOKEN?: string;
  /** Coinbase CDP facilitator credentials, sent only when both are set (FACILITATOR_URL on CDP). */
  CDP_API_KEY_ID?: string;
  /** Secret half of the CDP API key (see CDP_API_KEY_ID). */
  CDP_API_KEY_SECRET?: string;
  /**
   * Operating wallet key that pays x402-priced partner upstreams and refunds callers (refunds.ts).
   * Unset: such partners answer 502 and refunds stay owed.
   */
  PARTNER_PAYER_KEY?: string;
  /**
   * Private Ed25519 JWK (JSON) that signs offers and receipts (payments/receipt-key.ts). Unset: paid
   * answers carry no receipt, 402s no signed offers, and the did:web document lists only the
   * RECEIPT_RETIRED_KEYS (503 without any).
   */
  RECEIPT_SIGNING_KEY?: string;
  /** JSON-RPC endpoint of the X402_NETWORK chain; reconciliation reads it. Unset: the cron skips. */
  RPC_URL?: string;
}

/**
 * Vars a deployment adds to wrangler.toml's [vars] only when it needs them (so they are not in the
 * generated Env type).
 */
export interface OptionalVars {
  /**
   * Public Ed25519 JWKs (JSON array, each with its kid) of earlier RECEIPT_SIGNING_KEYs, published
   * in did.json and jwks.json so receipts they signed stay verifiable after a rotation
   * (payments/receipt-key.ts retiredKeys; docs/OPERATIONS.md, "Rotating the receipt signing key"). Unset: none.
   */
  RECEIPT_RETIRED_KEYS?: string;
}

export type Bindings = Env & Secrets & OptionalVars;

export interface Variables {
  requestId: string;
  body: unknown;
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
  /** A skill's upstream failure was at the caller's own target (the page it named): stats/record.ts. */
  targetFault: boolean | undefined;
  /**
   * The answer is about a call already stored under this request's idempotency key (its replay, or
   * why it cannot be given back now), not a new call: stats/record.ts logs it as a replay.
   */
  storedCallRetry: boolean | undefined;
  /** A card key with credits left pays this call: its credit is taken once the body is valid (payments/gate.ts). */
  cardKeyHash: string | undefined;
  /** A card credit paid this call (set by payments/gate.ts): the answer gets a card_credit receipt. */
  cardCredit: { keyHash: string } | undefined;
}

/**
 * A verified payment waiting for its settlement (in context as `x402Payment`; payments/x402-http.ts
 * makes it). Declared here, with the other context variables, so env imports nothing from above.
 */
export interface VerifiedPayment {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  extensions: Record<string, unknown> | undefined;
  /** Came as a v1 `X-PAYMENT`: the answer also carries `X-PAYMENT-RESPONSE`. */
  v1: boolean;
  /** Set once settlement started (early by a handler, or after it): it runs once. */
  settlement?: Promise<Settled>;
  /** Settles now (once); a handler that must not spend before the buyer paid calls it first. */
  settle(): Promise<SettleResponse>;
  /**
   * A 402 refusing this payment after verification (a reused or unclaimable authorization), with
   * the route's offer to sign again (PAYMENT-REQUIRED and the v1 body), as every x402 402 has.
   */
  refuse(reason: string, message: string): Promise<Response>;
}

/** How one settlement ended: the facilitator's answer and the headers the buyer gets. */
export interface Settled {
  result: SettleResponse;
  headers: Record<string, string>;
  failureBody?: unknown;
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
