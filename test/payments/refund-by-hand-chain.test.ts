import { env } from "cloudflare:test";
import { keccak256, toHex } from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { refundNonce } from "../../src/payments/refunds";
import { quantity, rpcBlock, word } from "../fixtures/rpc-block";
import { adminCookie } from "../helpers";

/**
 * A refund the operating wallet sent is recorded as paid by hand only once the chain, read at its
 * head, shows that send can never pay: its authorization unused and the head past valid_before (or
 * its nonce spent on something else, which a person decides). The chain is a JSON-RPC double read
 * through the real rpcChainReader (RPC_URL), as a node answers it.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const token = "refund-by-hand-chain-t0ken";
const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const nowS = () => Math.floor(Date.now() / 1000);
const USDC = env.USDC_ADDRESS.toLowerCase();
const WALLET = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";
const PAYER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const CHAIN_ID = Number(env.X402_NETWORK.split(":")[1]);
const HEAD = 30_000_000;
const AUTHORIZATION_USED = keccak256(toHex("AuthorizationUsed(address,bytes32)"));
const AUTHORIZATION_CANCELED = keccak256(toHex("AuthorizationCanceled(address,bytes32)"));
const TRANSFER = keccak256(toHex("Transfer(address,address,uint256)"));

type RpcLog = { topics: string[]; blockNumber: number; transactionHash: string; data?: string };
type Filter = { topics: (string | string[] | null)[]; fromBlock: string; toBlock: string };

let nodes = 0;
/**
 * A Base-like full node (2 s blocks), its head `lagS` seconds behind our clock: authorizationState
 * from `spent` (the block each nonce was spent in), older state only for blocks it still holds;
 * eth_getLogs over `logs`. `down`: every request fails.
 */
function node(o: { lagS?: number; chainId?: number; down?: boolean } = {}) {
  const url = `https://rpc.hand-${++nodes}.test/v2/KEY`;
  const headTime = nowS() - (o.lagS ?? 0);
  const spent = new Map<string, number>();
  const logs: RpcLog[] = [];
  const calls: string[] = [];
  const block = (n: number) => rpcBlock(n, HEAD, headTime);
  const shaped = (l: RpcLog, i: number) => ({
    address: USDC,
    data: "0x",
    ...l,
    blockNumber: quantity(l.blockNumber),
    blockHash: word(l.blockNumber.toString(16)),
    transactionIndex: "0x0",
    logIndex: quantity(i),
    removed: false,
  });
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(url)) return real(input, init);
    const body = await req.json<{ id: number; method: string; params: unknown[] }>();
    calls.push(body.method);
    if (o.down) return new Response("bad gateway", { status: 502 });
    const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: body.id, result });
    switch (body.method) {
      case "eth_chainId":
        return reply(quantity(o.chainId ?? CHAIN_ID));
      case "eth_getBlockByNumber": {
        const tag = body.params[0] as string;
        return reply(block(tag === "latest" ? HEAD : Number(tag)));
      }
      case "eth_call": {
        // authorizationState(address authorizer, bytes32 nonce)
        const data = (body.params[0] as { data: string }).data;
        const nonce = `0x${data.slice(10 + 64, 10 + 128)}`;
        const tag = body.params[1];
        const at = typeof tag === "string" && tag.startsWith("0x") ? Number(tag) : HEAD;
        // A full node: state behind its last 128 blocks is gone.
        if (at < HEAD - 128)
          return Response.json({
            jsonrpc: "2.0",
            id: body.id,
            error: { code: -32000, message: "missing trie node" },
          });
        return reply(word((spent.get(nonce) ?? Number.POSITIVE_INFINITY) <= at ? "1" : "0"));
      }
      case "eth_getLogs": {
        const f = body.params[0] as Filter;
        return reply(
          logs
            .map(shaped)
            .filter(
              (l) =>
                Number(l.blockNumber) >= Number(f.fromBlock) &&
                Number(l.blockNumber) <= Number(f.toBlock) &&
                f.topics.every(
                  (t, i) => t === null || (Array.isArray(t) ? t : [t]).includes(l.topics[i] as string),
                ),
            ),
        );
      }
      case "eth_getTransactionReceipt": {
        const hash = (body.params[0] as string).toLowerCase();
        const own = logs.map(shaped).filter((l) => l.transactionHash === hash);
        return reply({
          transactionHash: hash,
          blockHash: own[0]?.blockHash,
          blockNumber: own[0]?.blockNumber,
          transactionIndex: "0x0",
          from: hex(20),
          to: USDC,
          cumulativeGasUsed: "0x1",
          gasUsed: "0x1",
          effectiveGasPrice: "0x1",
          status: "0x1",
          type: "0x2",
          contractAddress: null,
          logsBloom: `0x${"00".repeat(256)}`,
          logs: own,
        });
      }
      default:
        return Response.json({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: body.method } });
    }
  });
  /** The wallet's refund authorization landing in `blockNumber`: its AuthorizationUsed and Transfer. */
  const land = (nonce: string, blockNumber: number, amount: number) => {
    const tx = hex(32);
    spent.set(nonce, blockNumber);
    logs.push(
      { topics: [AUTHORIZATION_USED, word(WALLET), nonce], blockNumber, transactionHash: tx },
      {
        topics: [TRANSFER, word(WALLET), word(PAYER)],
        data: word(amount.toString(16)),
        blockNumber,
        transactionHash: tx,
      },
    );
    return tx;
  };
  const cancel = (nonce: string, blockNumber: number) => {
    spent.set(nonce, blockNumber);
    logs.push({
      topics: [AUTHORIZATION_CANCELED, word(WALLET), nonce],
      blockNumber,
      transactionHash: hex(32),
    });
  };
  return { url, spent, calls, land, cancel };
}

