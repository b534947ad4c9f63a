import type { PublicConfig } from "../config";

/** The x402 pay-to address and asset as the discovery documents publish them. */
export interface PaymentTerms {
  readonly payTo: string;
  readonly asset: string;
}

/** What an EVM address looks like: 0x and 40 hex digits (a private key, 64 of them, never does). */
const ADDRESS_SHAPE = /^0x[0-9a-fA-F]{40}$/;

/**
 * The terms to publish, or undefined while PAY_TO is empty or either value is not shaped like an
 * address: a private key pasted into PAY_TO or USDC_ADDRESS was printed in every discovery document.
 * The shape only, not the x402 gate's whole check (payments/x402-address.ts: checksum, placeholder,
 * the network's USDC), so no document waits on viem or depends on a check having run first (an
 * earlier version did, and a document rendered for an unchecked config left a valid address out
 * and was cached so); an address-shaped value the gate refuses is public by nature, and its paid
 * calls answer the gate's 503.
 */
export function paymentTerms(cfg: PublicConfig): PaymentTerms | undefined {
  if (!ADDRESS_SHAPE.test(cfg.payTo) || !ADDRESS_SHAPE.test(cfg.usdcAddress)) return undefined;
  return { payTo: cfg.payTo, asset: cfg.usdcAddress };
}

/**
 * Said where the address would be when paymentTerms is undefined. True on a free beta too, whose
 * calls answer unpaid (an earlier text said "paid calls answer 503", which a free beta's calls never
 * do): the 503 is said only of calls that are sold.
 */
export const PAYMENTS_MISCONFIGURED =
  "x402 payments are misconfigured on this deployment: no x402 payment is taken until the operator sets PAY_TO and USDC_ADDRESS to addresses (while calls are sold, they answer 503)";
