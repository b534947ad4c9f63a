import { createWalletClient, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { localClientOptions, USDC_DOMAIN, usdcBalance } from "../../scripts/lib/chain.mjs";
import {
  admin,
  fireCron,
  offerSigned,
  refunds,
  rpc,
  unconfirmedCall,
  until,
  view,
} from "./reconcile-helpers";

// Reconciliation on the real local chain. An unconfirmed outcome is produced through the app
// itself: with anvil's automine off, the facilitator's transaction waits in the mempool, the
// facilitator gives up (after FACILITATOR_RECEIPT_WAIT_MS: 10 s here, test/e2e/global-setup.ts)
// with `settlement_pending`, and the Worker answers 502 settlement_unconfirmed and keeps the
// claim 'failed'. Then the transaction is either mined (it landed), dropped from the mempool (it
// never will), or beaten by the payer's own cancelAuthorization (it reverts), and the cron
// decides from the chain.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};

describe("reconciliation against the local chain", () => {
  afterAll(async () => {
    await rpc("evm_setAutomine", [true]);
  });

  it("an unconfirmed payment that expired without landing is released by the cron", async () => {
    const buyer = stack.buyers[6]?.address as string;
    const before = await usdcBalance(stack.rpc_url, buyer);
    // Valid for 40 s: long enough for the facilitator to accept it, over before the cron runs.
    const payment = await offerSigned(6, { validFor: 40 });
    const { transaction, request_id } = await unconfirmedCall(payment);
    expect((await view()).unconfirmed).toContainEqual(
      expect.objectContaining({ request_id, status: "failed" }),
    );
    await rpc("anvil_dropTransaction", [transaction]);
    await rpc("evm_setAutomine", [true]);
    const validBefore = Number(
      (payment.payload as { authorization: { validBefore: string } }).authorization.validBefore,
    );
    // The chain's clock passes valid_before. The cron decides expiry by the latest block's time
    // (reconcile-decide.ts), so the chain is moved there instead of waiting out the wall clock;
    // a 'failed' claim is a candidate at once, whatever our clock says (reconcile-store.ts).
    const head = (await rpc("eth_getBlockByNumber", ["latest", false])) as { timestamp: string };
    expect(Number(head.timestamp), "still valid by the chain before it moves").toBeLessThan(validBefore);
    // (A stack started with the facilitator's default 30 s wait is past it already.)
    if (Date.now() / 1000 < validBefore + 1) await rpc("evm_setNextBlockTimestamp", [validBefore + 1]);
    await rpc("evm_mine");
    await fireCron();
    const decided = await until("the release", async () =>
      (await view()).reconciliations.find((r) => r.request_id === request_id),
    );
    expect(decided).toMatchObject({ outcome: "released", tx_hash: null });
    expect(decided.evidence).toMatch(/unused, and the chain passed valid_before/);
    const after = await view();
    expect(after.unconfirmed.map((u) => u.request_id)).not.toContain(request_id);
    expect(after.payments.map((p) => p.request_id)).not.toContain(request_id);
    expect(await usdcBalance(stack.rpc_url, buyer)).toBe(before);
  }, 150_000);

  it("an unconfirmed payment that did land becomes a reconciled ledger row with its transaction, and its withheld result is refunded", async () => {
    const payTo0 = await usdcBalance(stack.rpc_url, stack.pay_to);
    const buyer = stack.buyers[7]?.address as string;
    const buyer0 = await usdcBalance(stack.rpc_url, buyer);
    const { transaction, request_id } = await unconfirmedCall(await offerSigned(7));
    await rpc("evm_mine"); // the pending settlement lands
    await rpc("evm_setAutomine", [true]);
    expect((await usdcBalance(stack.rpc_url, stack.pay_to)) - payTo0).toBe(3000n);
    expect(buyer0 - (await usdcBalance(stack.rpc_url, buyer))).toBe(3000n);
    expect((await view()).payments.map((p) => p.request_id)).not.toContain(request_id);
    await fireCron();
    const row = await until("the ledger row", async () =>
      (await view()).payments.find((p) => p.request_id === request_id),
    );
    expect(row).toMatchObject({ tx_hash: transaction, amount_atomic: 3000 });
    expect(row.reconciled_at).toBeGreaterThan(0);
    const after = await view();
    expect(after.unconfirmed.map((u) => u.request_id)).not.toContain(request_id);
    expect(after.reconciliations.find((r) => r.request_id === request_id)).toMatchObject({
      outcome: "settled",
      tx_hash: transaction,
    });
    // The caller got 502 and no result: the operating wallet paid the price back, on chain.
    const refund = await until("the refund", async () =>
      (await refunds()).find((r) => r.request_id === request_id && r.status === "refunded"),
    );
    expect(refund).toMatchObject({ status: "refunded", amount_micro: 3000, withheld_micro: 0 });
    expect(refund.payer.toLowerCase()).toBe(buyer.toLowerCase());
    expect(refund.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdcBalance(stack.rpc_url, buyer)).toBe(buyer0);
    // Running it again (the admin trigger) changes nothing: one ledger row, one refund.
    const again = await fetch(`${stack.base_url}/api/admin/reconcile`, { method: "POST", headers: admin });
    expect(again.status).toBe(200);
    expect((await view()).payments.filter((p) => p.request_id === request_id)).toHaveLength(1);
    expect((await refunds()).filter((r) => r.request_id === request_id)).toHaveLength(1);
    expect(await usdcBalance(stack.rpc_url, buyer)).toBe(buyer0);
  }, 150_000);

  it("an unconfirmed payment whose payer cancelled the authorization on chain is released by the cron, with the cancel as evidence", async () => {
    const b = stack.buyers[8] as { address: string; privateKey: `0x${string}` };
    const account = privateKeyToAccount(b.privateKey);
    const before = await usdcBalance(stack.rpc_url, b.address);
    const payment = await offerSigned(8);
    const { nonce } = (payment.payload as { authorization: { nonce: `0x${string}` } }).authorization;
    const { transaction, request_id } = await unconfirmedCall(payment);
    // While the settlement waits in the mempool, the payer cancels the authorization with USDC's
    // own cancelAuthorization (EIP-712 CancelAuthorization(authorizer, nonce)), paying a higher tip
    // so that it is mined first and the facilitator's transferWithAuthorization reverts.
    const signature = await account.signTypedData({
      domain: USDC_DOMAIN,
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: account.address, nonce },
    });
    const pending = (await rpc("eth_getTransactionByHash", [transaction])) as {
      gasPrice: string;
      maxFeePerGas?: string;
      maxPriorityFeePerGas?: string;
    };
    const gwei = 1_000_000_000n;
    const tip = BigInt(pending.maxPriorityFeePerGas ?? pending.gasPrice) + 10n * gwei;
    const wallet = createWalletClient({
      account,
      ...localClientOptions(stack.rpc_url),
    });
    const cancel = await wallet.writeContract({
      address: USDC_DOMAIN.verifyingContract,
      abi: parseAbi(["function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)"]),
      functionName: "cancelAuthorization",
      args: [account.address, nonce, signature],
      gas: 200_000n,
      maxPriorityFeePerGas: tip,
      maxFeePerGas: BigInt(pending.maxFeePerGas ?? pending.gasPrice) + tip,
    });
    await rpc("evm_mine");
    await rpc("evm_setAutomine", [true]);
    const receipt = async (hash: string) =>
      (await rpc("eth_getTransactionReceipt", [hash])) as { status: string; blockNumber: string } | null;
    expect((await receipt(cancel))?.status, "the cancel").toBe("0x1");
    expect((await receipt(transaction))?.status, "the facilitator's settlement").toBe("0x0");
    expect(await usdcBalance(stack.rpc_url, b.address)).toBe(before);
    expect((await view()).unconfirmed).toContainEqual(
      expect.objectContaining({ request_id, status: "failed" }),
    );

    // Its authorization is still valid by the clock: only the cancel decides it, on the next run.
    await fireCron();
    const decided = await until("the release", async () =>
      (await view()).reconciliations.find((r) => r.request_id === request_id),
    );
    expect(decided).toMatchObject({ outcome: "released", tx_hash: cancel });
    expect(decided.evidence).toMatch(new RegExp(`AuthorizationCanceled in tx ${cancel}`));
    const after = await view();
    expect(after.unconfirmed.map((u) => u.request_id)).not.toContain(request_id);
    expect(after.payments.map((p) => p.request_id)).not.toContain(request_id);
    expect((await refunds()).map((r) => r.request_id)).not.toContain(request_id);
    expect(await usdcBalance(stack.rpc_url, b.address)).toBe(before);
  }, 150_000);
});
