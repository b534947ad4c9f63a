/**
 * Money as integers. Prices are written in dollars in the spec (0.006); every computation goes
 * through micro-dollars (= USDC atomic units, 6 decimals) so 3 × 0.012 is exactly 0.036.
 */
export function usdToMicros(usd: number): bigint {
  const [whole = "0", frac = ""] = usd.toFixed(6).split(".");
  return BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, "0"));
}

/** Dollars of micro-dollars: a bigint, a D1 integer or an x402 amount (a decimal string). */
export function microsToUsd(micros: bigint | number | string): number {
  return Number(micros) / 1_000_000;
}

/** "$0.003" style price string for x402 annotations. */
export function formatUsd(usd: number): string {
  return `$${trimDecimal(usd)}`;
}

/** Decimal dollars without float noise or trailing zeros: 0.036, 3, 0.15. */
export function trimDecimal(usd: number): string {
  return usd.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
}

/**
 * EVM addresses compare case-insensitively: EIP-55 checksums live only in the letter case, and
 * partners, RPC logs and our own config spell the same address either way. Not an address
 * (a partner's 402 may carry anything) is never the same.
 */
export const sameAddress = (a: unknown, b: string) =>
  typeof a === "string" && a.toLowerCase() === b.toLowerCase();

/** A transaction hash as a settlement must name one: a success without it proves nothing moved. */
export const TX_HASH = /^0x[0-9a-fA-F]{64}$/;
/** TX_HASH in words, as a 422 names it (the admin API and its dashboard say it alike). */
export const TX_HASH_RULE = "a 0x-prefixed 32-byte transaction hash";
