import type { Bindings } from "../env";
import { partnerById, pricingConfig } from "../partners/listing";
import { servicePrices } from "../partners/pricing";
import { MAX_TIMEOUT_SECONDS } from "./x402-gate";

/**
 * Reconciliation against the chain: authorizations whose settlement was never confirmed
 * (payment_nonces 'failed', or 'running' past their validity) and authorizations the operating
 * wallet handed to partners (upstream_payments). The USDC contract decides: EIP-3009
 * `authorizationState(authorizer, nonce)` says whether the nonce was used, and the
 * AuthorizationUsed + Transfer logs of that transaction say where the money went.
 */

/** What one authorization promises. */
export interface Terms {
  payer: string;
  payTo: string;
  asset: string;
  amountAtomic: bigint;
  nonce: string;
  validBefore: number;
}

/** The transaction that used a nonce, and the USDC Transfer out of the authorizer in it. */
export interface FoundUse {
  txHash: string;
  blockNumber: number;
  transfer: { from: string; to: string; value: bigint } | undefined;
}

export interface ChainView {
  used: boolean;
  /** Searched only when `used`; undefined when no AuthorizationUsed log was found in the range. */
  found: FoundUse | undefined;
  /** Timestamp of the latest block: an authorization is dead once the chain has passed valid_before. */
  headTime: number;
  searched?: { fromBlock: number; toBlock: number };
}

export type Decision =
  | { outcome: "paid"; txHash: string; blockNumber: number; evidence: string }
  | { outcome: "unpaid"; txHash?: string; blockNumber?: number; evidence: string }
  | { outcome: "wait"; evidence: string };

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The decision from what the chain says; pure, so every branch is tested without a chain. */
export function decide(t: Terms, chain: ChainView): Decision {
  if (chain.used) {
    const f = chain.found;
    if (!f) {
      const range = chain.searched ? ` in blocks ${chain.searched.fromBlock}-${chain.searched.toBlock}` : "";
      return {
        outcome: "wait",
        evidence: `authorizationState: used, but no AuthorizationUsed log found${range}; retried next run`,
      };
    }
    const tr = f.transfer;
    if (tr && same(tr.from, t.payer) && same(tr.to, t.payTo) && tr.value === t.amountAtomic) {
      return {
        outcome: "paid",
        txHash: f.txHash,
        blockNumber: f.blockNumber,
        evidence: `authorizationState: used; AuthorizationUsed and Transfer ${t.amountAtomic} to ${t.payTo} in tx ${f.txHash} (block ${f.blockNumber})`,
      };
    }
    // The signer spent the nonce on another transfer or cancelled it: this authorization can never pay.
    return {
      outcome: "unpaid",
      txHash: f.txHash,
      blockNumber: f.blockNumber,
      evidence: tr
        ? `authorizationState: used by tx ${f.txHash} for a different transfer (${tr.value} to ${tr.to}); this authorization can never settle`
        : `authorizationState: used by tx ${f.txHash} without a transfer (cancelled); this authorization can never settle`,
    };
  }
  if (chain.headTime >= t.validBefore) {
    return {
      outcome: "unpaid",
      evidence: `authorizationState: unused, and the chain passed valid_before ${t.validBefore} (latest block time ${chain.headTime})`,
    };
  }
  return {
    outcome: "wait",
    evidence: `authorizationState: unused, valid until ${t.validBefore}; checked again next run`,
  };
}

export interface ChainReader {
  chainId(): Promise<number>;
  head(): Promise<{ number: number; timestamp: number; blockSeconds: number }>;
  authorizationUsed(asset: string, authorizer: string, nonce: string): Promise<boolean>;
  findUse(
    asset: string,
    authorizer: string,
    nonce: string,
    fromBlock: number,
    toBlock: number,
  ): Promise<FoundUse | undefined>;
}

/** A public RPC usually refuses eth_getLogs over more blocks than this in one call. */
const LOG_CHUNK_BLOCKS = 5_000;

