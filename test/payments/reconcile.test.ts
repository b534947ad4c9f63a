import {
  createExecutionContext,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import type { PaymentPayload } from "@x402/core/types";
import { keccak256, recoverTypedDataAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { redactSecrets } from "../../src/config";
import worker from "../../src/index";
import {
  cronFailure,
  emptySummary,
  logSummary,
  type ReconcileSummary,
  reconcile,
  summaryLevel,
} from "../../src/payments/reconcile";
import {
  AUTHORIZATION_CANCELED,
  AUTHORIZATION_USED,
  type ChainReader,
  type ChainView,
  type FoundUse,
  MAX_SEARCH_BLOCKS,
  rpcChainReader,
  searchRange,
} from "../../src/payments/reconcile-chain";
import { decide, type Terms } from "../../src/payments/reconcile-decide";
import {
  applyPayment,
  candidates,
  type NonceRow,
  RUNNING_LEFT_TO_REQUEST_MS,
} from "../../src/payments/reconcile-store";
import { resolveRefundByHand } from "../../src/payments/refund-by-hand";
import { refundCaller, refundNonce } from "../../src/payments/refunds";
import { transferWithAuthorization } from "../../src/payments/transfer-authorization";
import { CALLER_TX, payoutRows, stubNetwork, tryEnv } from "../partners/network";

const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const PAY_TO = env.PAY_TO;
const USDC = env.USDC_ADDRESS;
const now = () => Math.floor(Date.now() / 1000);

const terms = (over: Partial<Terms> = {}): Terms => ({
  payer: hex(20),
  payTo: PAY_TO,
  asset: USDC,
  amountAtomic: 3000n,
  nonce: hex(32),
  validBefore: now() + 300,
  ...over,
});
const view = (over: Partial<ChainView>): ChainView => ({
  used: false,
  found: undefined,
  headTime: now(),
  ...over,
});

describe("decide: what the chain says about one authorization", () => {
  it("used, with the promised Transfer in the same transaction: paid, with its tx hash", () => {
    const t = terms();
    const found: FoundUse = {
      txHash: hex(32),
      blockNumber: 7,
      transfer: { from: t.payer.toUpperCase().replace("0X", "0x"), to: PAY_TO.toLowerCase(), value: 3000n },
    };
    expect(decide(t, view({ used: true, found }))).toMatchObject({
      outcome: "paid",
      txHash: found.txHash,
      blockNumber: 7,
    });
  });

  it.each([
    ["another payee", { to: hex(20), value: 3000n }],
    ["another amount", { to: PAY_TO, value: 2999n }],
  ])("used for a transfer to %s: can never pay, released", (_n, tr) => {
    const t = terms();
    const d = decide(
      t,
      view({ used: true, found: { txHash: hex(32), blockNumber: 3, transfer: { from: t.payer, ...tr } } }),
    );
    expect(d.outcome).toBe("unpaid");
    expect(d.evidence).toMatch(/different transfer/);
  });

  it("cancelled (cancelAuthorization: AuthorizationCanceled, no Transfer): released, with the cancel as evidence", () => {
    const tx = hex(32);
    const d = decide(terms(), view({ used: true, found: { txHash: tx, blockNumber: 3, cancelled: true } }));
    expect(d).toMatchObject({ outcome: "unpaid", txHash: tx, blockNumber: 3, cancelled: true });
    expect(d.evidence).toMatch(new RegExp(`AuthorizationCanceled in tx ${tx}`));
  });

  it("an AuthorizationUsed with no Transfer from the payer after it (FiatToken never emits one): can never pay, not called a cancel", () => {
    const d = decide(
      terms(),
      view({ used: true, found: { txHash: hex(32), blockNumber: 3, transfer: undefined } }),
    );
    expect(d).toMatchObject({ outcome: "unpaid" });
    expect(d).not.toHaveProperty("cancelled");
    expect(d.evidence).toMatch(/no Transfer from the payer/);
  });

  it("used but its log not found yet: wait (never a ledger row without a transaction)", () => {
    const d = decide(terms(), view({ used: true, searched: { fromBlock: 10, toBlock: 20 } }));
    expect(d).toMatchObject({ outcome: "wait" });
    expect(d.evidence).toMatch(/blocks 10-20/);
  });

  it("unused and the chain passed valid_before: released; still valid: wait", () => {
    const t = terms({ validBefore: now() - 1 });
    expect(decide(t, view({ headTime: now() })).outcome).toBe("unpaid");
    // Only the chain's clock counts: a valid_before in the past by wall clock but not yet by the
    // latest block could still be mined.
    expect(decide(t, view({ headTime: t.validBefore - 1 })).outcome).toBe("wait");
    expect(decide(terms(), view({})).outcome).toBe("wait");
  });
});

describe("findUse reads this authorization's own transfer (viem over a JSON-RPC double)", () => {
  it("a transaction landing two of our authorizations: each row gets the Transfer after its AuthorizationUsed", async () => {
    const RPC = "https://rpc.find-use.test";
    const asset = `0x${"a5".repeat(20)}`;
    const wallet = `0x${"0b".repeat(20)}`;
    const partner = `0x${"11".repeat(20)}`;
    const [first, second] = [`0x${"01".repeat(32)}`, `0x${"02".repeat(32)}`];
    const word = (v: string) => `0x${v.replace(/^0x/, "").padStart(64, "0")}`;
    const TRANSFER = keccak256(toHex("Transfer(address,address,uint256)"));
    const AUTH_USED = AUTHORIZATION_USED;
    const TX = hex(32);
    // FiatToken's order: AuthorizationUsed, then that authorization's Transfer (EIP3009.sol).
    const logs = [
      { topics: [AUTH_USED, word(wallet), first], data: "0x" },
      { topics: [TRANSFER, word(wallet), word(partner)], data: word((10000).toString(16)) },
      { topics: [AUTH_USED, word(wallet), second], data: "0x" },
      { topics: [TRANSFER, word(wallet), word(partner)], data: word((20000).toString(16)) },
    ].map((l, i) => ({
      ...l,
      address: asset,
      blockNumber: "0x64",
      blockHash: hex(32),
      transactionHash: TX,
      transactionIndex: "0x0",
      logIndex: `0x${i.toString(16)}`,
      removed: false,
    }));
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (!req.url.startsWith(RPC)) return real(input, init);
      const body = await req.json<{
        id: number;
        method: string;
        params: { topics?: (string | string[])[] }[];
      }>();
      const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: body.id, result });
      if (body.method === "eth_getLogs") {
        // One request asks for AuthorizationUsed or AuthorizationCanceled (an OR in topic 0).
        const [events, , nonce] = body.params[0]?.topics ?? [];
        return reply(logs.filter((l) => events?.includes(l.topics[0] as string) && l.topics[2] === nonce));
      }
      if (body.method === "eth_getTransactionReceipt")
        return reply({
          transactionHash: TX,
          blockHash: hex(32),
          blockNumber: "0x64",
          transactionIndex: "0x0",
          from: partner,
          to: hex(20),
          cumulativeGasUsed: "0x1",
          gasUsed: "0x1",
          effectiveGasPrice: "0x1",
          status: "0x1",
          type: "0x2",
          contractAddress: null,
          logsBloom: `0x${"00".repeat(256)}`,
          logs,
        });
      return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: body.method } });
    });
    const reader = await rpcChainReader(RPC);
    const one = await reader.findUse(asset, wallet, first, 90, 110);
    const two = await reader.findUse(asset, wallet, second, 90, 110);
    expect(one).toMatchObject({ txHash: TX, transfer: { value: 10000n } });
    expect(two).toMatchObject({ txHash: TX, transfer: { value: 20000n } });
  });

  it("the topics it asks for are FiatToken's AuthorizationUsed and AuthorizationCanceled", () => {
    expect(AUTHORIZATION_USED).toBe(keccak256(toHex("AuthorizationUsed(address,bytes32)")));
    expect(AUTHORIZATION_CANCELED).toBe(keccak256(toHex("AuthorizationCanceled(address,bytes32)")));
  });
});

