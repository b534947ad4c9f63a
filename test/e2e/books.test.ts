import { createHash } from "node:crypto";
import { createPublicClient, createWalletClient, erc20Abi, parseAbiItem } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
// @ts-expect-error plain JS helpers shared with the scripts
import { payingFetch } from "../../scripts/lib/buyer.mjs";
// @ts-expect-error plain JS helpers shared with the scripts
import { localClientOptions, USDC_ADDRESS } from "../../scripts/lib/chain.mjs";
// @ts-expect-error plain JS helpers shared with the scripts
import { connectMcp, payToolCall } from "../../scripts/lib/mcp-buyer.mjs";
import { buyCardKey } from "./card-key";
import {
  admin,
  fireCron,
  offerSigned,
  refunds as refundRows,
  rpc,
  unconfirmedCall,
  until,
} from "./reconcile-helpers";
import { d1, type Row, stripeEmulator } from "./stack-tools";

// Do the books balance (docs/OPERATIONS.md "Do the books balance"): a mixed workload on the real
// local chain, then every identity between the chain, the rows and the admin views, over what the
// workload added (other files run on the same stack before it).
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  stack_dir: string;
  stripe_api_base: string;
  operating_wallet: string;
  partner_wallet: string;
  partner_urls: Record<string, string>;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
// Buyers 2 and 3. Other files pay from them too (x402.test.ts from all ten), so nothing below
// reads a buyer's balance: only the rows and transfers this test's requests and blocks added.
const buyer = (i: 2 | 3) => stack.buyers[i] as { address: string; privateKey: `0x${string}` };
// anvil's account #2, the stack's PAY_TO: a payout batch is a transfer out of it.
const PAY_TO_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const chain = createPublicClient(localClientOptions(stack.rpc_url));
const transfer = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

type Report = {
  totals: { count: number; amount_atomic: number };
  refunds: { amount_atomic: number; refunded_atomic: number };
};
const sql = (...statements: string[]) => d1(stack.stack_dir, ...statements);
const n = (v: unknown) => Number(v ?? 0);
const sum = (rows: Row[], col: string) => rows.reduce((s, r) => s + n(r[col]), 0);
const getJson = async <T>(p: string) =>
  (await (await fetch(`${stack.base_url}${p}`, { headers: admin })).json()) as T;
const setMode = (partner: string, mode: string) =>
  fetch(`${stack.partner_urls[partner]}/_control`, { method: "POST", body: JSON.stringify({ mode }) });
const emulator = (method: "GET" | "POST", p: string, form: Record<string, string> = {}) =>
  stripeEmulator(stack.stripe_api_base, method, p, form);

/** USDC Transfer logs from or to `who` in blocks (from, to]. */
async function transfers(fromBlock: bigint, toBlock: bigint, side: "from" | "to", who: string) {
  const logs = await chain.getLogs({
    address: USDC_ADDRESS,
    event: transfer,
    args: { [side]: who },
    fromBlock: fromBlock + 1n,
    toBlock,
  });
  return logs.map((l) => ({ tx: l.transactionHash.toLowerCase(), value: Number(l.args.value) }));
}

// The withheld call, settling in the background while the card part runs.
let withholding: Promise<{ transaction: string; request_id: string }> | undefined;
afterAll(async () => {
  await rpc("evm_setAutomine", [true]);
  // Had the test failed before awaiting it, its settle ends here, not in the next file.
  await withholding?.catch(() => undefined);
  await setMode("textkit", "ok");
});