/** viem's public client over `RPC_URL`, loaded only when the reconciler runs. */
export async function rpcChainReader(rpcUrl: string): Promise<ChainReader> {
  const { createPublicClient, http, parseAbi, parseEventLogs } = await import("./rpc-client");
  const abi = parseAbi([
    "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
    "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
    "event Transfer(address indexed from, address indexed to, uint256 value)",
  ]);
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 1 }) });
  const hex = (v: string) => v as `0x${string}`;
  return {
    chainId: () => client.getChainId(),
    async head() {
      const latest = await client.getBlock({ blockTag: "latest" });
      const refNumber = latest.number > 1000n ? latest.number - 1000n : 0n;
      const ref = refNumber === latest.number ? latest : await client.getBlock({ blockNumber: refNumber });
      const blocks = Number(latest.number - ref.number);
      return {
        number: Number(latest.number),
        timestamp: Number(latest.timestamp),
        blockSeconds: blocks > 0 ? Number(latest.timestamp - ref.timestamp) / blocks : 0,
      };
    },
    authorizationUsed: (asset, authorizer, nonce) =>
      client.readContract({
        address: hex(asset),
        abi,
        functionName: "authorizationState",
        args: [hex(authorizer), hex(nonce)],
      }),
    async findUse(asset, authorizer, nonce, fromBlock, toBlock) {
      for (let start = fromBlock; start <= toBlock; start += LOG_CHUNK_BLOCKS) {
        const logs = await client.getLogs({
          address: hex(asset),
          event: abi[1],
          args: { authorizer: hex(authorizer), nonce: hex(nonce) },
          fromBlock: BigInt(start),
          toBlock: BigInt(Math.min(toBlock, start + LOG_CHUNK_BLOCKS - 1)),
        });
        const log = logs[0];
        if (!log?.transactionHash) continue;
        const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
        const transfers = parseEventLogs({ abi, eventName: "Transfer", logs: receipt.logs }).filter(
          (l) => same(l.address, asset) && same(l.args.from, authorizer),
        );
        const t = transfers[0];
        return {
          txHash: log.transactionHash,
          blockNumber: Number(receipt.blockNumber),
          transfer: t ? { from: t.args.from, to: t.args.to, value: t.args.value } : undefined,
        };
      }
      return undefined;
    },
  };
}

/**
 * Blocks that can hold the transfer: it was mined after the claim was made (minus the
 * authorization's whole validity, to be safe) and before valid_before. Block numbers are
 * estimated from the chain's average block time, with a wide margin on both sides.
 */
export function searchRange(
  head: { number: number; timestamp: number; blockSeconds: number },
  fromTime: number,
  toTime: number,
) {
  const at = (t: number) =>
    head.blockSeconds > 0 ? head.number - Math.ceil((head.timestamp - t) / head.blockSeconds) : 0;
  const margin = (n: number) => Math.ceil(Math.abs(n) * 0.1) + 100;
  const from = at(fromTime - MAX_TIMEOUT_SECONDS - 60);
  const to = head.blockSeconds > 0 ? at(toTime + 60) : head.number;
  return {
    fromBlock: Math.max(0, from - margin(head.number - from)),
    toBlock: Math.min(head.number, Math.max(0, to + margin(head.number - to))),
  };
}

interface NonceRow {
  nonce: string;
  request_id: string;
  resource: string;
  status: string;
  payer: string;
  pay_to: string;
  asset: string;
  network: string;
  amount_atomic: number;
  auth_nonce: string;
  valid_before: number;
  created_at: number;
}

interface UpstreamRow {
  id: number;
  request_id: string;
  payer: string;
  pay_to: string;
  asset: string;
  network: string;
  amount_micro: number;
  auth_nonce: string;
  valid_before: number;
  created_at: number;
}

/** Rows per run: each costs a few RPC calls, and a cron invocation has a subrequest budget. */
const BATCH = 40;

/**
 * 'failed' rows at once; 'running' ones only a minute after their authorization expired, so a
 * request still finishing its own settlement is never raced.
 */
