#!/usr/bin/env node
// Proves the local chain + facilitator pair end to end with the same x402 packages the Worker and
// paying agents use: a buyer signs an EIP-3009 payment, the facilitator verifies and settles it.
// Run: node scripts/lib/chain-selftest.mjs
import assert from "node:assert/strict";
import { x402Client } from "@x402/core/client";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { BUYER_FUNDS, localClientOptions, NETWORK, startChain, usdcBalance } from "./chain.mjs";
import { startFacilitator } from "./facilitator.mjs";

const chain = await startChain();
const fac = await startFacilitator({ rpcUrl: chain.rpcUrl, privateKey: chain.facilitatorKey });
try {
  const buyer = chain.buyers[0];
  assert.equal(await usdcBalance(chain.rpcUrl, buyer.address), BUYER_FUNDS);
  const payToBefore = await usdcBalance(chain.rpcUrl, chain.payTo);

  const requirements = {
    scheme: "exact",
    network: NETWORK,
    asset: chain.usdcAddress,
    amount: "3000",
    payTo: chain.payTo,
    maxTimeoutSeconds: 300,
    extra: { name: "USD Coin", version: "2" },
  };
  const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(buyer.privateKey) });
  const payload = await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://127.0.0.1/selftest", description: "selftest", mimeType: "application/json" },
    accepts: [requirements],
  });
  console.log("payload", JSON.stringify(payload));

  const facilitator = new HTTPFacilitatorClient({ url: fac.url });
  const supported = await facilitator.getSupported();
  assert.ok(
    supported.kinds.some((k) => k.x402Version === 2 && k.network === NETWORK && k.scheme === "exact"),
  );
  const verified = await facilitator.verify(payload, requirements);
  console.log("verify", JSON.stringify(verified));
  assert.equal(verified.isValid, true);

  const settled = await facilitator.settle(payload, requirements);
  console.log("settle", JSON.stringify(settled));
  assert.equal(settled.success, true);
  const pub = createPublicClient(localClientOptions(chain.rpcUrl));
  const receipt = await pub.getTransactionReceipt({ hash: settled.transaction });
  assert.equal(receipt.status, "success");
  assert.equal(await usdcBalance(chain.rpcUrl, buyer.address), BUYER_FUNDS - 3000n);
  assert.equal(await usdcBalance(chain.rpcUrl, chain.payTo), payToBefore + 3000n);

  // The EIP-3009 nonce is spent now, so a replay must fail without moving funds.
  const replay = await facilitator.settle(payload, requirements);
  console.log("replay", JSON.stringify(replay));
  assert.equal(replay.success, false);
  assert.equal(await usdcBalance(chain.rpcUrl, chain.payTo), payToBefore + 3000n);
  console.log("chain selftest ok");
} finally {
  await fac.stop();
  await chain.stop();
}