describe("searchRange", () => {
  it("covers the authorization's lifetime on a 2 s chain, with margins, inside the chain", () => {
    const head = { number: 1_000_000, timestamp: 2_000_000, blockSeconds: 2 };
    const r = searchRange(head, 2_000_000 - 1000, 2_000_000 - 700);
    // mined between created-300-60 s and valid_before+60 s: blocks ~999320 .. ~999680
    expect(r.fromBlock).toBeLessThanOrEqual(999_320);
    expect(r.toBlock).toBeGreaterThanOrEqual(999_680);
    expect(r.toBlock).toBeLessThanOrEqual(head.number);
    expect(r.toBlock - r.fromBlock).toBeLessThan(2000);
  });
  it("a chain without a measurable block time (a fresh local one) is searched whole, up to the cap", () => {
    expect(searchRange({ number: 40, timestamp: 100, blockSeconds: 0 }, 50, 90)).toEqual({
      fromBlock: 0,
      toBlock: 40,
    });
    expect(searchRange({ number: 1_000_000, timestamp: 100, blockSeconds: 0 }, 50, 90)).toEqual({
      fromBlock: 1_000_000 - MAX_SEARCH_BLOCKS + 1,
      toBlock: 1_000_000,
    });
  });
  it.each([
    ["a day", 86_400],
    ["30 days", 30 * 86_400],
    ["a year", 365 * 86_400],
  ])(
    "a claim from %s ago is searched over as many blocks as an hour-old one, around where its authorization lived",
    (_n, age) => {
      const head = { number: 30_000_000, timestamp: 2_000_000_000, blockSeconds: 2 };
      const created = head.timestamp - age;
      const hourOld = searchRange(head, head.timestamp - 3600, head.timestamp - 3300);
      const r = searchRange(head, created, created + 300);
      expect(r.toBlock - r.fromBlock).toBe(hourOld.toBlock - hourOld.fromBlock);
      expect(r.toBlock - r.fromBlock + 1).toBeLessThanOrEqual(MAX_SEARCH_BLOCKS);
      // mined between created-300-60 s and valid_before+60 s
      expect(r.fromBlock).toBeLessThanOrEqual(head.number - (age + 360) / 2);
      expect(r.toBlock).toBeGreaterThanOrEqual(head.number - (age - 360) / 2);
    },
  );
  it("an interval longer than the cap is searched over the cap's worth of blocks around its middle", () => {
    const head = { number: 30_000_000, timestamp: 2_000_000_000, blockSeconds: 0.25 };
    const r = searchRange(head, head.timestamp - 3600, head.timestamp - 600);
    expect(r.toBlock - r.fromBlock + 1).toBe(MAX_SEARCH_BLOCKS);
    const middle = head.number - Math.round((3600 + 360 + 600 - 60) / 2 / 0.25);
    expect(Math.abs((r.fromBlock + r.toBlock) / 2 - middle)).toBeLessThan(10);
  });
});

/**
 * A chain whose answers the test sets per nonce: used (with a transfer) or not. A nonce in `used`
 * is used by whichever authorizer its transfer names (EIP-3009 nonces are per authorizer).
 */
function chainDouble(headTime = now()) {
  const used = new Map<string, FoundUse>();
  const reads: string[] = [];
  const usedBy = (who: string, nonce: string) => {
    const u = used.get(nonce);
    const from = u && !u.cancelled ? u.transfer?.from : undefined;
    return u && (!from || from.toLowerCase() === who.toLowerCase()) ? u : undefined;
  };
  const reader: ChainReader = {
    chainId: async () => Number(env.X402_NETWORK.split(":")[1]),
    head: async () => ({ number: 500, timestamp: headTime, blockSeconds: 2 }),
    blockTime: async (n) => headTime - (500 - n) * 2,
    authorizationUsed: async (_a, who, nonce) => {
      reads.push(nonce);
      return usedBy(who, nonce) !== undefined;
    },
    findUse: async (_a, who, nonce) => usedBy(who, nonce),
  };
  return { reader, used, reads };
}

