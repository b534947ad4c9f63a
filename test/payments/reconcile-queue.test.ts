import { env } from "cloudflare:test";
import { encodeFunctionData, parseAbi } from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { reconcile } from "../../src/payments/reconcile";
import { type ChainReader, type FoundUse, rpcChainReader } from "../../src/payments/reconcile-chain";

/**
 * Which rows a run takes from its queues under steady traffic. Each test reconciles a network of
 * its own, so the rows other files leave in the shared D1 (on X402_NETWORK) are never in its way.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const nowS = () => Math.floor(Date.now() / 1000);
const WALLET = hex(20);
const PARTNER = hex(20);
const PAYER = hex(20);
const USDC = env.USDC_ADDRESS;

let chains = 0;
/** A chain of its own (id, network) whose answers the test sets per nonce; it records each read. */
function chain() {
  const id = 910_000 + ++chains;
  const network = `eip155:${id}`;
  const landed = new Map<string, FoundUse>();
  /** Nonces used on chain whose log the search does not find: such a row waits, run after run. */
  const unfound = new Set<string>();
  const reads: { nonce: string; block: number | undefined }[] = [];
  const reader: ChainReader = {
    chainId: async () => id,
    head: async () => ({ number: 500, timestamp: nowS(), blockSeconds: 2 }),
    blockTime: async (n) => nowS() - (500 - n) * 2,
    authorizationUsed: async (_asset, _who, nonce, block) => {
      reads.push({ nonce, block });
      return landed.has(nonce) || unfound.has(nonce);
    },
    findUse: async (_asset, _who, nonce) => landed.get(nonce),
  };
  const run = () => reconcile({ ...env, X402_NETWORK: network, RPC_URL: "x" }, reader);
  return { network, landed, unfound, reads, reader, run };
}

type Chain = ReturnType<typeof chain>;

/** A partner call's upstream authorization, as pay-partner records it (checked_at NULL). */
async function upstream(
  c: Chain,
  o: { validBefore: number; createdMs?: number; checkedMs?: number | null; landed?: boolean },
) {
  const nonce = hex(32);
  const requestId = crypto.randomUUID();
  const { meta } = await env.DB.prepare(
    `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status,
       created_at, payer, pay_to, asset, network, auth_nonce, valid_before, checked_at)
     VALUES (?1, 'textkit', 'summarize', 20000, NULL, 200, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
  )
    .bind(
      requestId,
      o.createdMs ?? Date.now(),
      WALLET,
      PARTNER,
      USDC,
      c.network,
      nonce,
      o.validBefore,
      o.checkedMs ?? null,
    )
    .run();
  if (o.landed)
    c.landed.set(nonce, {
      txHash: hex(32),
      blockNumber: 499,
      transfer: { from: WALLET, to: PARTNER, value: 20000n },
    });
  return { id: Number(meta.last_row_id), nonce, requestId };
}

const chainStatus = async (id: number) =>
  (
    await env.DB.prepare("SELECT chain_status FROM upstream_payments WHERE id = ?1")
      .bind(id)
      .first<{ chain_status: string | null }>()
  )?.chain_status;

/** A withheld call's claim ('failed'), as the payment gate records it. */
async function failedClaim(c: Chain, o: { validBefore: number; createdMs?: number; checkedMs?: number }) {
  const nonce = hex(32);
  const key = `${c.network}:${USDC}:${PAYER}:${nonce}`.toLowerCase();
  const created = o.createdMs ?? Date.now();
  await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout, checked_at)
     VALUES (?1, ?2, 'sha256', 'failed', ?3, ?3, ?4, ?5, ?6, ?7, 3000, ?8, ?9, 2, NULL, ?10)`,
  )
    .bind(
      key,
      crypto.randomUUID(),
      created,
      PAYER,
      env.PAY_TO,
      USDC,
      c.network,
      nonce,
      o.validBefore,
      o.checkedMs ?? null,
    )
    .run();
  return { key, nonce };
}

