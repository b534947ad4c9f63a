import { env } from "cloudflare:test";
import { keccak256, toHex } from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { reconcile } from "../../src/payments/reconcile";
import { quantity, rpcBlock, word } from "../fixtures/rpc-block";

/**
 * A payer who cancels an authorization while its settlement is unconfirmed (FiatToken's
 * cancelAuthorization: authorizationState becomes true and only AuthorizationCanceled is emitted),
 * read through the real rpcChainReader over a JSON-RPC double that answers as a node does. Each
 * test reconciles a network of its own, so rows other files leave in the shared D1 are not read.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const nowS = () => Math.floor(Date.now() / 1000);
const USDC = env.USDC_ADDRESS.toLowerCase();
const HEAD = 30_000_000;
// FiatToken's EIP3009.sol events, both (address indexed authorizer, bytes32 indexed nonce).
const AUTHORIZATION_USED = keccak256(toHex("AuthorizationUsed(address,bytes32)"));
const AUTHORIZATION_CANCELED = keccak256(toHex("AuthorizationCanceled(address,bytes32)"));

type RpcLog = { address: string; topics: string[]; blockNumber: number; transactionHash: string };
type Filter = { address: string; topics: (string | string[] | null)[]; fromBlock: string; toBlock: string };

let chains = 0;
/**
 * A Base-like node (2 s blocks, head at block 30,000,000 now): authorizationState answers from
 * `spent` (the block each nonce was spent in), eth_getLogs filters `logs` by address, topics (an array is an OR) and block range.
 */
function node() {
  const id = 920_000 + ++chains;
  const rpcUrl = `https://rpc.cancel-${id}.test`;
  const network = `eip155:${id}`;
  const spent = new Map<string, number>();
  const logs: RpcLog[] = [];
  const calls: { method: string; params: unknown[] }[] = [];
  const headTime = nowS();
  const block = (n: number) => rpcBlock(n, HEAD, headTime);
  const matches = (l: RpcLog, f: Filter) =>
    l.address.toLowerCase() === f.address.toLowerCase() &&
    l.blockNumber >= Number(f.fromBlock) &&
    l.blockNumber <= Number(f.toBlock) &&
    f.topics.every((t, i) => t === null || (Array.isArray(t) ? t : [t]).includes(l.topics[i] as string));
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(rpcUrl)) return real(input, init);
    const body = await req.json<{ id: number; method: string; params: unknown[] }>();
    calls.push({ method: body.method, params: body.params });
    const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: body.id, result });
    switch (body.method) {
      case "eth_chainId":
        return reply(quantity(id));
      case "eth_getBlockByNumber": {
        const tag = body.params[0] as string;
        return reply(block(tag === "latest" ? HEAD : Number(tag)));
      }
      case "eth_call": {
        // authorizationState(address authorizer, bytes32 nonce)
        const data = (body.params[0] as { data: string }).data;
        const who = `0x${data.slice(10 + 24, 10 + 64)}`;
        const nonce = `0x${data.slice(10 + 64, 10 + 128)}`;
        const tag = body.params[1];
        const at = typeof tag === "string" && tag.startsWith("0x") ? Number(tag) : HEAD;
        return reply(word((spent.get(`${who}:${nonce}`) ?? Number.POSITIVE_INFINITY) <= at ? "1" : "0"));
      }
      case "eth_getLogs": {
        const f = body.params[0] as Filter;
        return reply(
          logs
            .filter((l) => matches(l, f))
            .map((l, i) => ({
              ...l,
              data: "0x",
              blockNumber: quantity(l.blockNumber),
              blockHash: word(l.blockNumber.toString(16)),
              transactionIndex: "0x0",
              logIndex: quantity(i),
              removed: false,
            })),
        );
      }
      default:
        return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: body.method } });
    }
  });
  /** What FiatToken's cancelAuthorization leaves on chain: the nonce spent, one AuthorizationCanceled log. */
  const cancel = (authorizer: string, nonce: string, blockNumber: number) => {
    const tx = hex(32);
    spent.set(`${authorizer.toLowerCase()}:${nonce.toLowerCase()}`, blockNumber);
    logs.push({
      address: USDC,
      topics: [AUTHORIZATION_CANCELED, word(authorizer), nonce.toLowerCase()],
      blockNumber,
      transactionHash: tx,
    });
    return tx;
  };
  const run = () => reconcile({ ...env, X402_NETWORK: network, RPC_URL: rpcUrl });
  const count = (method: string) => calls.filter((c) => c.method === method).length;
  return { network, spent, calls, cancel, run, count };
}