function candidates(db: D1Database, network: string, nowMs: number) {
  return db
    .prepare(
      `SELECT nonce, request_id, resource, status, payer, pay_to, asset, network, amount_atomic, auth_nonce,
              valid_before, created_at
       FROM payment_nonces
       WHERE auth_nonce IS NOT NULL AND valid_before IS NOT NULL AND network = ?1
         AND (status = 'failed' OR (status = 'running' AND valid_before < ?2))
       ORDER BY updated_at LIMIT ?3`,
    )
    .bind(network, Math.floor(nowMs / 1000) - 60, BATCH)
    .all<NonceRow>();
}

function upstreamCandidates(db: D1Database, network: string) {
  return db
    .prepare(
      `SELECT id, request_id, payer, pay_to, asset, network, amount_micro, auth_nonce, valid_before, created_at
       FROM upstream_payments
       WHERE chain_status IS NULL AND auth_nonce IS NOT NULL AND valid_before IS NOT NULL AND network = ?1
       ORDER BY id LIMIT ?2`,
    )
    .bind(network, BATCH)
    .all<UpstreamRow>();
}

const logRow = (
  db: D1Database,
  kind: "payment" | "upstream",
  ref: string,
  requestId: string,
  outcome: string,
  d: Exclude<Decision, { outcome: "wait" }>,
  now: number,
) =>
  db
    .prepare(
      `INSERT INTO reconciliations (kind, ref, request_id, outcome, evidence, tx_hash, block_number, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (kind, ref) DO NOTHING`,
    )
    .bind(kind, ref, requestId, outcome, d.evidence, d.txHash ?? null, d.blockNumber ?? null, now);

/** A partner try call's payout row, as the request would have written it had it confirmed. */
function payoutFor(env: Bindings, db: D1Database, row: NonceRow, txHash: string, now: number) {
  const m = /^partner:([^/]+)\/(.+)$/.exec(row.resource);
  const partner = m && partnerById(m[1] ?? "");
  const service = partner?.services.find((s) => s.id === m?.[2]);
  const pricing = pricingConfig(env);
  if (!service || "error" in pricing) return [];
  const prices = servicePrices(service, pricing.multiplierMilli);
  return [
    db
      .prepare(
        `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash,
           request_id, paid_upstream, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
                EXISTS (SELECT 1 FROM upstream_payments WHERE request_id = ?7 AND chain_status IS NOT 'not_landed'), ?8
         WHERE EXISTS (SELECT 1 FROM payment_nonces WHERE nonce = ?9 AND status = 'settled')
         ON CONFLICT (request_id) DO NOTHING`,
      )
      .bind(
        partner?.id,
        service.id,
        Number(prices.partnerMicros),
        Number(prices.feeMicros),
        row.payer,
        txHash,
        row.request_id,
        now,
        row.nonce,
      ),
  ];
}

/** Writes one payment decision; every statement is conditional, so a racing request or run is harmless. */
async function applyPayment(env: Bindings, row: NonceRow, d: Decision) {
  const db = env.DB;
  const now = Date.now();
  if (d.outcome === "wait") return;
  if (d.outcome === "paid") {
    await db.batch([
      db
        .prepare(
          `INSERT INTO payments (request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce,
             created_at, reconciled_at)
           SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, ?2, nonce, ?3, ?3
           FROM payment_nonces WHERE nonce = ?1 AND status IN ('failed', 'running')
           ON CONFLICT DO NOTHING`,
        )
        .bind(row.nonce, d.txHash, now),
      db
        .prepare(
          "UPDATE payment_nonces SET status = 'settled', updated_at = ?2 WHERE nonce = ?1 AND status IN ('failed', 'running')",
        )
        .bind(row.nonce, now),
      ...payoutFor(env, db, row, d.txHash, now),
      logRow(db, "payment", row.nonce, row.request_id, "settled", d, now),
    ]);
    return;
  }
  await db.batch([
    db
      .prepare(
        "UPDATE payment_nonces SET status = 'released', updated_at = ?2 WHERE nonce = ?1 AND status IN ('failed', 'running')",
      )
      .bind(row.nonce, now),
    logRow(db, "payment", row.nonce, row.request_id, "released", d, now),
  ]);
}