describe("reconciliation takes rows it can decide before rows it can only look at", () => {
  it("an expired partner authorization looked at while still valid is decided on the next run, however many new rows arrive", async () => {
    const c = chain();
    // Looked at once while its authorization was valid (so it went to the back), expired since,
    // and never used: the partner can no longer collect it.
    const old = await upstream(c, {
      createdMs: Date.now() - 3_600_000,
      validBefore: nowS() - 3300,
      checkedMs: Date.now() - 3_500_000,
    });
    // The served call counted as paid upstream, so its partner is owed nothing until this is decided.
    await env.DB.prepare(
      `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash,
         request_id, paid_upstream, created_at)
       VALUES ('textkit', 'summarize', 20000, 40000, ?1, ?2, ?3, 1, ?4)`,
    )
      .bind(hex(20), hex(32), old.requestId, Date.now() - 3_600_000)
      .run();
    // Steady traffic: every run, a batch's worth (40) of new paid-upstream calls, settled at once.
    for (let run = 0; run < 6; run++) {
      const fresh = await Promise.all(
        Array.from({ length: 40 }, () => upstream(c, { validBefore: nowS() + 300, landed: true })),
      );
      const summary = await c.run();
      expect(summary.errors).toEqual([]);
      if (run === 0) {
        // Read first, before any new row: due rows lead each batch, so no number of new rows (more
        // than a run's budget takes) keeps it out of the run.
        expect(c.reads[0]?.nonce).toBe(old.nonce);
        expect(summary.upstream_not_landed).toBe(1);
        // The new rows were looked at too, and landed: all 40, since a run takes a second batch
        // while its budget lasts (reconcile-budget.ts).
        expect(summary.upstream_landed).toBe(40);
      }
      expect(fresh.filter((f) => !c.reads.some((r) => r.nonce === f.nonce)).length).toBeLessThanOrEqual(1);
    }
    expect(await chainStatus(old.id)).toBe("not_landed");
    const payout = await env.DB.prepare("SELECT paid_upstream FROM payout_ledger WHERE request_id = ?1")
      .bind(old.requestId)
      .first<{ paid_upstream: number }>();
    expect(payout?.paid_upstream).toBe(0);
    // Every new row was decided landed a run or so after it arrived: nothing piles up.
    const open = await env.DB.prepare(
      "SELECT count(*) AS n FROM upstream_payments WHERE network = ?1 AND chain_status IS NULL",
    )
      .bind(c.network)
      .first<{ n: number }>();
    expect(open?.n).toBeLessThanOrEqual(1);
  });

  it("an expired withheld claim is decided on the next run while a facilitator outage keeps adding new failed ones", async () => {
    const c = chain();
    const old = await failedClaim(c, {
      createdMs: Date.now() - 3_600_000,
      validBefore: nowS() - 3300,
      checkedMs: Date.now() - 3_500_000,
    });
    for (let run = 0; run < 3; run++) {
      // Still valid and not landed yet: each can only be looked at. More a run than its budget
      // takes (~75 such rows), so the old row is decided only if it comes before them.
      await Promise.all(Array.from({ length: 100 }, () => failedClaim(c, { validBefore: nowS() + 300 })));
      const summary = await c.run();
      expect(summary.errors).toEqual([]);
      expect(summary.more.claims).toBe(true);
      if (run === 0) {
        expect(summary.released).toBe(1);
        expect(c.reads[0]?.nonce).toBe(old.nonce);
      }
    }
    const row = await env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1")
      .bind(old.key)
      .first<{ status: string }>();
    expect(row?.status).toBe("released");
  });

  it("a backlog of expired rows that stay undecided does not keep new rows from being looked at", async () => {
    const c = chain();
    // More expired rows than a batch, each used on chain with its log not found: they wait for ever.
    const stuck = await Promise.all(
      Array.from({ length: 45 }, () =>
        upstream(c, { createdMs: Date.now() - 600_000, validBefore: nowS() - 300 }),
      ),
    );
    for (const s of stuck) c.unfound.add(s.nonce);
    const fresh = await upstream(c, { validBefore: nowS() + 300, landed: true });
    for (let run = 0; run < 3; run++) expect((await c.run()).errors).toEqual([]);
    expect(await chainStatus(fresh.id)).toBe("landed");
    // Every expired row was looked at too.
    expect(stuck.every((s) => c.reads.some((r) => r.nonce === s.nonce))).toBe(true);
  });

  it("the chain is read at the head whose time decides expiry, not at whatever block a node has", async () => {
    const c = chain();
    await upstream(c, { validBefore: nowS() - 120 });
    await failedClaim(c, { validBefore: nowS() - 120 });
    await c.run();
    expect(c.reads.length).toBe(2);
    expect(c.reads.map((r) => r.block)).toEqual([500, 500]);
  });
});

describe("rpcChainReader pins authorizationState to a block (viem over a JSON-RPC double)", () => {
  it("eth_call names the head's block number, not latest", async () => {
    const RPC = "https://rpc.pinned.test";
    const calls: unknown[][] = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (!req.url.startsWith(RPC)) return real(input, init);
      const body = await req.json<{ id: number; method: string; params: unknown[] }>();
      if (body.method === "eth_call") {
        calls.push(body.params);
        return Response.json({ jsonrpc: "2.0", id: body.id, result: `0x${"0".repeat(63)}1` });
      }
      return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: body.method } });
    });
    const reader = await rpcChainReader(RPC);
    const [asset, who, nonce] = [hex(20), hex(20), hex(32)];
    expect(await reader.authorizationUsed(asset, who, nonce, 1_234_567)).toBe(true);
    expect(calls).toHaveLength(1);
    const [tx, block] = calls[0] as [{ to: string; data: string }, string];
    expect(block).toBe("0x12d687");
    expect(tx.to.toLowerCase()).toBe(asset);
    expect(tx.data).toBe(
      encodeFunctionData({
        abi: parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]),
        functionName: "authorizationState",
        args: [who as `0x${string}`, nonce as `0x${string}`],
      }),
    );
  });
});