type Node = ReturnType<typeof node>;

/** A withheld call's claim ('failed'), as the payment gate records it. */
async function failedClaim(n: Node, o: { createdMs: number; validBefore: number }) {
  const payer = hex(20);
  const nonce = hex(32);
  const key = `${n.network}:${USDC}:${payer}:${nonce}`;
  const requestId = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout)
     VALUES (?1, ?2, 'sha256', 'failed', ?3, ?3, ?4, ?5, ?6, ?7, 3000, ?8, ?9, 2, 'none')`,
  )
    .bind(key, requestId, o.createdMs, payer, env.PAY_TO, USDC, n.network, nonce, o.validBefore)
    .run();
  return { key, payer, nonce, requestId };
}

const claimStatus = async (key: string) =>
  (
    await env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1")
      .bind(key)
      .first<{ status: string }>()
  )?.status;
const decision = (kind: string, ref: string) =>
  env.DB.prepare(
    "SELECT outcome, evidence, tx_hash, block_number FROM reconciliations WHERE kind = ?1 AND ref = ?2",
  )
    .bind(kind, ref)
    .first<{ outcome: string; evidence: string; tx_hash: string | null; block_number: number | null }>();

describe("a cancelled authorization is decided from its AuthorizationCanceled log", () => {
  it("a payer who cancels while the settlement is unconfirmed: the claim is released on the first run, with the cancel as evidence", async () => {
    const n = node();
    // Paid a minute ago, cancelled on chain while the handler ran; still inside its validity.
    const c = await failedClaim(n, { createdMs: Date.now() - 60_000, validBefore: nowS() + 240 });
    const tx = n.cancel(c.payer, c.nonce, HEAD - 25);
    const summary = await n.run();
    expect(summary).toMatchObject({ checked: 1, released: 1, waiting: 0, settled: 0, errors: [] });
    expect(await claimStatus(c.key)).toBe("released");
    const d = await decision("payment", c.key);
    expect(d).toMatchObject({ outcome: "released", tx_hash: tx, block_number: HEAD - 25 });
    expect(d?.evidence).toMatch(/AuthorizationCanceled in tx .*can never settle/);
    // One eth_getLogs asked for both events; a cancel has no transfer to read, so no receipt.
    expect(n.count("eth_getLogs")).toBe(1);
    const filter = n.calls.find((c) => c.method === "eth_getLogs")?.params[0] as Filter | undefined;
    expect(filter?.topics[0]).toEqual([AUTHORIZATION_USED, AUTHORIZATION_CANCELED]);
    expect(n.count("eth_getTransactionReceipt")).toBe(0);
    // Decided: the next run reads nothing for it.
    n.calls.length = 0;
    expect(await n.run()).toMatchObject({ checked: 0 });
    expect(n.calls.filter((c) => c.method !== "eth_chainId" && c.method !== "eth_getBlockByNumber")).toEqual(
      [],
    );
  });

  it("a partner authorization the operating wallet signed and then cancelled is not landed: the partner is owed its share after all", async () => {
    const n = node();
    const wallet = hex(20);
    const nonce = hex(32);
    const requestId = crypto.randomUUID();
    const { meta } = await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status,
         created_at, payer, pay_to, asset, network, auth_nonce, valid_before)
       VALUES (?1, 'textkit', 'summarize', 20000, NULL, 200, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
      .bind(requestId, Date.now() - 60_000, wallet, hex(20), USDC, n.network, nonce, nowS() + 240)
      .run();
    const id = Number(meta.last_row_id);
    // The served call counted as paid upstream while the authorization could still land.
    await env.DB.prepare(
      `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash,
         request_id, paid_upstream, created_at)
       VALUES ('textkit', 'summarize', 20000, 40000, ?1, ?2, ?3, 1, ?4)`,
    )
      .bind(hex(20), hex(32), requestId, Date.now())
      .run();
    // The caller's refund kept the share back for the partner, which can no longer collect it.
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, error, created_at, updated_at)
       VALUES (?1, ?2, 40000, 20000, 'upstream failed after the partner was paid', 'refunded', NULL, ?3, ?3)`,
    )
      .bind(requestId, hex(20), Date.now())
      .run();
    const tx = n.cancel(wallet, nonce, HEAD - 10);
    const summary = await n.run();
    expect(summary).toMatchObject({ upstream_not_landed: 1, waiting: 0, errors: [] });
    const row = await env.DB.prepare("SELECT chain_status, tx_hash FROM upstream_payments WHERE id = ?1")
      .bind(id)
      .first();
    // tx_hash stays what the partner reported (none): the cancel moved nothing to it.
    expect(row).toEqual({ chain_status: "not_landed", tx_hash: null });
    expect(await decision("upstream", String(id))).toMatchObject({ outcome: "not_landed", tx_hash: tx });
    const payout = await env.DB.prepare("SELECT paid_upstream FROM payout_ledger WHERE request_id = ?1")
      .bind(requestId)
      .first<{ paid_upstream: number }>();
    expect(payout?.paid_upstream).toBe(0);
    // The withheld share goes back to the caller, and its reason says why the partner cannot collect it.
    const returned = await env.DB.prepare("SELECT amount_micro, reason FROM refunds WHERE request_id = ?1")
      .bind(`${requestId}:withheld`)
      .first<{ amount_micro: number; reason: string }>();
    expect(returned?.amount_micro).toBe(20000);
    expect(returned?.reason).toMatch(/authorization was cancelled, so the partner can no longer collect it/);
  });
});

