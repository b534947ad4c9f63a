/** EIP-712 domain of USDC (name, version): what every exact-scheme signature is made under. */
export const USDC_EXTRA = { name: "USD Coin", version: "2" };
/** An EVM address as x402 payloads carry it (any letter case; no checksum is required). */
export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** How long a signed authorization may take to reach settlement (x402 `maxTimeoutSeconds`). */
export const MAX_TIMEOUT_SECONDS = 300;