async function claim(
  status: "failed" | "running" | "settled",
  over: Partial<Terms> = {},
  resource = "sha256",
  payout: string | null = null,
) {
  const t = terms(over);
  const key = `${env.X402_NETWORK}:${t.asset}:${t.payer}:${t.nonce}`.toLowerCase();
  const requestId = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout)
     VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 2, ?13)`,
  )
    .bind(
      key,
      requestId,
      resource,
      status,
      // Made when its authorization was signed (valid for up to 300 s), at least a minute ago.
      Math.min(Date.now() - 60_000, (t.validBefore - 300) * 1000),
      t.payer,
      t.payTo,
      t.asset,
      env.X402_NETWORK,
      Number(t.amountAtomic),
      t.nonce,
      t.validBefore,
      payout,
    )
    .run();
  return { t, key, requestId };
}
/** What a served refinery policy_digest call (0.09) owes the partner: 0.03, our fee 0.06. */
const POLICY_DIGEST_SHARE = {
  partnerId: "refinery",
  serviceId: "policy_digest",
  shareMicros: "30000",
  feeMicros: "60000",
};
const status = async (key: string) =>
  (
    await env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1")
      .bind(key)
      .first<{ status: string }>()
  )?.status;
const ledger = (key: string) =>
  env.DB.prepare(
    "SELECT tx_hash, amount_atomic, payer, reconciled_at, request_id FROM payments WHERE nonce = ?1",
  )
    .bind(key)
    .all<{ tx_hash: string; amount_atomic: number; reconciled_at: number | null; request_id: string }>();

describe("reconcile: the D1 side of each decision", () => {
  it("writes a reconciled ledger row for what landed, releases what expired unused, leaves the rest", async () => {
    const chain = chainDouble();
    const landed = await claim("failed");
    const tx = hex(32);
    chain.used.set(landed.t.nonce, {
      txHash: tx,
      blockNumber: 480,
      transfer: { from: landed.t.payer, to: PAY_TO, value: 3000n },
    });
    const expired = await claim("failed", { validBefore: now() - 5 });
    const pending = await claim("failed");
    const stuck = await claim("running", { validBefore: now() - 120 });
    chain.used.set(stuck.t.nonce, {
      txHash: hex(32),
      blockNumber: 470,
      transfer: { from: stuck.t.payer, to: PAY_TO, value: 3000n },
    });
    // A running claim still inside its validity belongs to a request in flight: never touched.
    const inflight = await claim("running");

    const summary = await reconcile(env, chain.reader);
    expect(summary.errors).toEqual([]);
    expect(summary.settled).toBeGreaterThanOrEqual(2);
    expect(summary.released).toBeGreaterThanOrEqual(1);

    expect(await status(landed.key)).toBe("settled");
    const rows = (await ledger(landed.key)).results;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ tx_hash: tx, amount_atomic: 3000, request_id: landed.requestId });
    expect(rows[0]?.reconciled_at).toBeGreaterThan(0);
    expect(await status(stuck.key)).toBe("settled");
    expect(await status(expired.key)).toBe("released");
    expect((await ledger(expired.key)).results).toHaveLength(0);
    expect(await status(pending.key)).toBe("failed");
    expect(await status(inflight.key)).toBe("running");
    expect(chain.reads).not.toContain(inflight.t.nonce);

    // A second run changes nothing that was decided: one ledger row, one log row per authorization.
    await reconcile(env, chain.reader);
    expect((await ledger(landed.key)).results).toHaveLength(1);
    const log = await env.DB.prepare("SELECT outcome, evidence, tx_hash FROM reconciliations WHERE ref = ?1")
      .bind(landed.key)
      .all<{ outcome: string; evidence: string; tx_hash: string }>();
    expect(log.results).toEqual([
      {
        outcome: "settled",
        evidence: expect.stringMatching(/AuthorizationUsed and Transfer 3000/),
        tx_hash: tx,
      },
    ]);
  });

  it("rows whose chain read fails go to the back of the queue: a batch of them cannot starve the rows behind", async () => {
    const chain = chainDouble();
    const bad = new Set<string>();
    const failing: ChainReader = {
      ...chain.reader,
      authorizationUsed: async (a, who, nonce) => {
        if (bad.has(nonce)) throw new Error("eth_getLogs: range too large");
        return chain.reader.authorizationUsed(a, who, nonce);
      },
      findUse: async (a, who, nonce, from, to) => {
        if (bad.has(nonce)) throw new Error("eth_getLogs: range too large");
        return chain.reader.findUse(a, who, nonce, from, to);
      },
    };
    // A whole batch (40) of rows that always fail, first in the queue.
    const stuck = await Promise.all(Array.from({ length: 40 }, () => claim("failed")));
    for (const c of stuck) bad.add(c.t.nonce);
    await env.DB.prepare(
      `UPDATE payment_nonces SET updated_at = 0 WHERE nonce IN (${stuck.map(() => "?").join(",")})`,
    )
      .bind(...stuck.map((c) => c.key))
      .run();
    const good = await claim("failed");
    chain.used.set(good.t.nonce, {
      txHash: hex(32),
      blockNumber: 480,
      transfer: { from: good.t.payer, to: PAY_TO, value: 3000n },
    });
    const first = await reconcile(env, failing);
    expect(first.errors.length).toBeGreaterThanOrEqual(40);
    // The next run reaches the row behind them.
    await reconcile(env, failing);
    expect(await status(good.key)).toBe("settled");
    // The queue goes round by checked_at; updated_at keeps its meaning for the admin views (a
    // `running` claim is listed as unconfirmed once it is old enough).
    const stamps = await env.DB.prepare("SELECT updated_at, checked_at FROM payment_nonces WHERE nonce = ?1")
      .bind(stuck[0]?.key)
      .first<{ updated_at: number; checked_at: number }>();
    expect(stamps?.updated_at).toBe(0);
    expect(stamps?.checked_at).toBeGreaterThan(0);
    // Leave nothing failing for the other tests of this file.
    await env.DB.prepare(`DELETE FROM payment_nonces WHERE nonce IN (${stuck.map(() => "?").join(",")})`)
      .bind(...stuck.map((c) => c.key))
      .run();
  });

  it("a reconciled partner try call whose claim recorded nothing (cut off, or from before migration 0009) gets its payout row from its resource, paid upstream when the wallet paid the partner", async () => {
    const chain = chainDouble();
    const c = await claim("failed", { amountAtomic: 30000n }, "partner:pricefeed/price");
    chain.used.set(c.t.nonce, {
      txHash: hex(32),
      blockNumber: 490,
      transfer: { from: c.t.payer, to: PAY_TO, value: 30000n },
    });
    await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status, created_at)
       VALUES (?1, 'pricefeed', 'price', 10000, NULL, 200, 0)`,
    )
      .bind(c.requestId)
      .run();
    await reconcile(env, chain.reader);
    const payout = await env.DB.prepare(
      "SELECT partner_share_micro, marketplace_fee_micro, paid_upstream FROM payout_ledger WHERE request_id = ?1",
    )
      .bind(c.requestId)
      .first();
    expect(payout).toEqual({ partner_share_micro: 10000, marketplace_fee_micro: 20000, paid_upstream: 1 });
  });

  /** Lands the claim's transfer on the chain double and reconciles; answers its payout rows. */
  async function landAndReconcile(c: Awaited<ReturnType<typeof claim>>, value: bigint) {
    const chain = chainDouble();
    chain.used.set(c.t.nonce, {
      txHash: hex(32),
      blockNumber: 490,
      transfer: { from: c.t.payer, to: PAY_TO, value },
    });
    await reconcile(env, chain.reader);
    expect(await status(c.key)).toBe("settled");
    expect((await ledger(c.key)).results).toHaveLength(1);
    return (
      await env.DB.prepare(
        "SELECT partner_id, service_id, partner_share_micro, marketplace_fee_micro, paid_upstream FROM payout_ledger WHERE request_id = ?1",
      )
        .bind(c.requestId)
        .all()
    ).results;
  }

  it("a landed payment whose request recorded no payout owes the partner nothing (its partner never served)", async () => {
    const c = await claim("failed", { amountAtomic: 30000n }, "partner:pricefeed/price", "none");
    expect(await landAndReconcile(c, 30000n)).toEqual([]);
  });

  it("a landed refinery payment owes the share its request recorded (the recipe is in the body, not the resource)", async () => {
    const c = await claim(
      "failed",
      { amountAtomic: 90000n },
      "refinery_recipes",
      JSON.stringify(POLICY_DIGEST_SHARE),
    );
    expect(await landAndReconcile(c, 90000n)).toEqual([
      {
        partner_id: "refinery",
        service_id: "policy_digest",
        partner_share_micro: 30000,
        marketplace_fee_micro: 60000,
        paid_upstream: 0,
      },
    ]);
  });

  it("a share kept with a claim that cannot be read is owed to no one, and the payment is still recorded", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const c = await claim(
      "running",
      { amountAtomic: 90000n, validBefore: now() - 120 },
      "refinery_recipes",
      "{broken",
    );
    expect(await landAndReconcile(c, 90000n)).toEqual([]);
    expect(logged.mock.calls.flat().join(" ")).toContain("unreadable payout");
    logged.mockRestore();
  });

  it("upstream authorizations: landed gets its tx hash, expired unused is not counted as spent", async () => {
    const chain = chainDouble();
    const wallet = hex(20);
    const partnerWallet = hex(20);
    const insert = async (nonce: string, validBefore: number) => {
      const requestId = crypto.randomUUID();
      await env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status, created_at,
           payer, pay_to, asset, network, auth_nonce, valid_before)
         VALUES (?1, 'textkit', 'summarize', 20000, NULL, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
      )
        .bind(requestId, Date.now(), wallet, partnerWallet, USDC, env.X402_NETWORK, nonce, validBefore)
        .run();
      return requestId;
    };
    const landedNonce = hex(32);
    const tx = hex(32);
    chain.used.set(landedNonce, {
      txHash: tx,
      blockNumber: 499,
      transfer: { from: wallet, to: partnerWallet, value: 20000n },
    });
    const landed = await insert(landedNonce, now() + 200);
    const lost = await insert(hex(32), now() - 10);
    const summary = await reconcile(env, chain.reader);
    expect(summary.upstream_landed).toBeGreaterThanOrEqual(1);
    const row = (id: string) =>
      env.DB.prepare("SELECT chain_status, tx_hash FROM upstream_payments WHERE request_id = ?1")
        .bind(id)
        .first();
    expect(await row(landed)).toEqual({ chain_status: "landed", tx_hash: tx });
    expect(await row(lost)).toEqual({ chain_status: "not_landed", tx_hash: null });
  });

  it("refuses an RPC of another chain, and does nothing without RPC_URL", async () => {
    const chain = chainDouble();
    const other = { ...chain.reader, chainId: async () => 1 };
    expect((await reconcile(env, other)).skipped).toMatch(/chain 1/);
    expect(chain.reads).toHaveLength(0);
    expect((await reconcile({ ...env, RPC_URL: "" })).skipped).toBe("RPC_URL is not set");
  });
});