describe("a cancel made after the authorization expired, outside the blocks searched", () => {
  it("is released: the nonce was still unused at a block past valid_before, so no transfer used it", async () => {
    const n = node();
    const createdMs = Date.now() - 3 * 3_600_000;
    const c = await failedClaim(n, { createdMs, validBefore: Math.floor(createdMs / 1000) + 300 });
    // Cancelled ten minutes ago (a wallet's "revoke" tool, say), hours after it expired.
    n.cancel(c.payer, c.nonce, HEAD - 300);
    const summary = await n.run();
    expect(summary).toMatchObject({ released: 1, waiting: 0, errors: [] });
    expect(await claimStatus(c.key)).toBe("released");
    expect((await decision("payment", c.key))?.evidence).toMatch(/unused at block \d+ .*past valid_before/);
  });

  it("a nonce used before it expired, its log not found, still waits: its payment may have landed", async () => {
    const n = node();
    const createdMs = Date.now() - 3 * 3_600_000;
    const validBefore = Math.floor(createdMs / 1000) + 300;
    const c = await failedClaim(n, { createdMs, validBefore });
    // Spent inside its lifetime (block time before valid_before), and no log anywhere.
    n.spent.set(`${c.payer}:${c.nonce}`, HEAD - (nowS() - validBefore + 100) / 2);
    expect(await n.run()).toMatchObject({ waiting: 1, released: 0, errors: [] });
    expect(await claimStatus(c.key)).toBe("failed");
  });
});

describe("a nonce the chain shows spent with no log found costs what any row costs, however old", () => {
  it.each([
    ["30 days", 30],
    ["a year", 365],
  ])(
    "a claim from %s ago waits (never released: its payment may have landed) after at most two eth_getLogs",
    async (_n, days) => {
      const n = node();
      const createdMs = Date.now() - days * 86_400_000;
      const c = await failedClaim(n, { createdMs, validBefore: Math.floor(createdMs / 1000) + 300 });
      // Spent, but its log is not where the search looks (a provider that pruned it, say).
      n.spent.set(`${c.payer}:${c.nonce}`, 0);
      for (let run = 0; run < 2; run++) {
        n.calls.length = 0;
        expect(await n.run()).toMatchObject({ checked: 1, waiting: 1, released: 0, errors: [] });
        expect(n.count("eth_getLogs")).toBeLessThanOrEqual(2);
      }
      expect(await claimStatus(c.key)).toBe("failed");
      // The blocks searched hold the claim's whole lifetime (2 s blocks from the head's time).
      const filters = n.calls.filter((c) => c.method === "eth_getLogs").map((c) => c.params[0] as Filter);
      const from = Math.min(...filters.map((f) => Number(f.fromBlock)));
      const to = Math.max(...filters.map((f) => Number(f.toBlock)));
      const blockAt = (s: number) => HEAD - Math.ceil((nowS() - s) / 2);
      expect(from).toBeLessThanOrEqual(blockAt(createdMs / 1000 - 360));
      expect(to).toBeGreaterThanOrEqual(blockAt(createdMs / 1000 + 360));
    },
  );
});
