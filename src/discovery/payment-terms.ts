import type { PublicConfig } from "../config";

/** The x402 pay-to address and asset as the discovery documents publish them. */
export interface PaymentTerms {
  readonly payTo: string;
  readonly asset: string;
}

const checked = new WeakMap<PublicConfig, PaymentTerms | null>();

/**
 * Judges cfg's X402_NETWORK, USDC_ADDRESS and PAY_TO once per configuration (the documents are
 * cached per configuration too: http/conditional-get.ts) with the x402 gate's own check. viem,
 * which the check needs, is loaded on first use, never at start-up (docs/PERFORMANCE.md).
 */
export async function checkPaymentTerms(cfg: PublicConfig): Promise<void> {
  if (checked.has(cfg)) return;
  const { x402AddressProblems } = await import("../payments/x402-address");
  // An empty PAY_TO passes x402AddressProblems (each caller says what to do about it): the gate
  // answers 503 "not configured", so nothing is published either.
  const ok = cfg.payTo !== "" && x402AddressProblems(cfg.network, cfg.usdcAddress, cfg.payTo).length === 0;
  checked.set(cfg, ok ? Object.freeze({ payTo: cfg.payTo, asset: cfg.usdcAddress }) : null);
}

/**
 * The terms to publish, or undefined while the gate would refuse them (503) or before
 * checkPaymentTerms ran: a private key pasted into PAY_TO or USDC_ADDRESS was printed in every
 * discovery document, so nothing the gate refuses is published.
 */
export const paymentTerms = (cfg: PublicConfig): PaymentTerms | undefined => checked.get(cfg) ?? undefined;

/** Said where the address would be when paymentTerms is undefined, as the gate's 503 says. */
export const PAYMENTS_MISCONFIGURED =
  "x402 payments are misconfigured on this deployment (paid calls answer 503 until the operator fixes PAY_TO, USDC_ADDRESS or X402_NETWORK)";
