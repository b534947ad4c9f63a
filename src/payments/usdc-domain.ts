import { findDefaultAsset } from "@x402/evm";
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