describe("a withheld call whose payment landed is refunded", () => {
  // These runs count refunds (refunds_owed, refunded) on X402_NETWORK, which the project's files
  // share: owed refunds other tests and files left there go to the back of the queue, as a run
  // that looked at them leaves them (touchRefund), so for the next minute a run reads only the
  // test's own (seed 4444 counted 8 owed, not 1: refund-by-hand-chain's and three real flows').
  beforeEach(() =>
    env.DB.prepare("UPDATE refunds SET updated_at = ?1 WHERE status = 'owed'").bind(Date.now()).run(),
  );
  afterEach(() => {
    vi.restoreAllMocks();
  });
  const noPartner = () => new Response("no partner here", { status: 500 });
  const operatingWallet = privateKeyToAccount(tryEnv.PARTNER_PAYER_KEY).address;
  const refundRow = (requestId: string) =>
    env.DB.prepare(
      "SELECT payer, amount_micro, withheld_micro, status, tx_hash, error, hold, auth_nonce, auth_from, valid_before FROM refunds WHERE request_id = ?1",
    )
      .bind(requestId)
      .first<Record<string, unknown>>();
  type Sent = { authorization: Record<string, string>; signature: `0x${string}`; payload: PaymentPayload };
  /** The refunds the facilitator was asked to settle for this payer. */
  const refundsTo = (settled: PaymentPayload[], payer: string): Sent[] =>
    settled
      .map((p) => ({ ...(p.payload as Omit<Sent, "payload">), payload: p }))
      .filter((a) => a.authorization.to?.toLowerCase() === payer.toLowerCase());
  const landed = (c: Awaited<ReturnType<typeof claim>>, headTime?: number) => {
    const chain = chainDouble(headTime);
    chain.used.set(c.t.nonce, {
      txHash: hex(32),
      blockNumber: 490,
      transfer: { from: c.t.payer, to: PAY_TO, value: c.t.amountAtomic },
    });
    return chain;
  };
  /** The last send of a refund of 3000 lands, as the wallet signed it; a later run (under `e`) reconciles. */
  const refundLands = async (
    c: Awaited<ReturnType<typeof claim>>,
    owed: Record<string, unknown> | null,
    e: typeof tryEnv,
    headTime?: number,
  ) => {
    const chain = landed(c, headTime);
    const tx = hex(32);
    chain.used.set(String(owed?.auth_nonce), {
      txHash: tx,
      blockNumber: 495,
      transfer: { from: String(owed?.auth_from), to: c.t.payer, value: 3000n },
    });
    await age(c.requestId);
    await reconcile(e, chain.reader);
    return tx;
  };
  /** As if the refund was last touched two minutes ago: the next run looks at it again. */
  const age = (requestId: string) =>
    env.DB.prepare("UPDATE refunds SET updated_at = updated_at - 120000 WHERE request_id = ?1")
      .bind(requestId)
      .run();

  it("a 502 settlement_unconfirmed call ('failed') gets its whole price back from the operating wallet, signed with the request's own nonce", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim("failed", {}, "sha256", "none");
    const chain = landed(c);
    const summary = await reconcile(tryEnv, chain.reader);
    expect(summary.errors).toEqual([]);
    expect(summary.refunded).toBeGreaterThanOrEqual(1);
    expect(await status(c.key)).toBe("settled");
    expect((await ledger(c.key)).results).toHaveLength(1); // the payment is revenue; the refund is its own row
    const sent = refundsTo(settled, c.t.payer);
    expect(sent).toHaveLength(1);
    const refund = sent[0] as Sent;
    expect(refund.authorization).toMatchObject({ from: operatingWallet, value: "3000" });
    expect(refund.authorization.nonce).toBe(await refundNonce(c.requestId));
    // A real EIP-712 signature of the operating wallet over that authorization, as USDC checks it.
    const recovered = await recoverTypedDataAddress({
      ...transferWithAuthorization(refund.authorization, {
        name: "USD Coin",
        version: "2",
        chainId: Number(env.X402_NETWORK.split(":")[1]),
        verifyingContract: USDC as `0x${string}`,
      }),
      signature: refund.signature,
    });
    expect(recovered).toBe(operatingWallet);
    expect(await refundRow(c.requestId)).toMatchObject({
      payer: c.t.payer,
      amount_micro: 3000,
      withheld_micro: 0,
      status: "refunded",
      tx_hash: CALLER_TX,
      error: null,
      hold: null,
      auth_nonce: refund.authorization.nonce,
    });
    // Another run, or the admin trigger racing the cron, sends nothing more.
    await reconcile(tryEnv, chain.reader);
    expect(refundsTo(settled, c.t.payer)).toHaveLength(1);
    // The admin's ledger view shows the payment and, beside its totals, the refund of it.
    const view = await createApp().fetch(
      new Request(`https://skills.test/api/admin/payments?request_id=${c.requestId}`, {
        headers: { authorization: `Bearer ${tryEnv.ADMIN_TOKEN}` },
      }),
      tryEnv,
    );
    expect(await view.json()).toMatchObject({
      totals: { count: 1, amount_atomic: 3000 },
      refunds: { count: 1, amount_atomic: 3000, refunded_atomic: 3000 },
    });
  });

  it("a stale view of a claim another run already settled records no second refund", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim("failed", {}, "sha256", "none");
    const [row] = (await candidates(env.DB, env.X402_NETWORK, Date.now())).results.filter(
      (r) => r.nonce === c.key,
    );
    await reconcile(tryEnv, landed(c).reader);
    const again = await applyPayment(tryEnv, row as NonceRow, {
      outcome: "paid",
      txHash: hex(32),
      blockNumber: 490,
      evidence: "the same landing, seen by a second run",
    });
    expect(again).toEqual({});
    expect(refundsTo(settled, c.t.payer)).toHaveLength(1);
    expect((await ledger(c.key)).results).toHaveLength(1);
  });

  it("a partner that served keeps its share: the caller gets the price less that share", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim(
      "failed",
      { amountAtomic: 90000n },
      "refinery_recipes",
      JSON.stringify(POLICY_DIGEST_SHARE),
    );
    await reconcile(tryEnv, landed(c).reader);
    expect(refundsTo(settled, c.t.payer).map((r) => r.authorization.value)).toEqual(["60000"]);
    expect(await refundRow(c.requestId)).toMatchObject({
      amount_micro: 60000,
      withheld_micro: 30000,
      status: "refunded",
    });
    expect(await payoutRows(c.requestId)).toHaveLength(1);
  });

  it("a refinery claim from before migration 0009 (no share recorded) is held for the maintainer, never sent", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim("failed", { amountAtomic: 90000n }, "refinery_recipes", null);
    const chain = landed(c);
    await reconcile(tryEnv, chain.reader);
    expect(await refundRow(c.requestId)).toMatchObject({
      amount_micro: 90000,
      status: "owed",
      hold: expect.stringMatching(/no partner share/),
      valid_before: null,
    });
    await age(c.requestId);
    await reconcile(tryEnv, chain.reader);
    expect(refundsTo(settled, c.t.payer)).toEqual([]);
  });

  it("a claim left 'running' (its call may have been served) is recorded, not refunded", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim("running", { validBefore: now() - 120 });
    await reconcile(tryEnv, landed(c).reader);
    expect(await status(c.key)).toBe("settled");
    expect(await refundRow(c.requestId)).toBeNull();
    expect(refundsTo(settled, c.t.payer)).toEqual([]);
  });

  it("a 'running' claim whose short-lived authorization expired is left to its request until that request cannot still be settling it (5 minutes)", async () => {
    stubNetwork(noPartner);
    // Signed valid for seconds (a buyer's slow clock), claimed 90 s ago: its request may still be
    // waiting on a second settle call, and answer unconfirmed (a refund promised) or pay a partner.
    const c = await claim("running", { validBefore: now() - 70 });
    await env.DB.prepare("UPDATE payment_nonces SET created_at = ?2, updated_at = ?2 WHERE nonce = ?1")
      .bind(c.key, Date.now() - 90_000)
      .run();
    const chain = landed(c);
    const summary = await reconcile(tryEnv, chain.reader);
    expect(summary.settled).toBe(0);
    expect(await status(c.key)).toBe("running");
    // Its request is gone by now: the run decides it.
    await env.DB.prepare("UPDATE payment_nonces SET created_at = ?2 WHERE nonce = ?1")
      .bind(c.key, Date.now() - RUNNING_LEFT_TO_REQUEST_MS - 1_000)
      .run();
    await reconcile(tryEnv, chain.reader);
    expect(await status(c.key)).toBe("settled");
  });

  it("a refund that did not settle stays owed; a later run sends it again only once its last authorization expired unused, with the same nonce", async () => {
    const refused = stubNetwork(noPartner, { settles: false });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const first = await refundRow(c.requestId);
    expect(first).toMatchObject({
      amount_micro: 3000,
      status: "owed",
      tx_hash: null,
      error: "insufficient_funds",
    });
    expect(first?.auth_nonce).toBe(await refundNonce(c.requestId));
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);

    // Its authorization is still valid and unused on chain: it may yet land, so nothing is sent.
    await age(c.requestId);
    await reconcile(tryEnv, landed(c).reader);
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);

    // The chain passed its valid_before unused: sent again, under the same nonce.
    vi.restoreAllMocks();
    const { settled } = stubNetwork(noPartner);
    await age(c.requestId);
    await reconcile(tryEnv, landed(c, Number(first?.valid_before) + 1).reader);
    const resent = refundsTo(settled, c.t.payer);
    expect(resent.map((r) => r.authorization.nonce)).toEqual([first?.auth_nonce]);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "refunded",
      tx_hash: CALLER_TX,
      error: null,
    });
  });

  it("an owed refund the chain shows landed (its settle answer was lost) is marked refunded, not sent again", async () => {
    const lost = stubNetwork(noPartner, { settles: "no answer" });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    expect(owed).toMatchObject({ status: "owed", tx_hash: null });
    expect(refundsTo(lost.settled, c.t.payer)).toHaveLength(1);

    const tx = await refundLands(c, owed, tryEnv);
    expect(await refundRow(c.requestId)).toMatchObject({ status: "refunded", tx_hash: tx, error: null });
    expect(refundsTo(lost.settled, c.t.payer)).toHaveLength(1);
  });

  it("without an operating wallet nothing is sent; the refund is owed and says why", async () => {
    const { settled } = stubNetwork(noPartner);
    const d = await claim("failed", {}, "sha256", "none");
    await reconcile({ ...tryEnv, PARTNER_PAYER_KEY: "" }, landed(d).reader);
    expect(await refundRow(d.requestId)).toMatchObject({
      status: "owed",
      error: expect.stringMatching(/^no operating wallet configured/),
    });
    expect(refundsTo(settled, d.t.payer)).toEqual([]);
  });

  it("a refund recorded before migration 0010 (no derived nonce: any send used another one) is held, never resent", async () => {
    const { settled } = stubNetwork(noPartner);
    const requestId = crypto.randomUUID();
    const payer = hex(20);
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, error, created_at, updated_at)
       VALUES (?1, ?2, 3000, 0, 'partner failed', 'owed', 'fetch failed', ?3, ?3)`,
    )
      .bind(requestId, payer, Date.now() - 600_000)
      .run();
    await reconcile(tryEnv, chainDouble(now() + 10_000).reader);
    expect(await refundRow(requestId)).toMatchObject({ status: "owed", hold: expect.stringMatching(/0010/) });
    await age(requestId);
    await reconcile(tryEnv, chainDouble(now() + 10_000).reader);
    expect(refundsTo(settled, payer)).toEqual([]);
  });

  it("a refund whose nonce the chain shows spent on another transfer is held, never resent", async () => {
    const refused = stubNetwork(noPartner, { settles: false });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    const chain = landed(c, Number(owed?.valid_before) + 1);
    chain.used.set(String(owed?.auth_nonce), {
      txHash: hex(32),
      blockNumber: 497,
      transfer: { from: operatingWallet, to: hex(20), value: 1n },
    });
    await age(c.requestId);
    await reconcile(tryEnv, chain.reader);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "owed",
      hold: expect.stringMatching(/different transfer/),
    });
    await age(c.requestId);
    await reconcile(tryEnv, chain.reader);
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);
  });

  it("a refund whose authorization the chain shows cancelled (only the operating key can) is held: its nonce can never be sent again", async () => {
    const refused = stubNetwork(noPartner, { settles: false });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    const chain = landed(c, Number(owed?.valid_before) + 1);
    const cancel = hex(32);
    chain.used.set(String(owed?.auth_nonce), { txHash: cancel, blockNumber: 497, cancelled: true });
    await age(c.requestId);
    await reconcile(tryEnv, chain.reader);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "owed",
      hold: expect.stringContaining(`AuthorizationCanceled in tx ${cancel}`),
    });
    await age(c.requestId);
    await reconcile(tryEnv, chain.reader);
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);
  });

  it("a refund whose nonce was spent after it expired, no log in the blocks searched (a late cancel), is held too", async () => {
    const refused = stubNetwork(noPartner, { settles: false });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    const nonce = String(owed?.auth_nonce);
    const chain = landed(c, Number(owed?.valid_before) + 3 * 3600);
    // Used at the head, unused at every block before the last ten: spent hours after it expired.
    const reader: ChainReader = {
      ...chain.reader,
      authorizationUsed: (a, who, n, block) =>
        n === nonce
          ? Promise.resolve(block === undefined || block > 490)
          : chain.reader.authorizationUsed(a, who, n, block),
    };
    await age(c.requestId);
    expect((await reconcile(tryEnv, reader)).errors).toEqual([]);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "owed",
      hold: expect.stringMatching(/past valid_before/),
    });
    await age(c.requestId);
    await reconcile(tryEnv, reader);
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);
  });

  it("a refund whose authorization the chain shows spent with no log found is refunded (only the wallet's own transfer spends it), not read again every run", async () => {
    const refused = stubNetwork(noPartner, { settles: false });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    const nonce = String(owed?.auth_nonce);
    // Spent at every block the node can read, and its log not among what the node returns.
    const spentNoLog = (headTime: number): ChainReader => {
      const chain = landed(c, headTime);
      return {
        ...chain.reader,
        authorizationUsed: (a, who, n, block) =>
          n === nonce ? Promise.resolve(true) : chain.reader.authorizationUsed(a, who, n, block),
      };
    };
    // Minutes after it expired the log may still be on its way (an RPC's index lags): it waits.
    await age(c.requestId);
    // `waiting` counts every undecided claim and refund on the shared X402_NETWORK (other files
    // leave valid 'failed' claims): this refund is among them, still owed and not held.
    expect(
      (await reconcile(tryEnv, spentNoLog(Number(owed?.valid_before) + 60))).waiting,
    ).toBeGreaterThanOrEqual(1);
    expect(await refundRow(c.requestId)).toMatchObject({ status: "owed", hold: null });
    const reader = spentNoLog(Number(owed?.valid_before) + 3 * 3600);
    await age(c.requestId);
    const summary = await reconcile(tryEnv, reader);
    expect(summary.errors).toEqual([]);
    expect(summary.refunded).toBe(1);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "refunded",
      tx_hash: null,
      hold: null,
      error: expect.stringMatching(
        /^landed, transaction not found: authorizationState: used, but no AuthorizationUsed/,
      ),
    });
    // A person cannot record it paid again by hand.
    expect(await resolveRefundByHand(tryEnv, c.requestId, hex(32), 40000, undefined)).toMatchObject({
      status: "refused",
      detail: expect.stringContaining(
        "already landed from the operating wallet (its transaction not found on chain)",
      ),
    });
    // A later run neither reads it again nor sends it.
    await age(c.requestId);
    const next = await reconcile(tryEnv, reader);
    expect(next.refunded).toBe(0);
    expect(refundsTo(refused.settled, c.t.payer)).toHaveLength(1);
  });

  it("a claim's nonce read at an old block from a node without that state (no archive) waits; the run does not fail", async () => {
    const c = await claim("failed", {}, "sha256", "none");
    const chain = chainDouble(c.t.validBefore + 365 * 86_400);
    const reader: ChainReader = {
      ...chain.reader,
      authorizationUsed: (a, who, n, block) =>
        n === c.t.nonce
          ? block === undefined || block >= 500
            ? Promise.resolve(true)
            : Promise.reject(new Error("missing trie node"))
          : chain.reader.authorizationUsed(a, who, n, block),
    };
    const summary = await reconcile(env, reader);
    expect(summary.errors).toEqual([]);
    expect(cronFailure(summary)).toBeUndefined();
    expect(await status(c.key)).toBe("failed");
  });

  it("after the operating key changes, the chain is read under the wallet that signed the last send: nothing is sent twice", async () => {
    const lost = stubNetwork(noPartner, { settles: "no answer" });
    const c = await claim("failed", {}, "sha256", "none");
    await reconcile(tryEnv, landed(c).reader);
    const owed = await refundRow(c.requestId);
    expect(owed?.auth_from).toBe(operatingWallet);
    const rotated = { ...tryEnv, PARTNER_PAYER_KEY: generatePrivateKey() };

    // The old wallet's authorization is still valid: the new wallet sends nothing.
    await age(c.requestId);
    await reconcile(rotated, landed(c).reader);
    expect(refundsTo(lost.settled, c.t.payer)).toHaveLength(1);

    // It landed from the old wallet: refunded, with that transaction.
    const tx = await refundLands(c, owed, rotated, Number(owed?.valid_before) + 1);
    expect(await refundRow(c.requestId)).toMatchObject({ status: "refunded", tx_hash: tx });
    expect(refundsTo(lost.settled, c.t.payer)).toHaveLength(1);
  });

  it("an MCP call from before migration 0009 (no share recorded) is held too; a partner refund with no payer address is held", async () => {
    const { settled } = stubNetwork(noPartner);
    const c = await claim("failed", {}, "mcp:token_count", null);
    await reconcile(tryEnv, landed(c).reader);
    expect(await refundRow(c.requestId)).toMatchObject({
      status: "owed",
      hold: expect.stringMatching(/0009/),
    });
    expect(refundsTo(settled, c.t.payer)).toEqual([]);

    const requestId = crypto.randomUUID();
    const out = await refundCaller(tryEnv, {
      requestId,
      payer: "",
      network: env.X402_NETWORK,
      asset: USDC,
      paidMicros: 30000n,
      withheldMicros: 10000n,
      reason: "partner failed",
    });
    expect(out.status).toBe("owed");
    expect(await refundRow(requestId)).toMatchObject({
      hold: "no payer address to refund to",
      valid_before: null,
    });
  });

  /** Captures console.warn: the JSON lines it was given for `requestId`. */
  const warnLines = () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    return (requestId: string) =>
      warn.mock.calls
        .map((args) => JSON.parse(String(args[0])) as Record<string, unknown>)
        .filter((line) => line.request_id === requestId);
  };

  it("a refund whose send fails is one warn line (refund not sent, its error) in that run", async () => {
    stubNetwork(noPartner, { settles: false });
    const lines = warnLines();
    const c = await claim("failed", {}, "sha256", "none");
    const summary = await reconcile(tryEnv, landed(c).reader);
    expect(summary.refunds_owed).toBe(1);
    expect(lines(c.requestId)).toEqual([
      { level: "warn", msg: "refund not sent", request_id: c.requestId, error: "insufficient_funds" },
    ]);
    // The next run only reads its authorization (still valid, it may land): no send, no line.
    await age(c.requestId);
    await reconcile(tryEnv, landed(c).reader);
    expect(lines(c.requestId)).toHaveLength(1);
  });

  it("two runs at once (the Cron and POST /api/admin/reconcile) deciding one landing warn once of the refund it records held", async () => {
    stubNetwork(noPartner);
    const lines = warnLines();
    // Held as it is recorded (no partner share known); both runs read the claim 'failed'.
    const c = await claim("failed", { amountAtomic: 90000n }, "refinery_recipes", null);
    const runs = await Promise.all([
      reconcile(tryEnv, landed(c).reader),
      reconcile(tryEnv, landed(c).reader),
    ]);
    // Both decided it (each read it undecided): only the batch that recorded the refund warns.
    expect(runs.map((r) => r.settled)).toEqual([1, 1]);
    expect(lines(c.requestId)).toEqual([
      {
        level: "warn",
        msg: "refund held for a person",
        request_id: c.requestId,
        hold: expect.stringMatching(/no partner share/),
      },
    ]);
    expect(await refundRow(c.requestId)).toMatchObject({ amount_micro: 90000, status: "owed" });
  });

  it("a refund held for a person is one warn line (refund held for a person, its hold) when it is first held, never again", async () => {
    stubNetwork(noPartner);
    const lines = warnLines();
    // Held as it is recorded (no partner share known).
    const c = await claim("failed", { amountAtomic: 90000n }, "refinery_recipes", null);
    const recorded = await reconcile(tryEnv, landed(c).reader);
    // Counted as a refund left owed, so the Cron's summary line is at warn. Before: the warn line
    // only, and an info summary.
    expect(summaryLevel(recorded)).toBe("warn");
    expect(recorded.refunds_owed).toBeGreaterThanOrEqual(1);
    expect(lines(c.requestId)).toEqual([
      {
        level: "warn",
        msg: "refund held for a person",
        request_id: c.requestId,
        hold: expect.stringMatching(/no partner share/),
      },
    ]);
    // Held by a later run (recorded before migration 0010).
    const requestId = crypto.randomUUID();
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, error, created_at, updated_at)
       VALUES (?1, ?2, 3000, 0, 'partner failed', 'owed', 'fetch failed', ?3, ?3)`,
    )
      .bind(requestId, hex(20), Date.now() - 600_000)
      .run();
    await reconcile(tryEnv, chainDouble(now() + 10_000).reader);
    expect(lines(requestId)).toEqual([
      expect.objectContaining({ msg: "refund held for a person", hold: expect.stringMatching(/0010/) }),
    ]);
    await age(requestId);
    await age(c.requestId);
    await reconcile(tryEnv, chainDouble(now() + 10_000).reader);
    expect(lines(requestId)).toHaveLength(1);
    expect(lines(c.requestId)).toHaveLength(1);
  });

  it("a withheld claim that keeps waiting goes to the back of the next run's queue", async () => {
    const c = await claim("failed");
    const before = await env.DB.prepare("SELECT updated_at FROM payment_nonces WHERE nonce = ?1")
      .bind(c.key)
      .first<{ updated_at: number }>();
    await reconcile(env, chainDouble().reader);
    const after = await env.DB.prepare("SELECT status, updated_at FROM payment_nonces WHERE nonce = ?1")
      .bind(c.key)
      .first<{ status: string; updated_at: number }>();
    expect(after?.status).toBe("failed");
    expect(after?.updated_at).toBeGreaterThan(before?.updated_at ?? Infinity);
  });
});

