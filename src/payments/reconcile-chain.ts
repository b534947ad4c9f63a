import { sameAddress } from "../money";
import { MAX_TIMEOUT_SECONDS } from "./x402-terms";

/**
 * What the reconciler reads from the chain: whether an EIP-3009 nonce was used, and the log that
 * spent it: AuthorizationUsed (with the Transfer of that transaction) or AuthorizationCanceled
 * (reconcile.ts).
 */

/**
 * The transaction that spent a nonce: one that used it, with the USDC Transfer out of the
 * authorizer in it, or one that cancelled it (FiatToken's cancelAuthorization sets the same
 * authorizationState and emits only AuthorizationCanceled: no Transfer, nothing moved).
 */
export type FoundUse =
  | {
      txHash: string;
      blockNumber: number;
      transfer: { from: string; to: string; value: bigint } | undefined;
      cancelled?: false;
    }
  | { txHash: string; blockNumber: number; cancelled: true };

export interface ChainView {
  used: boolean;
  /** Searched only when `used`; undefined when neither log was found in the range. */
  found: FoundUse | undefined;
  /** Timestamp of the latest block: an authorization is dead once the chain has passed valid_before. */
  headTime: number;
  searched?: { fromBlock: number; toBlock: number };
  /**
   * Read when neither log was found and the chain has passed valid_before: a block at or past
   * valid_before at which the nonce was still unused. No transfer can use an authorization after
   * valid_before, so whatever spent the nonce later (a cancel outside the searched blocks: FiatToken
   * lets the signer cancel an expired authorization) moved nothing.
   */
  unusedAtExpiry?: { block: number; time: number };
}

export interface ChainReader {
  chainId(): Promise<number>;
  head(): Promise<{ number: number; timestamp: number; blockSeconds: number }>;
  /** The timestamp of block `blockNumber`. */
  blockTime(blockNumber: number): Promise<number>;
  /**
   * Read at `blockNumber` (reconcile.ts passes the head its decision compares valid_before
   * against; omitted: latest). Read at latest, a provider node lagging behind that head could
   * answer "unused" from a block before the transfer landed while the head's time says the
   * authorization expired: "expired unused" for money that moved (a landed payment released
   * unrecorded, a partner that collected owed its share again).
   */
  authorizationUsed(asset: string, authorizer: string, nonce: string, blockNumber?: number): Promise<boolean>;
  findUse(
    asset: string,
    authorizer: string,
    nonce: string,
    fromBlock: number,
    toBlock: number,
  ): Promise<FoundUse | undefined>;
}

/** What the chain says of one authorization (`authorizer`'s `nonce` for `asset`), for decide(). */
export interface Authorization {
  asset: string;
  payer: string;
  nonce: string;
  validBefore: number;
}

/**
 * Reads an authorization's fate at `head`, the block whose time decides its expiry (not at
 * whatever block the answering node has): authorizationState, and when it is spent the log that
 * spent it, searched over its lifetime's blocks from `createdMs`. Reconciliation and a maintainer's
 * hand refund (refund-by-hand.ts) read it the same way.
 */
export async function readAuthorization(
  reader: ChainReader,
  head: Awaited<ReturnType<ChainReader["head"]>>,
  t: Authorization,
  createdMs: number,
): Promise<ChainView> {
  const used = await reader.authorizationUsed(t.asset, t.payer, t.nonce, head.number);
  if (!used) return { used, found: undefined, headTime: head.timestamp };
  const searched = searchRange(head, Math.floor(createdMs / 1000), t.validBefore);
  const found = await reader.findUse(t.asset, t.payer, t.nonce, searched.fromBlock, searched.toBlock);
  const view: ChainView = { used, found, headTime: head.timestamp, searched };
  // Spent, no log in its lifetime's blocks, and expired: was it still unused once it expired? Then
  // it was cancelled after (FiatToken does not check valid_before on a cancel), outside the search.
  if (!found && head.timestamp >= t.validBefore && searched.toBlock < head.number) {
    const block = searched.toBlock;
    try {
      const [usedThen, time] = await Promise.all([
        reader.authorizationUsed(t.asset, t.payer, t.nonce, block),
        reader.blockTime(block),
      ]);
      if (!usedThen && time >= t.validBefore) view.unusedAtExpiry = { block, time };
    } catch {
      // State that old needs an archive node ("missing trie node" from a full one): without it
      // the claim waits, as any used one with no log does, and the run is not failed for it.
    }
  }
  return view;
}

/** A public RPC usually refuses eth_getLogs over more blocks than this in one call. */
const LOG_CHUNK_BLOCKS = 5_000;

/**
 * The most blocks searched for one authorization in one run (two eth_getLogs calls), however old
 * its claim: the search spans the authorization's own lifetime, not the time since.
 */
