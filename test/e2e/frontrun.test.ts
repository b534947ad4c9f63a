import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { x402Facilitator } from "@x402/core/facilitator";
import { decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, createWalletClient, parseAbi, parseAbiItem, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { localClientOptions, NETWORK, USDC_DOMAIN, usdcBalance } from "../../scripts/lib/chain.mjs";
import { settlementOutcome } from "../../src/payments/settlement";
import { fetchPayingWithId } from "../fixtures/payments";
import { admin, fireCron, offerSigned, paidCall, refunds, rpc, until, view } from "./reconcile-helpers";

// A third party submits the buyer's signed EIP-3009 authorization on chain itself: anyone holding
// it can (the buyer, or a mempool watcher copying it from our facilitator's broadcast). On the real
// local stack (anvil + Circle's USDC + the local facilitator), with automine off so that the order
// of transactions is ours to choose: the third party's copy is mined in the same block as our
// facilitator's settlement, ahead of it (a higher tip), and ours reverts on the spent nonce.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const PRICE = 3000n; // sha256
const SHA256 = `${stack.base_url}/api/skills/sha256`;

// Multicall3 at its canonical address, as deployed on Base. viem ships its creation code
// (multicall3Bytecode, not exported: read from its module) whose constructor returns the 0x15b9
// bytes from offset 0x20: the runtime code.
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
const creation = /multicall3Bytecode = '0x([0-9a-f]+)'/.exec(
  readFileSync(
    path.join(
      path.dirname(createRequire(import.meta.url).resolve("viem/package.json")),
      "_esm/constants/contracts.js",
    ),
    "utf8",
  ),
)?.[1] as string;
const MULTICALL3_RUNTIME = `0x${creation.slice(0x20 * 2, (0x20 + 0x15b9) * 2)}`;

const chain = createPublicClient(localClientOptions(stack.rpc_url));
const balance = (who: string): Promise<bigint> => usdcBalance(stack.rpc_url, who);

type Authorization = {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
};
const authorizationOf = (p: PaymentPayload) =>
  p.payload as { authorization: Authorization; signature: `0x${string}` };

/** Someone who is neither the buyer nor us, with gas money, and a copy of the signed authorization. */
async function thirdParty() {
  const account = privateKeyToAccount(generatePrivateKey());
  await rpc("anvil_setBalance", [account.address, "0x56BC75E2D63100000"]); // 100 ETH
  const wallet = createWalletClient({ account, ...localClientOptions(stack.rpc_url) }).extend(publicActions);
  return {
    wallet,
    /** Submits the authorization; `over`: a pending transaction to outbid, so this one is mined first. */
    submit: async (payment: PaymentPayload, over?: `0x${string}`) => {
      const { authorization: a, signature } = authorizationOf(payment);
      let fees = {};
      if (over) {
        const pending = (await rpc("eth_getTransactionByHash", [over])) as {
          gasPrice: string;
          maxFeePerGas?: string;
          maxPriorityFeePerGas?: string;
        };
        const tip = BigInt(pending.maxPriorityFeePerGas ?? pending.gasPrice) + 10n ** 10n;
        fees = {
          maxPriorityFeePerGas: tip,
          maxFeePerGas: BigInt(pending.maxFeePerGas ?? pending.gasPrice) + tip,
        };
      }
      return wallet.writeContract({
        address: USDC_DOMAIN.verifyingContract,
        abi: parseAbi([
          "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
        ]),
        functionName: "transferWithAuthorization",
        args: [
          a.from,
          a.to,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce,
          signature,
        ],
        gas: 200_000n, // no estimate: with automine off it would run against the last block
        ...fees,
      });
    },
  };
}

/** The pending transaction (our facilitator's settlement) that carries this authorization's nonce. */
async function pendingWithNonce(nonce: string): Promise<`0x${string}` | undefined> {
  const pool = (await rpc("txpool_content")) as {
    pending: Record<string, Record<string, { hash: `0x${string}`; input: string }>>;
  };
  for (const byNonce of Object.values(pool.pending))
    for (const tx of Object.values(byNonce))
      if (tx.input.includes(nonce.slice(2).toLowerCase())) return tx.hash;
  return undefined;
}

// Waited for: anvil answers a send before its block is written (scripts/lib/chain.mjs LOCAL_POLLING_MS).
const receiptStatus = async (hash: `0x${string}`) => (await chain.waitForTransactionReceipt({ hash })).status;

/** USDC Transfer logs from `from` to payTo since block `fromBlock`: what the buyer really paid us. */
async function transfersToPayTo(from: string, fromBlock: bigint) {
  const logs = await chain.getLogs({
    address: USDC_DOMAIN.verifyingContract,
    event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"),
    args: { from: from as `0x${string}`, to: stack.pay_to as `0x${string}` },
    fromBlock,
  });
  return logs.map((l) => ({ tx: l.transactionHash, value: l.args.value }));
}

/** Every transfer to payTo is exactly one ledger row, under the same transaction and amount. */
async function expectLedgerMatchesChain(buyer: string, fromBlock: bigint) {
  const transfers = await transfersToPayTo(buyer, fromBlock);
  const { payments } = await view();
  for (const t of transfers) {
    const rows = payments.filter((p) => p.tx_hash === t.tx);
    expect(rows, `ledger rows for transfer ${t.tx}`).toHaveLength(1);
    expect(BigInt(rows[0]?.amount_atomic ?? -1)).toBe(t.value);
  }
  return transfers;
}

describe("a third party submits the buyer's authorization on chain first", () => {
  afterAll(async () => {
    await rpc("evm_setAutomine", [true]);
  });

  it("front-run between our verify and our settle, our transaction reverting on the spent nonce (the existing revert path): 502, the claim kept, the cron records the landed transfer once and refunds it; a retry with the same payment id moves nothing more", async () => {
    // Coverage of the revert path the Worker already took before simulation_failed left
    // REFUSED_BEFORE_SENDING: the stack's facilitator does not simulate at settle, so it sends, and
    // ours reverts with its hash (a failure naming a transaction was unconfirmed already). The
    // Worker-level proof of that change is test/payments/facilitator-answers.test.ts's
    // simulation_failed row; the next test shows which facilitator answers give it.
    const buyer = stack.buyers[9] as { address: string; privateKey: `0x${string}` };
    const startBlock = (await chain.getBlockNumber()) + 1n;
    const buyer0 = await balance(buyer.address);
    const payTo0 = await balance(stack.pay_to);
    const paymentId = generatePaymentId();
    const payment = await offerSigned(9, { paymentId });
    const { nonce } = authorizationOf(payment).authorization;

    await rpc("evm_setAutomine", [false]);
    const answer = paidCall(payment, "front-run me");
    // Our facilitator verified and broadcast: its settlement waits in the mempool.
    const ours = await until("our settlement in the mempool", () => pendingWithNonce(nonce));
    const theirs = await (await thirdParty()).submit(payment, ours);
    await rpc("evm_mine");
    await rpc("evm_setAutomine", [true]);
    expect(await receiptStatus(theirs), "the third party's copy").toBe("success");
    expect(await receiptStatus(ours), "our facilitator's settlement").toBe("reverted");
    // The money moved once, in the third party's transaction.
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
    expect((await balance(stack.pay_to)) - payTo0).toBe(PRICE);

    // The buyer is not told "not charged": the result is withheld, the claim kept for reconciliation.
    const res = await answer;
    const text = await res.text();
    expect(res.status, text).toBe(502);
    const body = JSON.parse(text) as {
      reason: string;
      transaction: string;
      request_id: string;
      detail: string;
    };
    expect(body).toMatchObject({ reason: "settlement_unconfirmed", transaction: ours });
    expect(body.detail).toMatch(/reconciliation records it .* and refunds it/);
    expect(body.detail).toMatch(/if it never does, nothing is charged/);
    // Its PAYMENT-RESPONSE, if any, is the facilitator's failure: never a success to take the result as paid.
    const settleAnswer = res.headers.get("payment-response");
    if (settleAnswer) expect(decodePaymentResponseHeader(settleAnswer)).toMatchObject({ success: false });
    const { request_id } = body;
    expect((await view()).unconfirmed).toContainEqual(
      expect.objectContaining({ request_id, status: "failed" }),
    );

    // (c) The buyer retries with the same payment id and the same authorization: nothing more moves.
    // The facilitator's /verify refuses the spent authorization before anything is claimed (its
    // reason here is the simulation's, as the local chain has no Multicall3 for the diagnosis that
    // names the spent nonce), and the answer is no stored paid answer and no new charge.
    const retry = await paidCall(payment, "front-run me");
    const retryText = await retry.text();
    expect(retry.status, retryText).toBe(402);
    expect(retry.headers.get("x-idempotent-replay")).toBeNull();
    expect(JSON.parse(retryText)).toMatchObject({
      reason: expect.stringMatching(/^invalid_exact_evm_(nonce_already_used|transaction_simulation_failed)$/),
    });
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
    // Then as the 502 told them: a new authorization under the same payment id. It is a new
    // purchase, paid and answered; the first transfer is the one refunded below.
    const paid = await fetchPayingWithId(privateKeyToAccount(buyer.privateKey), paymentId)(SHA256, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "front-run me" }),
    });
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(await paid.json()).toHaveProperty("hex");
    const paidTx = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "").transaction;
    expect(buyer0 - (await balance(buyer.address))).toBe(2n * PRICE);

    // The cron reads the chain: the first authorization was used by the third party's transaction,
    // which paid payTo the price. Recorded under the 502's request id, its withheld result refunded.
    await fireCron();
    const row = await until("the ledger row", async () =>
      (await view()).payments.find((p) => p.request_id === request_id),
    );
    expect(row).toMatchObject({ tx_hash: theirs, amount_atomic: Number(PRICE) });
    expect((await view()).reconciliations.find((r) => r.request_id === request_id)).toMatchObject({
      outcome: "settled",
      tx_hash: theirs,
    });
    const refund = await until("the refund", async () =>
      (await refunds()).find((r) => r.request_id === request_id && r.status === "refunded"),
    );
    expect(refund).toMatchObject({ amount_micro: Number(PRICE) });
    expect(refund.payer.toLowerCase()).toBe(buyer.address.toLowerCase());
    // Charged once in all: for the answer it got.
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);

    // Once only: a second run records and refunds nothing more.
    const again = await fetch(`${stack.base_url}/api/admin/reconcile`, { method: "POST", headers: admin });
    expect(again.status).toBe(200);
    expect((await view()).payments.filter((p) => p.request_id === request_id)).toHaveLength(1);
    expect((await refunds()).filter((r) => r.request_id === request_id)).toHaveLength(1);
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
    const transfers = await expectLedgerMatchesChain(buyer.address, startBlock);
    expect(transfers.map((t) => t.tx).sort()).toEqual([theirs, paidTx].sort());
  }, 60_000);

  it.each([
    [
      "without Multicall3 (the local chain as it is)",
      false,
      "invalid_exact_evm_transaction_simulation_failed",
    ],
    ["with Multicall3 (as on Base)", true, "invalid_exact_evm_nonce_already_used"],
  ])(
    "spent between our verify and our settle, before anything of ours is sent, %s: @x402/evm's facilitator with simulateInSettle refuses with no transaction, which is not taken for 'nothing moved'",
    async (_chain, withMulticall3, reason) => {
      // The stack's facilitator settles without simulating; a hosted one may simulate (simulateInSettle).
      // Its answer, once the authorization it verified was spent by someone else before its settle:
      // its diagnosis reads the nonce through Multicall3, and names the spent nonce only if it can.
      const buyer = stack.buyers[9] as { address: string; privateKey: `0x${string}` };
      const payment = await offerSigned(9);
      const third = await thirdParty();
      const signer = toFacilitatorEvmSigner({ ...third.wallet, address: third.wallet.account.address });
      const facilitator = registerExactEvmScheme(new x402Facilitator(), {
        signer,
        networks: NETWORK,
        simulateInSettle: true,
      });
      const buyer0 = await balance(buyer.address);
      expect(await facilitator.verify(payment, payment.accepted)).toMatchObject({ isValid: true });
      expect(await receiptStatus(await third.submit(payment))).toBe("success");
      if (withMulticall3) await rpc("anvil_setCode", [MULTICALL3, MULTICALL3_RUNTIME]);
      try {
        const answer = await facilitator.settle(payment, payment.accepted);
        expect(answer).toMatchObject({ success: false, transaction: "", errorReason: reason });
        expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
        // The money moved: the Worker keeps the claim and answers 502 (test/payments/facilitator-answers.test.ts).
        expect(settlementOutcome(answer)).toBe("unconfirmed");
      } finally {
        // The other e2e files run on this chain as it is (fileParallelism: false: none runs meanwhile).
        if (withMulticall3) await rpc("anvil_setCode", [MULTICALL3, "0x"]);
      }
    },
  );

  it("submitted on chain before the call reaches us: refused with nothing run, claimed or recorded; the transfer is the payer's own (docs/OPERATIONS.md)", async () => {
    const buyer = stack.buyers[8] as { address: string; privateKey: `0x${string}` };
    const startBlock = (await chain.getBlockNumber()) + 1n;
    const buyer0 = await balance(buyer.address);
    const payment = await offerSigned(8, { paymentId: generatePaymentId() });
    const theirs = await (await thirdParty()).submit(payment);
    expect(await receiptStatus(theirs)).toBe("success");
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
    const { nonce } = authorizationOf(payment).authorization;
    const refundsOf = async () =>
      (await refunds()).filter((r) => r.payer.toLowerCase() === buyer.address.toLowerCase());
    const refunds0 = await refundsOf();

    const res = await paidCall(payment, "paid already");
    const body = (await res.json()) as Record<string, unknown>;
    // The facilitator's /verify names the spent authorization: the call is not run, nothing is
    // claimed, and the authorization cannot pay for anything again.
    expect(res.status).toBe(402);
    expect(body.reason).toMatch(/^invalid_exact_evm_(nonce_already_used|transaction_simulation_failed)$/);
    expect(body).not.toHaveProperty("hex");
    await fireCron();
    const after = await view();
    expect(after.unconfirmed.filter((u) => u.nonce.endsWith(nonce.toLowerCase()))).toEqual([]);
    expect(after.payments.map((p) => p.tx_hash)).not.toContain(theirs);
    expect(await refundsOf()).toEqual(refunds0);
    // One transfer, the third party's, and no second one of ours.
    expect(await transfersToPayTo(buyer.address, startBlock)).toEqual([{ tx: theirs, value: PRICE }]);
    expect(buyer0 - (await balance(buyer.address))).toBe(PRICE);
  });
});