describe("the cron and the admin trigger", () => {
  it("the scheduled handler runs a reconciliation and logs its summary", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const ctx = createExecutionContext();
    // No RPC_URL (local development) is a configuration, not a failed run.
    await worker.scheduled(createScheduledController({ cron: "*/5 * * * *" }), { ...env, RPC_URL: "" }, ctx);
    await waitOnExecutionContext(ctx);
    expect(log.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
      /"reconcile":\{.*"skipped":"RPC_URL is not set"/,
    );
    log.mockRestore();
  });

  it("an unreachable RPC is logged and fails the Cron run (so Cron Events and alerts show it), with the RPC URL's key redacted", async () => {
    const rpc = "http://127.0.0.1:9/v2/SECRET_PROVIDER_KEY_123";
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const ctx = createExecutionContext();
    const run = worker.scheduled(
      createScheduledController({ cron: "*/5 * * * *" }),
      { ...env, RPC_URL: rpc },
      ctx,
    );
    const thrown = await run.then(
      () => undefined,
      (e: unknown) => String(e),
    );
    await waitOnExecutionContext(ctx);
    expect(thrown).toMatch(/reconcile:/);
    const written = [...err.mock.calls, ...log.mock.calls].map((c) => String(c[0])).join("\n");
    expect(written).toMatch(/reconcile:/);
    expect(`${written}\n${thrown}`).not.toContain("SECRET_PROVIDER_KEY_123");
    err.mockRestore();
    log.mockRestore();
  }, 30_000);

  it("a run that could not decide a row, or reads another chain, counts as failed; an unset RPC_URL does not", () => {
    const base = { ...emptySummary(), checked: 1 };
    expect(cronFailure(base)).toBeUndefined();
    expect(cronFailure({ ...base, skipped: "RPC_URL is not set" })).toBeUndefined();
    expect(cronFailure({ ...base, errors: ["0xab: HTTP request failed"] })).toMatch(/1 error\(s\): 0xab/);
    expect(cronFailure({ ...base, skipped: "RPC_URL serves chain 1, X402_NETWORK is eip155:8453" })).toMatch(
      /serves chain 1/,
    );
  });

  it("the Cron's summary line is at warn when the run held a claim or left a refund owed, else at info", () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const line = (fields: Record<string, unknown>) => JSON.stringify(fields);
    logSummary({ ...emptySummary(), checked: 3, settled: 3 }, line);
    expect(log.mock.calls.map((c) => JSON.parse(String(c[0])).level)).toEqual(["info"]);
    const held = {
      kind: "payment",
      ref: "0xab",
      request_id: "r-1",
      hold: "spent, no log",
    } as ReconcileSummary["needs_person"][number];
    logSummary({ ...emptySummary(), needs_person: [held] }, line);
    logSummary({ ...emptySummary(), refunds_owed: 1 }, line);
    expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([
      { level: "warn", reconcile: expect.objectContaining({ needs_person: [held] }) },
      { level: "warn", reconcile: expect.objectContaining({ refunds_owed: 1 }) },
    ]);
    log.mockRestore();
    warn.mockRestore();
  });

  it("a run skipped for its RPC is at warn when the RPC is wrong (another chain, no http(s) URL); an unset one only while x402 sells", () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const line = (fields: Record<string, unknown>) => JSON.stringify(fields);
    const levels = () => [
      ...log.mock.calls.map((c) => ["log", JSON.parse(String(c[0])).level]),
      ...warn.mock.calls.map((c) => ["warn", JSON.parse(String(c[0])).level]),
    ];
    for (const sells of [false, true])
      logSummary(
        { ...emptySummary(), skipped: "RPC_URL serves chain 1, X402_NETWORK is eip155:84532" },
        line,
        sells,
      );
    logSummary(
      { ...emptySummary(), skipped: "RPC_URL is not an absolute http(s) URL (its value is not shown)" },
      line,
    );
    expect(levels()).toEqual([
      ["warn", "warn"],
      ["warn", "warn"],
      ["warn", "warn"],
    ]);
    log.mockClear();
    warn.mockClear();
    // Unset: nothing to reconcile while nothing is sold by x402 (card credits only), a warn while it is.
    logSummary({ ...emptySummary(), skipped: "RPC_URL is not set" }, line, false);
    expect(levels()).toEqual([["log", "info"]]);
    logSummary({ ...emptySummary(), skipped: "RPC_URL is not set" }, line, true);
    expect(levels()).toEqual([
      ["log", "info"],
      ["warn", "warn"],
    ]);
    log.mockRestore();
    warn.mockRestore();
  });

  it("redactSecrets hides the RPC URL and its path, and keeps the provider's origin", () => {
    const e = { ...env, RPC_URL: "https://base.example.com/v2/KEY123?token=T" };
    expect(redactSecrets("URL: https://base.example.com/v2/KEY123?token=T failed", e)).toBe(
      "URL: <RPC_URL> failed",
    );
    expect(redactSecrets("GET /v2/KEY123?token=T 429", e)).toBe("GET /<redacted> 429");
    expect(redactSecrets("nothing secret", { ...env, RPC_URL: "" })).toBe("nothing secret");
  });

  it("POST /api/admin/reconcile is admin-only and says why it did nothing", async () => {
    const e = { ...env, ADMIN_TOKEN: "adm-0123456789abcdefghij", RPC_URL: "" };
    const app = createApp();
    const anon = await app.fetch(
      new Request("https://skills.test/api/admin/reconcile", { method: "POST" }),
      e,
    );
    expect(anon.status).toBe(401);
    const res = await app.fetch(
      new Request("https://skills.test/api/admin/reconcile", {
        method: "POST",
        headers: { authorization: "Bearer adm-0123456789abcdefghij" },
      }),
      e,
    );
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ skipped: "RPC_URL is not set", checked: 0 });
    // A decision of its own to be shown: the view listed only what earlier tests had decided, and
    // was empty when this test ran first (shuffled).
    const ref = `view-${crypto.randomUUID()}`;
    await env.DB.prepare(
      `INSERT INTO reconciliations (kind, ref, request_id, outcome, evidence, tx_hash, block_number, created_at)
       VALUES ('payment', ?1, ?1, 'released', 'test evidence', NULL, NULL, ?2)`,
    )
      .bind(ref, Date.now())
      .run();
    const view = await app.fetch(
      new Request("https://skills.test/api/admin/payments", {
        headers: { authorization: "Bearer adm-0123456789abcdefghij" },
      }),
      e,
    );
    const body = await view.json<{ reconciliations: { ref: string; outcome: string; evidence: string }[] }>();
    expect(body.reconciliations.find((r) => r.ref === ref)).toMatchObject({
      outcome: "released",
      evidence: "test evidence",
    });
  });
});
