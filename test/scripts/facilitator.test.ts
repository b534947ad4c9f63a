import { createPublicClient, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with the scripts
import * as local from "../../scripts/lib/chain.mjs";
// @ts-expect-error plain JS helper shared with the scripts
import { startFacilitator } from "../../scripts/lib/facilitator.mjs";
// @ts-expect-error plain JS helper shared with the scripts
import { signPayment } from "../../scripts/lib/mcp-buyer.mjs";
// @ts-expect-error plain JS helper shared with the scripts
import { waitFor } from "../../scripts/lib/proc.mjs";

// The local stack's facilitator (scripts/lib/facilitator.mjs) on its own, against anvil with the
// real USDC contract: many payers settling at once, as the e2e tests and demos do.

type Hex = `0x${string}`;
let chain: {
  rpcUrl: string;
  payTo: Hex;
  facilitatorKey: Hex;
  facilitatorAddress: Hex;
  buyers: { address: Hex; privateKey: Hex }[];
  stop: () => Promise<void>;
};
let facilitator: { url: string; stop: () => Promise<void> };
let pub: ReturnType<typeof createPublicClient>;

beforeAll(async () => {
  chain = await local.startChain();
  facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, privateKey: chain.facilitatorKey });
  pub = createPublicClient(local.localClientOptions(chain.rpcUrl));
}, 120_000);
afterAll(async () => {
  await facilitator?.stop();
  await chain?.stop();
});

const requirements = () => ({
  scheme: "exact",
  network: local.NETWORK,
  amount: "1000",
  asset: local.USDC_ADDRESS,
  payTo: chain.payTo,
  maxTimeoutSeconds: 300,
  extra: { name: local.USDC_DOMAIN.name, version: local.USDC_DOMAIN.version },
});

/** A fresh authorization signed by `buyer`, as a payer's x402 client builds it. */
function payment(buyer: { privateKey: Hex }) {
  return signPayment(buyer.privateKey, {
    x402Version: 2,
    resource: { url: "http://skills.test/api/skills/sha256", description: "", mimeType: "application/json" },
    accepts: [requirements()],
  });
}

async function settle(paymentPayload: unknown) {
  const res = await fetch(`${facilitator.url}/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements() }),
  });
  return (await res.json()) as { success: boolean; transaction: Hex; errorReason?: string };
}

/** Transactions the facilitator's wallet has broadcast that no block holds yet. */
async function unmined() {
  const address = chain.facilitatorAddress;
  const [pending, mined] = await Promise.all([
    pub.getTransactionCount({ address, blockTag: "pending" }),
    pub.getTransactionCount({ address, blockTag: "latest" }),
  ]);
  return pending - mined;
}

describe("local facilitator under concurrent settles", () => {
  it("broadcasts every settle without waiting for another's receipt, each with its own nonce", async () => {
    // The last buyer is kept for the next test.
    const others = chain.buyers.slice(0, -1);
    const payers = [...others, ...others.slice(0, 3)];
    const payments = await Promise.all(payers.map(payment));
    // No block is mined until every settle has broadcast: a settle that waited for an earlier
    // one's receipt would never broadcast, and the count below would stay short.
    await pub.request({ method: "evm_setAutomine", params: [false] } as never);
    let answers: Promise<Awaited<ReturnType<typeof settle>>[]>;
    try {
      answers = Promise.all(payments.map(settle));
      await waitFor(`${payers.length} broadcasts`, async () => (await unmined()) === payers.length, {
        timeoutMs: 20_000,
      });
      await pub.request({ method: "evm_mine", params: [] } as never);
    } finally {
      await pub.request({ method: "evm_setAutomine", params: [true] } as never);
    }
    const settled = await answers;
    expect(settled.map((s) => s.errorReason ?? "ok")).toEqual(payers.map(() => "ok"));

    const transactions = await Promise.all(settled.map((s) => pub.getTransaction({ hash: s.transaction })));
    expect(new Set(transactions.map((t) => t.blockNumber)).size).toBe(1);
    const nonces = transactions.map((t) => t.nonce).sort((a, b) => a - b);
    const first = nonces[0] ?? -1;
    expect(nonces).toEqual(nonces.map((_, i) => first + i));
  }, 60_000);

  it("settles one authorization sent twice at once only once", async () => {
    const buyer = chain.buyers.at(-1);
    if (!buyer) throw new Error("the local chain has no buyers");
    const once = await payment(buyer);
    const before = await pub.getBlockNumber();
    const settled = await Promise.all([settle(once), settle(once)]);
    expect(settled.filter((s) => s.success)).toHaveLength(1);

    const transfers = await pub.getLogs({
      address: local.USDC_ADDRESS,
      event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"),
      args: { from: buyer.address },
      fromBlock: before + 1n,
    });
    expect(transfers).toHaveLength(1);
  }, 60_000);

  it("keeps settling after the node dropped one of its broadcasts (no nonce past the gap)", async () => {
    const [dropped, next] = await Promise.all(chain.buyers.slice(0, 2).map(payment));
    await pub.request({ method: "evm_setAutomine", params: [false] } as never);
    let lost: ReturnType<typeof settle>;
    try {
      lost = settle(dropped);
      await waitFor("the broadcast", async () => (await unmined()) === 1, { timeoutMs: 20_000 });
      const pool = (await pub.request({ method: "txpool_content", params: [] } as never)) as {
        pending: Record<string, Record<string, { hash: Hex }>>;
      };
      const ours = Object.entries(pool.pending).find(
        ([from]) => from.toLowerCase() === chain.facilitatorAddress.toLowerCase(),
      );
      const drop = Object.values(ours?.[1] ?? {})[0]?.hash;
      if (!drop) throw new Error("the facilitator's broadcast is not in the pool");
      await pub.request({ method: "anvil_dropTransaction", params: [drop] } as never);
    } finally {
      await pub.request({ method: "evm_setAutomine", params: [true] } as never);
    }
    // The dropped settle waits for a receipt that never comes; the next one must land regardless.
    void lost.catch(() => {});
    const answer = await settle(next);
    expect(answer.errorReason ?? "ok").toBe("ok");
    expect((await pub.getTransactionReceipt({ hash: answer.transaction })).status).toBe("success");
  }, 60_000);
});
