import { authorizationTypes } from "@x402/evm";

/** An EIP-3009 authorization as it travels in an x402 payload: every field a string. */
export type Authorization = Record<string, string | undefined>;

/**
 * The EIP-712 typed data of USDC's `TransferWithAuthorization` for an authorization, under the
 * token's domain. The one place that turns the payload's strings into the signed message, so the
 * signature check here and every signer in the tests sign and recover the same bytes.
 */
export function transferWithAuthorization(
  auth: Authorization,
  domain: { name?: string; version?: string; chainId: number; verifyingContract: `0x${string}` },
) {
  return {
    domain,
    types: authorizationTypes,
    primaryType: "TransferWithAuthorization" as const,
    message: {
      from: auth.from as `0x${string}`,
      to: auth.to as `0x${string}`,
      value: BigInt(auth.value ?? 0),
      validAfter: BigInt(auth.validAfter ?? 0),
      validBefore: BigInt(auth.validBefore ?? 0),
      nonce: auth.nonce as `0x${string}`,
    },
  };
}