/** A refund the wallet sent (its authorization valid until `validBefore`) that did not settle. */
async function sentRefund(validBefore: number, hold: string | null = null) {
  const requestId = crypto.randomUUID();
  const nonce = await refundNonce(requestId);
  await env.DB.prepare(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
       hold, auth_nonce, asset, network, auth_from, valid_before, error)
     VALUES (?1, ?2, 3000, 0, 'test refund', 'owed', ?3, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'facilitator error: timeout')`,
  )
    .bind(
      requestId,
      PAYER,
      Date.now() - 900_000,
      hold,
      nonce,
      env.USDC_ADDRESS,
      env.X402_NETWORK,
      WALLET,
      validBefore,
    )
    .run();
  return { requestId, nonce };
}
const row = (requestId: string) =>
  env.DB.prepare("SELECT status, tx_hash, resolved_at FROM refunds WHERE request_id = ?1")
    .bind(requestId)
    .first<Record<string, unknown>>();
/** The block holding time `t` on a node whose head is `lagS` behind our clock. */
const blockAt = (t: number, lagS = 0) => HEAD - Math.ceil((nowS() - lagS - t) / 2);

const resolve = (rpcUrl: string | undefined, requestId: string, body: unknown) =>
  createApp().fetch(
    new Request(`https://skills.test/api/admin/resolve/refunds/${encodeURIComponent(requestId)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { ...env, ADMIN_TOKEN: token, RPC_URL: rpcUrl },
  );

