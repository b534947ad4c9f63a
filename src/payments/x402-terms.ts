/** EIP-712 domain of USDC (name, version): what every exact-scheme signature is made under. */
export const USDC_EXTRA = { name: "USD Coin", version: "2" };
/** How long a signed authorization may take to reach settlement (x402 `maxTimeoutSeconds`). */
export const MAX_TIMEOUT_SECONDS = 300;
