/**
 * EIP-712 domain of Circle's USDC on Base mainnet (name, version): what an exact-scheme signature
 * is made under for an asset @x402/evm does not list (usdc-domain.ts reads the listed ones).
 */
export const USDC_EXTRA = { name: "USD Coin", version: "2" };
/** An EVM address as x402 payloads carry it (any letter case; no checksum is required). */
export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** How long a signed authorization may take to reach settlement (x402 `maxTimeoutSeconds`). */
export const MAX_TIMEOUT_SECONDS = 300;

/**
 * How far past now + MAX_TIMEOUT_SECONDS a buyer's `validBefore` may reach: clients sign
 * `their now + maxTimeoutSeconds`, so a buyer whose clock runs ahead of ours signs later. The
 * facilitator already takes a clock up to 294 s behind (it wants validBefore ≥ now + 6); this
 * takes one as far ahead. Reconciliation looks at a `running` claim only once it expired, so this
 * bound also sets how long a call cut off after settling waits for its ledger row: 10 minutes,
 * then reconciliation's minute and the next cron run.
 */
export const VALID_BEFORE_SLACK_SECONDS = 300;

/**
 * Why a buyer's EIP-3009 `validBefore` is refused at `nowSeconds` (undefined: accepted). It must
 * be Unix seconds, as a decimal string, within the offer's window: one in milliseconds (a common
 * client bug) or 2^256 − 1 never expires, so its claim would never be reconciled.
 */
export function validBeforeRefusal(validBefore: unknown, nowSeconds: number): string | undefined {
  const latest = nowSeconds + MAX_TIMEOUT_SECONDS + VALID_BEFORE_SLACK_SECONDS;
  const shown = String(validBefore).slice(0, 80);
  if (typeof validBefore !== "string" || !/^\d{1,78}$/.test(validBefore))
    return `authorization.validBefore ${shown} is not a decimal integer string (Unix seconds)`;
  if (BigInt(validBefore) > BigInt(latest))
    return `authorization.validBefore ${shown} is later than ${latest}: sign it in Unix seconds, at most now + maxTimeoutSeconds (${MAX_TIMEOUT_SECONDS} s)`;
  return undefined;
}