export const MAX_SEARCH_BLOCKS = 2 * LOG_CHUNK_BLOCKS;

/**
 * topic0 of FiatToken's EIP3009.sol events, both `(address indexed authorizer, bytes32 indexed
 * nonce)`: keccak256 of the signatures (test/payments/reconcile.test.ts checks them). One
 * eth_getLogs asks for either: viem's getLogs filters indexed args only for a single event.
 */
export const AUTHORIZATION_USED = "0x98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a5";
export const AUTHORIZATION_CANCELED = "0x1cdd46ff242716cdaa72d159d339a485b3438398348d68f09d7c8c0a59353d81";

/** viem's public client over `RPC_URL`, loaded only when the reconciler runs. */
export async function rpcChainReader(rpcUrl: string): Promise<ChainReader> {
  const { createPublicClient, http, parseAbi, parseEventLogs } = await import("../net/rpc-client");
  const abi = parseAbi([
    "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
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
    blockTime: async (blockNumber) =>
      Number((await client.getBlock({ blockNumber: BigInt(blockNumber) })).timestamp),
    authorizationUsed: (asset, authorizer, nonce, blockNumber) =>
      client.readContract({
        address: hex(asset),
        abi,
        functionName: "authorizationState",
        args: [hex(authorizer), hex(nonce)],
        ...(blockNumber === undefined ? {} : { blockNumber: BigInt(blockNumber) }),
      }),
    async findUse(asset, authorizer, nonce, fromBlock, toBlock) {
      const topics = [
        [hex(AUTHORIZATION_USED), hex(AUTHORIZATION_CANCELED)],
        hex(`0x${authorizer.replace(/^0x/i, "").toLowerCase().padStart(64, "0")}`),
        hex(nonce.toLowerCase()),
      ];
      for (let start = fromBlock; start <= toBlock; start += LOG_CHUNK_BLOCKS) {
        const logs = await client.request({
          method: "eth_getLogs",
          params: [
            {
              address: hex(asset),
              topics,
              fromBlock: hex(`0x${start.toString(16)}`),
              toBlock: hex(`0x${Math.min(toBlock, start + LOG_CHUNK_BLOCKS - 1).toString(16)}`),
            },
          ],
        });
        const log = logs.find((l) => !l.removed && l.transactionHash);
        if (!log?.transactionHash) continue;
        if (log.topics[0]?.toLowerCase() === AUTHORIZATION_CANCELED) {
          return { txHash: log.transactionHash, blockNumber: Number(log.blockNumber), cancelled: true };
        }
        const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
        // This authorization's own transfer: FiatToken emits AuthorizationUsed, then its Transfer.
        // One transaction can land several of our authorizations (anyone may submit them, e.g.
        // batched through Multicall3); the first Transfer of the transaction may be another's.
        const after = log.logIndex === null ? -1 : Number(log.logIndex);
        const t = parseEventLogs({ abi, eventName: "Transfer", logs: receipt.logs })
          .filter(
            (l) =>
              sameAddress(l.address, asset) &&
              sameAddress(l.args.from, authorizer) &&
              (l.logIndex ?? -1) > after,
          )
          .sort((a, b) => (a.logIndex ?? 0) - (b.logIndex ?? 0))[0];
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
 * Blocks that can hold the transaction: it was mined after the claim was made (minus the
 * authorization's whole validity, to be safe) and before valid_before. Block numbers are
 * estimated from the chain's average block time; the margin on each side is that interval again
 * plus 100 blocks, so it does not grow with the claim's age (a year-old claim searched with 10 %
 * of a year's blocks on each side cost 630 eth_getLogs a run), and the whole is capped at
 * MAX_SEARCH_BLOCKS around the estimate. A chain without a measurable block time (a fresh local
 * one) is searched over its latest MAX_SEARCH_BLOCKS blocks.
 */
export function searchRange(
  head: { number: number; timestamp: number; blockSeconds: number },
  fromTime: number,
  toTime: number,
) {
  const inChain = (n: number) => Math.min(head.number, Math.max(0, n));
  if (!(head.blockSeconds > 0)) {
    return { fromBlock: inChain(head.number - MAX_SEARCH_BLOCKS + 1), toBlock: head.number };
  }
  const at = (t: number) => head.number - Math.ceil((head.timestamp - t) / head.blockSeconds);
  const from = at(fromTime - MAX_TIMEOUT_SECONDS - 60);
  const to = at(toTime + 60);
  const margin = Math.max(0, to - from) + 100;
  let low = from - margin;
  let high = to + margin;
  if (high - low + 1 > MAX_SEARCH_BLOCKS) {
    low = Math.floor((from + to) / 2) - MAX_SEARCH_BLOCKS / 2;
    high = low + MAX_SEARCH_BLOCKS - 1;
  }
  return { fromBlock: inChain(low), toBlock: inChain(high) };
}
