// X402_NETWORK, USDC_ADDRESS and PAY_TO as the x402 gate and scripts/deploy-check.mjs both judge
// them. Plain Node loads this file for the script: package imports only (a relative import would
// need its .ts extension there).
import { getDefaultAsset } from "@x402/evm";
import { isAddress } from "viem";

/**
 * Circle's USDC contract on `network` as @x402/evm's asset table lists it, or undefined for a
 * network the table has no USDC for (a local chain of its own id): then USDC_ADDRESS is taken as set.
 */
function knownUsdc(network: string): string | undefined {
  try {
    return getDefaultAsset(network as `${string}:${string}`, "USDC").asset;
  } catch {
    return undefined;
  }
}

/** 0x0000…, 0x1111…: a placeholder, not anyone's wallet. */
export const isPlaceholderAddress = (address: string) => /^0x([0-9a-f])\1{39}$/i.test(address);

/**
 * What a value that is no address looks like, never the value: a private key pasted into PAY_TO by
 * mistake would otherwise be published in every 503, the log and deploy-check's (CI's) output.
 */
function shapeOf(value: string): string {
  const core = value.trim();
  const shape = /^0x[0-9a-f]*$/i.test(core)
    ? `0x + ${core.length - 2} hex digits`
    : /^[0-9a-f]+$/i.test(core)
      ? `${core.length} hex digits without 0x`
      : `${core.length} characters`;
  return core === value ? shape : `${shape}, with spaces around it`;
}

/**
 * What is wrong with X402_NETWORK, USDC_ADDRESS and PAY_TO together, every problem in order: the
 * x402 gate answers 503 with the first (configProblem) and scripts/deploy-check.mjs refuses them
 * all, so what one refuses the other does. An empty PAY_TO is left to the caller (each says what to
 * do about it). Each of these once passed and took payments nobody could spend, or in another
 * token than the prices' USDC.
 */
export function x402AddressProblems(network: string, usdc: string, payTo: string): string[] {
  const out: string[] = [];
  if (!/^eip155:\d+$/.test(network))
    out.push(`X402_NETWORK "${network}" is not an eip155:<chain id> network (Base mainnet: eip155:8453)`);
  const named = [
    ["PAY_TO", payTo],
    ["USDC_ADDRESS", usdc],
  ] as const;
  for (const [name, value] of named) {
    if (name === "PAY_TO" && !value) continue;
    if (isAddress(value)) continue;
    // Upper case in an address is read as an EIP-55 checksum: one letter's case off (or all of them
    // upper case) is a mistyped address.
    out.push(
      isAddress(value, { strict: false })
        ? `${name} ${value} is not EIP-55 checksummed (a letter's case is wrong): copy the address again, or write it all in lower case`
        : `${name} is not an EVM address (${shapeOf(value)}; an address is 0x + 40 hex digits)`,
    );
  }
  if (isAddress(usdc)) {
    const known = knownUsdc(network);
    if (known && known.toLowerCase() !== usdc.toLowerCase())
      out.push(`USDC_ADDRESS ${usdc} is not USDC on ${network} (${known}): prices are quoted in USDC`);
    if (payTo.toLowerCase() === usdc.toLowerCase())
      out.push("PAY_TO is the USDC contract's own address: nobody could spend what is paid to it");
  }
  if (isPlaceholderAddress(payTo))
    out.push(`PAY_TO ${payTo} is a placeholder, not a wallet: nobody could spend what is paid to it`);
  return out;
}