async function applyUpstream(db: D1Database, row: UpstreamRow, d: Decision) {
  if (d.outcome === "wait") return;
  const now = Date.now();
  const status = d.outcome === "paid" ? "landed" : "not_landed";
  await db.batch([
    db
      .prepare(
        "UPDATE upstream_payments SET chain_status = ?2, tx_hash = coalesce(tx_hash, ?3) WHERE id = ?1 AND chain_status IS NULL",
      )
      .bind(row.id, status, d.outcome === "paid" ? d.txHash : null),
    logRow(db, "upstream", String(row.id), row.request_id, status, d, now),
  ]);
}

export interface ReconcileSummary {
  checked: number;
  settled: number;
  released: number;
  waiting: number;
  upstream_landed: number;
  upstream_not_landed: number;
  errors: string[];
  skipped?: string;
}

async function look(
  reader: ChainReader,
  head: Awaited<ReturnType<ChainReader["head"]>>,
  t: Terms,
  createdMs: number,
): Promise<ChainView> {
  const used = await reader.authorizationUsed(t.asset, t.payer, t.nonce);
  if (!used) return { used, found: undefined, headTime: head.timestamp };
  const searched = searchRange(head, Math.floor(createdMs / 1000), t.validBefore);
  const found = await reader.findUse(t.asset, t.payer, t.nonce, searched.fromBlock, searched.toBlock);
  return { used, found, headTime: head.timestamp, searched };
}

/**
 * One reconciliation run: the Cron Trigger's `scheduled` handler and POST /api/admin/reconcile
 * both call this. Without RPC_URL it does nothing and says so.
 */
export async function reconcile(env: Bindings, reader?: ChainReader): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = {
    checked: 0,
    settled: 0,
    released: 0,
    waiting: 0,
    upstream_landed: 0,
    upstream_not_landed: 0,
    errors: [],
  };
  if (!reader && !env.RPC_URL) return { ...summary, skipped: "RPC_URL is not set" };
  const chain = reader ?? (await rpcChainReader(env.RPC_URL as string));
  const network = env.X402_NETWORK;
  const chainId = await chain.chainId();
  if (`eip155:${chainId}` !== network) {
    return { ...summary, skipped: `RPC_URL serves chain ${chainId}, X402_NETWORK is ${network}` };
  }
  const head = await chain.head();
  const [payments, upstream] = await Promise.all([
    candidates(env.DB, network, Date.now()),
    upstreamCandidates(env.DB, network),
  ]);
  for (const row of payments.results) {
    summary.checked++;
    try {
      const terms: Terms = {
        payer: row.payer,
        payTo: row.pay_to,
        asset: row.asset,
        amountAtomic: BigInt(row.amount_atomic),
        nonce: row.auth_nonce,
        validBefore: row.valid_before,
      };
      const d = decide(terms, await look(chain, head, terms, row.created_at));
      await applyPayment(env, row, d);
      if (d.outcome === "paid") summary.settled++;
      else if (d.outcome === "unpaid") summary.released++;
      else summary.waiting++;
    } catch (e) {
      summary.errors.push(`${row.nonce}: ${e instanceof Error ? e.message : e}`);
    }
  }
  for (const row of upstream.results) {
    summary.checked++;
    try {
      const terms: Terms = {
        payer: row.payer,
        payTo: row.pay_to,
        asset: row.asset,
        amountAtomic: BigInt(row.amount_micro),
        nonce: row.auth_nonce,
        validBefore: row.valid_before,
      };
      const d = decide(terms, await look(chain, head, terms, row.created_at));
      await applyUpstream(env.DB, row, d);
      if (d.outcome === "paid") summary.upstream_landed++;
      else if (d.outcome === "unpaid") summary.upstream_not_landed++;
      else summary.waiting++;
    } catch (e) {
      summary.errors.push(`upstream ${row.id}: ${e instanceof Error ? e.message : e}`);
    }
  }
  return summary;
}

/** What the admin payments view shows about reconciliation. */
export async function reconciliationReport(db: D1Database, limit: number) {
  const { results } = await db
    .prepare(
      `SELECT kind, ref, request_id, outcome, evidence, tx_hash, block_number, created_at
       FROM reconciliations ORDER BY id DESC LIMIT ?1`,
    )
    .bind(limit)
    .all();
  return results;
}
