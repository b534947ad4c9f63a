import { findDefaultAsset, getDefaultAsset } from "@x402/evm";
import { USDC_EXTRA } from "./x402-terms";

/**
 * The EIP-712 domain (name, version) of the USDC contract a payment is signed for. Circle named it
 * "USD Coin" on Base mainnet but "USDC" on Base Sepolia, and a signature made under another name
 * is refused by the facilitator or reverts on chain. @x402/evm's asset table lists the deployed
 * contracts; an asset it does not list keeps mainnet's domain (the local chain places Circle's
 * mainnet contract at the Base address).
 */
export function usdcDomain(network: string, asset: string): { name: string; version: string } {
  const known = findDefaultAsset(asset, network as `${string}:${string}`);
  return known ? { name: known.name, version: known.version } : USDC_EXTRA;
}

/**
 * Circle's USDC contract on `network` as @x402/evm's asset table lists it, or undefined for a
 * network the table has no USDC for (a local chain of its own id): then USDC_ADDRESS is taken as set.
 */
export function knownUsdc(network: string): string | undefined {
  try {
    return getDefaultAsset(network as `${string}:${string}`, "USDC").asset;
  } catch {
    return undefined;
  }
}
