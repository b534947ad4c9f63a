import type { Bindings } from "./env";

export const INTERFACE_VERSION = "2.7.1";

const flag = (value: string | undefined, fallback: boolean) =>
  value === undefined || value === "" ? fallback : /^(1|true|yes|on)$/i.test(value.trim());

const list = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);

/** Public configuration read from vars, with the spec's defaults. */
export function publicConfig(env: Bindings, requestUrl: string) {
  const base = (env.BASE_URL || new URL(requestUrl).origin).replace(/\/+$/, "");
  return {
    baseUrl: base,
    payTo: env.PAY_TO,
    network: env.X402_NETWORK,
    usdcAddress: env.USDC_ADDRESS,
    facilitatorUrl: env.FACILITATOR_URL,
    x402Enabled: flag(env.X402_ENABLED, true),
    // Card payments need a Stripe key; without one the flag reads false whatever CARDPAY_ENABLED says.
    cardpayEnabled: flag(env.CARDPAY_ENABLED, true) && Boolean(env.STRIPE_SECRET_KEY),
    freeBeta: flag(env.FREE_BETA, false),
    contactEmail: env.CONTACT_EMAIL,
    ownershipProofs: list(env.X402_OWNERSHIP_PROOFS),
    x402listTokens: list(env.X402LIST_TOKENS),
  };
}
export type PublicConfig = ReturnType<typeof publicConfig>;