describe("the books balance after a mixed workload", () => {
  it("chain, x402 ledger, refunds, partner payouts, card credits and the admin views agree", async () => {
    const [marks] = sql(
      `SELECT (SELECT coalesce(max(id), 0) FROM payments) AS payment, (SELECT coalesce(max(id), 0) FROM refunds) AS refund,
        (SELECT coalesce(max(id), 0) FROM upstream_payments) AS upstream, (SELECT coalesce(max(id), 0) FROM payout_ledger) AS payout,
        (SELECT coalesce(max(id), 0) FROM payout_batches) AS batch`,
    );
    const mark = (marks?.[0] ?? {}) as Record<string, number>;
    const started = Date.now();
    const block0 = await chain.getBlockNumber();
    const summary0 = await getJson<{ partners: Row[] }>("/api/admin/payouts");

    // x402 v2, v1 and MCP calls, each settled.
    const v2 = await payingFetch(buyer(2).privateKey)(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "books v2" }),
    });
    expect(v2.status).toBe(200);
    const v1 = await wrapFetchWithPayment(fetch, await createSigner("base", buyer(3).privateKey))(
      `${stack.base_url}/api/skills/sha256`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "v1" }),
      },
    );
    expect(v1.status).toBe(200);
    const mcp = await connectMcp(stack.base_url);
    const tool = await payToolCall(mcp, buyer(2).privateKey, "sha256", { text: "books mcp" });
    await mcp.close();
    expect(tool.result.isError).toBeFalsy();
    // Partners: an x402-priced one paid upstream by the operating wallet, a plain one owed its
    // share (twice), a failing one that charges nobody.
    const price = await payingFetch(buyer(3).privateKey)(
      `${stack.base_url}/api/partners/pricefeed/try/price_coin?coin=eth`,
    );
    expect(price.status).toBe(200);
    const tried = [price];
    for (const text of ["one", "two"]) {
      const plain = await payingFetch(buyer(3).privateKey)(
        `${stack.base_url}/api/partners/textkit/try/rag-chunker`,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text, max_tokens: 5 }),
        },
      );
      expect(plain.status).toBe(200);
      tried.push(plain);
    }
    await setMode("textkit", "fail");
    const failing = await payingFetch(buyer(3).privateKey)(
      `${stack.base_url}/api/partners/textkit/try/base64`,
      {
        method: "POST",
      },
    );
    expect(failing.status).toBe(502);
    tried.push(failing);
    await setMode("textkit", "ok");
    // A paid call whose result was withheld (settlement unconfirmed) and that landed: refunded
    // from the operating wallet once the Cron finds it. The facilitator gives up on it only after
    // its receipt timeout, so the card workload (no chain) runs meanwhile.
    withholding = (async () => {
      const w = await unconfirmedCall(await offerSigned(2));
      await rpc("evm_mine");
      await rpc("evm_setAutomine", [true]);
      return w;
    })();
    // Handled now, awaited below (or in afterAll): a failure meanwhile is no unhandled rejection.
    withholding.catch(() => undefined);

    // Cards: a pack bought with its first call, revealed, two calls spent, one given back (a call
    // that fails while running: a bad body spends nothing), then a partial Stripe refund.
    const card = await buyCardKey(stack.base_url, "sha256", { text: "first call" });
    const auth = { authorization: `Bearer ${card.key}`, "content-type": "application/json" };
    const statuses: number[] = [];
    for (const body of ['{"text":"a"}', '{"text":"b"}', '{"text":"é","encoding":"ascii"}']) {
      statuses.push(
        (await fetch(`${stack.base_url}/api/skills/sha256`, { method: "POST", headers: auth, body })).status,
      );
    }
    // Two spent, the failed call's given back: anything else (a 429, a 503) fails here, not as a timeout.
    expect(statuses).toEqual([200, 200, 422]);
    const keyHash = createHash("sha256").update(card.key).digest("hex");
    // The first call may still be running when the Reveal showed the key: read the session once it
    // has its answer. sha256 of a text always succeeds, so it took a credit (the card identity below).
    const session = await until("the first call's answer", async () => {
      const [[row]] = sql(
        `SELECT s.id, s.payment_intent, s.amount_cents, s.payload_result IS NOT NULL AS answered, (json_extract(s.payload_result, '$.status') = 200 AND json_extract(s.payload_result, '$.free') IS NULL) AS first_call FROM api_keys k JOIN checkout_sessions s ON s.id = k.session_id WHERE k.key_hash = '${keyHash}'`,
      ) as [Row[]];
      return n(row?.answered) === 1 ? row : undefined;
    });
    expect(n(session.first_call)).toBe(1);
    await emulator("POST", "/v1/refunds", { payment_intent: String(session?.payment_intent), amount: "1" });
    const credits = async () =>
      (await (await fetch(`${stack.base_url}/api/credits`, { headers: auth })).json()) as {
        calls_left: number;
        status: string;
      };
    // The rule: a refund revokes ceil(calls_total x refunded / charged). Left: the pack less the first
    // call if it took a credit, two spends (the failed call's given back) and those revoked.
    const revoked = Math.ceil((card.calls * 1) / n(session?.amount_cents));
    const left = card.calls - n(session?.first_call) - 2 - revoked;
    await until("the refund's calls taken back", async () =>
      (await credits()).calls_left === left ? true : undefined,
    );
    const withheld = await withholding;
    // The Cron: reconciliation records the withheld call's payment and sends its refund.
    await until(
      "the withheld call's refund sent",
      async () => {
        await fireCron();
        return (await refundRows()).find(
          (r) => r.request_id === withheld.request_id && r.status === "refunded",
        );
      },
      40_000,
    );
    // A payout batch: what textkit is owed, read with its through_id, transferred from PAY_TO.
    const owed = (await getJson<{ partners: Row[] }>("/api/admin/payouts")).partners.find(
      (p) => p.partner_id === "textkit",
    ) as Row;
    const wallet = createWalletClient({
      account: privateKeyToAccount(PAY_TO_KEY),
      ...localClientOptions(stack.rpc_url),
    });
    const payoutTx = await wallet.writeContract({
      address: USDC_ADDRESS,
      abi: erc20Abi,
      functionName: "transfer",
      args: [stack.partner_wallet as `0x${string}`, BigInt(n(owed.owed_micro))],
    });
    await chain.waitForTransactionReceipt({ hash: payoutTx });
    const settled = await fetch(`${stack.base_url}/api/admin/payouts/textkit/settle`, {
      method: "POST",
      headers: { ...admin, "content-type": "application/json" },
      body: JSON.stringify({
        tx_hash: payoutTx,
        through_id: owed.through_id,
        amount_usd: n(owed.owed_micro) / 1e6,
      }),
    });
    expect(settled.status).toBe(200);
    const block1 = await chain.getBlockNumber();
    // The rows the workload added.
    const [recorded, refunds, upstream, payoutRows, batches, key, spends, walletRefunds] = sql(
      `SELECT request_id, amount_atomic, pay_to, tx_hash, resource FROM payments WHERE id > ${mark.payment}`,
      `SELECT request_id, amount_micro, withheld_micro, status, tx_hash FROM refunds WHERE id > ${mark.refund}`,
      `SELECT request_id, partner_id, amount_micro, tx_hash, chain_status FROM upstream_payments WHERE id > ${mark.upstream}`,
      `SELECT partner_id, partner_share_micro, marketplace_fee_micro, paid_upstream, batch_id, request_id FROM payout_ledger WHERE id > ${mark.payout}`,
      `SELECT partner_id, amount_micro, tx_hash FROM payout_batches WHERE id > ${mark.batch}`,
      `SELECT calls_total, calls_left, calls_revoked, revoke_debt, dispute_status FROM api_keys WHERE key_hash = '${keyHash}'`,
      `SELECT count(*) AS spent, sum(given_back) AS given_back FROM card_spends WHERE key_hash = '${keyHash}'`,
      // Sent by the operating wallet (a hand refund is the maintainer's: resolved_at set), this
      // test's or an older owed one this test's Cron sent.
      `SELECT id, request_id, amount_micro, tx_hash FROM refunds WHERE status = 'refunded' AND resolved_at IS NULL
         AND tx_hash IS NOT NULL AND (id > ${mark.refund} OR updated_at >= ${started})`,
    ) as Row[][];

    // A claim left 'failed' before the workload (by another file) that this Cron found landed gets
    // its row now, for a transfer mined before block0: the workload's rows are those mined after.
    const minedIn = await Promise.all(
      recorded.map(
        async (r) => (await chain.getTransactionReceipt({ hash: r.tx_hash as `0x${string}` })).blockNumber,
      ),
    );
    const payments = recorded.filter((_, i) => (minedIn[i] as bigint) > block0);
    const tries = new Set(tried.map((r) => r.headers.get("x-request-id")));
    const payouts = payoutRows.filter((p) => tries.has(String(p.request_id)));

    // USDC into PAY_TO: exactly the settled x402 payments recorded, transaction by transaction.
    const intoPayTo = await transfers(block0, block1, "to", stack.pay_to);
    expect(payments.map((p) => String(p.tx_hash).toLowerCase()).sort()).toEqual(
      intoPayTo.map((t) => t.tx).sort(),
    );
    expect(sum(payments, "amount_atomic")).toBe(intoPayTo.reduce((s, t) => s + t.value, 0));
    // v2 + v1 + MCP + withheld (3000 each) + pricefeed 60000 + textkit 2 x 36000.
    expect(sum(payments, "amount_atomic")).toBe(4 * 3000 + 60_000 + 2 * 36_000);

    // USDC out of the operating wallet: refunds sent and partners paid upstream, nothing else; and
    // each of those the workload recorded is on chain for its amount.
    const fromOperating = await transfers(block0, block1, "from", stack.operating_wallet);
    const explains = new Map(
      [...walletRefunds, ...upstream].map((r) => [String(r.tx_hash).toLowerCase(), n(r.amount_micro)]),
    );
    expect(fromOperating.map((t) => [t.tx, t.value])).toEqual(
      fromOperating.map((t) => [t.tx, explains.get(t.tx)]),
    );
    const onChain = new Map(fromOperating.map((t) => [t.tx, t.value]));
    const recordedSent = [
      ...walletRefunds.filter((r) => n(r.id) > mark.refund),
      ...upstream.filter((u) => u.chain_status !== "not_landed"),
    ];
    expect(recordedSent.map((r) => [r.request_id, onChain.get(String(r.tx_hash).toLowerCase())])).toEqual(
      recordedSent.map((r) => [r.request_id, n(r.amount_micro)]),
    );
    expect(walletRefunds.map((r) => r.request_id)).toContain(withheld.request_id);

    // Refunds: the withheld call gets back what it paid less a served partner's share (sha256: none),
    // and no request's refunds (its own, `:withheld`, rests) ever exceed what it paid.
    const paidWithheld = payments.find((p) => p.request_id === withheld.request_id) as Row;
    const refundWithheld = refunds.find((r) => r.request_id === withheld.request_id) as Row;
    expect(n(refundWithheld.withheld_micro)).toBe(0);
    expect(n(refundWithheld.amount_micro)).toBe(
      n(paidWithheld.amount_atomic) - n(refundWithheld.withheld_micro),
    );
    const refunded = [...new Set(refunds.map((r) => String(r.request_id).split(":")[0]))];
    const ids = [...new Set([...refunded, ...payments.map((p) => String(p.request_id))])];
    const [perPayment] = sql(
      `SELECT p.request_id, p.amount_atomic, coalesce(sum(r.amount_micro), 0) AS recorded,
         coalesce(sum(CASE WHEN r.status = 'refunded' THEN r.amount_micro END), 0) AS sent
       FROM payments p LEFT JOIN refunds r ON r.request_id = p.request_id
         OR (r.request_id >= p.request_id || ':' AND r.request_id < p.request_id || ';')
       WHERE p.request_id IN (${ids.map((id) => `'${id}'`).join(",")}) GROUP BY p.request_id`,
    ) as Row[][];
    const byRequest = new Map((perPayment ?? []).map((r) => [String(r.request_id), r]));
    for (const id of refunded) {
      const row = byRequest.get(id);
      expect(row, `refund without a payment: ${id}`).toBeDefined();
      expect(n(row?.recorded), id).toBeLessThanOrEqual(n(row?.amount_atomic));
    }

    // USDC out of PAY_TO: the payout batch's transfer.
    const fromPayTo = await transfers(block0, block1, "from", stack.pay_to);
    expect(fromPayTo.map((t) => t.tx)).toEqual(batches.map((b) => String(b.tx_hash).toLowerCase()));
    expect(fromPayTo.reduce((s, t) => s + t.value, 0)).toBe(sum(batches, "amount_micro"));

    // Partners: the 1x share of each try sold (not the 3x price), the rest our fee; the one paid
    // upstream is never owed; the failing try is in no row.
    expect(
      payouts
        .map((p) => [p.partner_id, n(p.partner_share_micro), n(p.marketplace_fee_micro), n(p.paid_upstream)])
        .sort(),
    ).toEqual([
      ["pricefeed", 20_000, 40_000, 1],
      ["textkit", 12_000, 24_000, 0],
      ["textkit", 12_000, 24_000, 0],
    ]);
    expect(upstream.map((u) => [u.partner_id, n(u.amount_micro)])).toEqual([["pricefeed", 20_000]]);
    const summary1 = await getJson<{ partners: Row[]; total_owed_usd: number }>("/api/admin/payouts");
    const earned = (s: { partners: Row[] }, id: string) =>
      n(s.partners.find((p) => p.partner_id === id)?.earned_micro);
    expect(earned(summary1, "textkit") - earned(summary0, "textkit")).toBe(24_000);
    const owedOf = (s: { partners: Row[] }, id: string) =>
      n(s.partners.find((p) => p.partner_id === id)?.owed_micro);
    expect(owedOf(summary1, "textkit")).toBe(0);
    // Paid upstream, so never owed: pricefeed's owed is what it was (no batch pays it).
    expect(owedOf(summary1, "pricefeed")).toBe(owedOf(summary0, "pricefeed"));
    expect(sum(batches, "amount_micro")).toBe(n(owed.owed_micro));

    // Cards: granted = paid / price; left + the first call + spent (not given back) + revoked -
    // debt = granted.
    const k = key?.[0] as Row;
    expect(n(k.calls_total)).toBe(card.calls);
    const s = spends?.[0] as Row;
    expect(n(session?.first_call)).toBe(1);
    expect(
      n(k.calls_left) +
        n(session?.first_call) +
        n(s.spent) -
        n(s.given_back) +
        n(k.calls_revoked) -
        n(k.revoke_debt),
    ).toBe(n(k.calls_total));
    expect(n(k.calls_revoked)).toBe(revoked);
    // Stripe charged the pack's price: calls x the skill's price, in cents.
    const charged = await emulator("GET", `/v1/checkout/sessions/${session?.id}`);
    expect(charged.amount_total).toBe(n(session?.amount_cents));
    expect(card.calls * 3000).toBe(n(charged.amount_total) * 10_000);
    expect([n(s.spent), n(s.given_back)]).toEqual([3, 1]);

    // The admin views add up to the rows: the x402 ledger's totals and its refunds, the payout CSV.
    const report = await getJson<Report>("/api/admin/payments?limit=1");
    const [[all]] = sql("SELECT count(*) AS count, sum(amount_atomic) AS amount FROM payments") as Row[][];
    expect(report.totals).toMatchObject({ count: n(all?.count), amount_atomic: n(all?.amount) });
    // Each payment's own view: its refunds, recorded and sent, as the rows are.
    for (const p of payments) {
      const one = await getJson<Report>(`/api/admin/payments?limit=1&request_id=${p.request_id}`);
      const row = byRequest.get(String(p.request_id));
      expect([p.request_id, one.refunds.amount_atomic, one.refunds.refunded_atomic]).toEqual([
        p.request_id,
        n(row?.recorded),
        n(row?.sent),
      ]);
    }
    const csv = await (
      await fetch(`${stack.base_url}/api/admin/payouts?format=csv`, { headers: admin })
    ).text();
    const [header, ...lines] = csv.trim().split("\n");
    const columns = header?.split(",") ?? [];
    const ours = new Set(payouts.map((p) => p.request_id));
    const csvRows = lines
      .map((l) => Object.fromEntries(l.split(",").map((v, i) => [columns[i], v])))
      .filter((r) => ours.has(r.request_id ?? ""));
    expect(csvRows.length).toBe(payouts.length);
    const micros = (col: string) => csvRows.reduce((t, r) => t + Math.round(Number(r[col]) * 1e6), 0);
    expect(micros("partner_share_usd")).toBe(sum(payouts, "partner_share_micro"));
    expect(micros("marketplace_fee_usd")).toBe(sum(payouts, "marketplace_fee_micro"));
    // A dispute lost takes back every credit left, for good.
    const dispute = await emulator("POST", "/_emulator/disputes", {
      payment_intent: String(session?.payment_intent),
    });
    await until("frozen", async () => ((await credits()).status === "frozen" ? true : undefined));
    await emulator("POST", `/_emulator/disputes/${dispute.id}/close`, { status: "lost" });
    expect(
      await until("revoked", async () => ((b) => (b.status === "revoked" ? b : undefined))(await credits())),
    ).toMatchObject({
      calls_left: 0,
    });
  }, 150_000);
});