describe("a refund the operating wallet sent, recorded by hand", () => {
  it("its authorization spent on chain with no log found: 409, nothing recorded (the refund was paid)", async () => {
    const n = node();
    const validBefore = nowS() - 600;
    const r = await sentRefund(validBefore);
    // Spent within its lifetime; the log is nowhere this node can find.
    n.spent.set(r.nonce, blockAt(validBefore - 100));
    const res = await resolve(n.url, r.requestId, { tx_hash: hex(32), amount_micro: 3000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(
      /authorization is spent on chain: this refund was paid \(its transaction is not known yet\); nothing recorded/,
    );
    expect(await row(r.requestId)).toMatchObject({ status: "owed", tx_hash: null, resolved_at: null });
  });

  it("its authorization landed (log and transfer found): 409 naming the wallet's transaction", async () => {
    const n = node();
    const validBefore = nowS() - 600;
    const r = await sentRefund(validBefore);
    const tx = n.land(r.nonce, blockAt(validBefore - 100), 3000);
    const res = await resolve(n.url, r.requestId, { tx_hash: hex(32), amount_micro: 3000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toContain(
      `landed from the operating wallet (tx ${tx})`,
    );
    expect(await row(r.requestId)).toMatchObject({ status: "owed", resolved_at: null });
  });

  it("unused at a head past valid_before: it can never land, so it is recorded", async () => {
    const n = node();
    const r = await sentRefund(nowS() - 120);
    const tx = hex(32);
    const res = await resolve(n.url, r.requestId, { tx_hash: tx, amount_micro: 3000 });
    expect(res.status).toBe(200);
    expect(n.calls).toContain("eth_call");
    expect(await row(r.requestId)).toMatchObject({ status: "refunded", tx_hash: tx });
  });

  it("a head lagging our clock, not yet past valid_before: 409, it may still land", async () => {
    const n = node({ lagS: 300 });
    const r = await sentRefund(nowS() - 120);
    const res = await resolve(n.url, r.requestId, { tx_hash: hex(32), amount_micro: 3000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/may still land/);
    expect(await row(r.requestId)).toMatchObject({ status: "owed", resolved_at: null });
  });

  it("a held refund whose nonce was cancelled (nothing moved) is a person's to record", async () => {
    const n = node();
    const validBefore = nowS() - 600;
    const r = await sentRefund(validBefore, "authorizationState: used; AuthorizationCanceled in tx …");
    n.cancel(r.nonce, blockAt(validBefore - 100));
    const res = await resolve(n.url, r.requestId, { tx_hash: hex(32), amount_micro: 3000 });
    expect(res.status).toBe(200);
    expect(await row(r.requestId)).toMatchObject({ status: "refunded" });
  });

  it("without RPC_URL, an RPC that fails or one of another chain: 503 with Retry-After, nothing recorded", async () => {
    const r = await sentRefund(nowS() - 600);
    for (const rpc of [undefined, node({ down: true }).url, node({ chainId: 1 }).url]) {
      const res = await resolve(rpc, r.requestId, { tx_hash: hex(32), amount_micro: 3000 });
      expect(res.status).toBe(503);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      const detail = (await res.json<{ detail: string }>()).detail;
      expect(detail).toMatch(/cannot check the chain for the wallet's send; nothing recorded/);
      // The provider's key in RPC_URL's path is never quoted.
      expect(detail).not.toContain("KEY");
    }
    expect(await row(r.requestId)).toMatchObject({ status: "owed", resolved_at: null });
  });

  it("the dashboard's Record refund form checks the chain the same way", async () => {
    const n = node();
    const validBefore = nowS() - 600;
    const r = await sentRefund(validBefore);
    n.spent.set(r.nonce, blockAt(validBefore - 100));
    const dashEnv = { ...env, ADMIN_TOKEN: token, RPC_URL: n.url };
    const send = (path: string, init: RequestInit) =>
      createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), dashEnv);
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const action = `/admin/refunds/${r.requestId}/resolve`;
    const form = html.match(new RegExp(`<form method="post" action="${action}"[\\s\\S]*?</form>`))?.[0] ?? "";
    const csrf = form.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
    const res = await send(action, {
      method: "POST",
      headers: { cookie, origin: "https://skills.test" },
      body: new URLSearchParams({ csrf, tx_hash: hex(32), amount_micro: "3000" }),
    });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/spent on chain/);
    expect(await row(r.requestId)).toMatchObject({ status: "owed", resolved_at: null });
  });
});
