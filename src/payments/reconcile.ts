import { operatingKey, redactSecrets } from "../config";
import { rpcUrlProblem } from "../config-urls";
import type { Bindings } from "../env";
import { varText } from "../var-text";
import { countedReader, type Drained, drainQueue, SEND_COST, type Spent } from "./reconcile-budget";
import { type ChainReader, readAuthorization, rpcChainReader } from "./reconcile-chain";
import { decide, spentElsewhere, type Terms } from "./reconcile-decide";
import { type HeldClaim, noteNoLog } from "./reconcile-holds";
import {
  applyPayment,
  applyUpstream,
  BATCH,
  candidates,
  type NonceRow,
  sendToBack,
  type UpstreamRow,
  upstreamCandidates,
} from "./reconcile-store";
import { warnRefundLine } from "./refund-warn";
import {
  judgeRefund,
  markRefunded,
  markRefundedWithoutLog,
  type Refund,
  recorded,
  refundsToSettle,
  sendRecordedRefund,
  touchRefund,
} from "./refunds";

/**
 * Reconciliation against the chain: authorizations whose settlement was never confirmed
 * (payment_nonces 'failed', or 'running' past their validity) and authorizations the operating
 * wallet handed to partners (upstream_payments). The USDC contract decides: EIP-3009
 * `authorizationState(authorizer, nonce)` says whether the nonce was spent, and the log that spent
 * it says how: AuthorizationUsed + the Transfer of that transaction (where the money went), or
 * AuthorizationCanceled (nowhere: the signer cancelled it). A call whose
 * result was withheld ('failed') and whose payment landed is refunded (payments/refunds.ts); so is
 * the share a refund kept back for a partner whose authorization then expired unused.
 */

export interface ReconcileSummary {
  checked: number;
  settled: number;
  released: number;
  waiting: number;
  upstream_landed: number;
  upstream_not_landed: number;
  /**
   * Refunds sent this run that settled (a withheld call's, a share kept back for a partner whose
   * authorization expired unused, or an owed one sent again), or found landed.
   */
  refunded: number;
  /** Sends that did not settle this run, and refunds newly held for a person (GET /api/admin/payouts). */
  refunds_owed: number;
  /**
   * Claims this run held for a person: their nonce spent, no log of the spend found, on 12 runs over
   * a day (reconcile-holds.ts noteNoLog). No longer read; GET /api/admin/payments lists them all.
   */
  needs_person: HeldClaim[];
  errors: string[];
  /**
   * Per queue, whether this run left rows for the next one: its budget ran out (reconcile-budget.ts)
   * or its query failed. `true` run after run means a backlog (docs/OPERATIONS.md).
   */
  more: Record<Queue, boolean>;
  skipped?: string;
}

/** The run's three queues: claims (payment_nonces), owed refunds, upstream payments. */
type Queue = "claims" | "refunds" | "upstream";

const SKIP_NO_RPC = "RPC_URL is not set";

/** An error as a summary quotes it: the RPC URL (a provider's key in it) redacted. */
const errorText = (e: unknown, env: Bindings) =>
  redactSecrets(e instanceof Error ? e.message : String(e), env);

/** A run's summary before it looked at anything. */
export const emptySummary = (): ReconcileSummary => ({
  checked: 0,
  settled: 0,
  released: 0,
  waiting: 0,
  upstream_landed: 0,
  upstream_not_landed: 0,
  refunded: 0,
  refunds_owed: 0,
  needs_person: [],
  errors: [],
  more: { claims: false, refunds: false, upstream: false },
});

/**
 * Why a run counts as failed for the Cron Trigger, if it does: a row it could not decide (an RPC
 * error, a refund that threw) or an RPC on another chain. An unset RPC_URL is a configuration
 * (local development), not a failure.
 */
export function cronFailure(summary: ReconcileSummary): string | undefined {
  if (summary.skipped && summary.skipped !== SKIP_NO_RPC) return summary.skipped;
  if (summary.errors.length)
    return `${summary.errors.length} error(s): ${summary.errors.slice(0, 3).join("; ")}`;
  return undefined;
}

/**
 * Whether a run's summary asks for a person: a claim it held (needs_person), a refund it left
 * owed (held, or a send that did not settle), or a run skipped for its configuration (RPC_URL no
 * http(s) URL, an RPC of another chain; an unset RPC_URL only while x402 sells). Logged at "warn"
 * then, so an alert on warn lines sees it: at "info" such a run read as a success, and the Cron
 * showed one.
 */
export const summaryLevel = (summary: ReconcileSummary, sellsX402 = false): "info" | "warn" =>
  summary.needs_person.length ||
  summary.refunds_owed ||
  (summary.skipped && (sellsX402 || summary.skipped !== SKIP_NO_RPC))
    ? "warn"
    : "info";

/**
 * The Cron's line for a run's summary, at its level (summaryLevel), through `redact` (index.ts).
 * `sellsX402`: x402 payments are taken (config.ts x402Selling); then an unset RPC_URL is at warn,
 * since payments settle but a failed or uncertain one is never reconciled or refunded.
 */
export function logSummary(
  summary: ReconcileSummary,
  redact: (fields: Record<string, unknown>) => string,
  sellsX402 = false,
) {
  const level = summaryLevel(summary, sellsX402);
  (level === "warn" ? console.warn : console.log)(redact({ level, reconcile: summary }));
}

/**
 * The warn line of a refund this run held for a person, or whose send it saw fail. Only what the
 * run did: a held row is never picked again (refundsToSettle), and a failed one is sent again only
 * once its last authorization expired unused, so an old row does not repeat every 5 minutes.
 * Before, both went only to the row (`hold`, `error`) and the summary's count.
 */
function warnRefund(env: Bindings, requestId: string, row: { hold: string | null; error: string | null }) {
  if (row.hold) warnRefundLine(env, "refund held for a person", { request_id: requestId, hold: row.hold });
  else warnRefundLine(env, "refund not sent", { request_id: requestId, error: row.error });
}

/** A send this run made that left its refund owed: the row says why (its hold, or the send's error). */
async function warnOwed(env: Bindings, requestId: string) {
  const row = await env.DB.prepare(
    "SELECT hold, error FROM refunds WHERE request_id = ?1 AND status = 'owed'",
  )
    .bind(requestId)
    .first<{ hold: string | null; error: string | null }>();
  if (row) warnRefund(env, requestId, row);
}

/**
 * Owed refunds per batch: each costs a few RPC calls and maybe a facilitator call. A run takes
 * batch after batch while its budget lasts (reconcile-budget.ts).
 */
const BATCH_REFUNDS = 20;

/**
 * A queue's look at one row: counted in `checked`; a throw is the run's error (named by `label`)
 * and sends the row `back` behind the rows not yet looked at, so rows that fail every run cannot
 * keep the queue's head (and a failed move is left for the next run).
 */
function lookAt<T>(
  summary: ReconcileSummary,
  env: Bindings,
  label: (row: T) => string,
  back: (row: T) => Promise<unknown>,
  decideRow: (row: T) => Promise<void>,
) {
  return async (row: T) => {
    summary.checked++;
    try {
      await decideRow(row);
    } catch (e) {
      summary.errors.push(`${label(row)}: ${errorText(e, env)}`);
      await back(row).catch(() => undefined);
    }
  };
}

/**
 * One reconciliation run: the Cron Trigger's `scheduled` handler and POST /api/admin/reconcile
 * both call this. Without RPC_URL it does nothing and says so.
 */
export async function reconcile(env: Bindings, reader?: ChainReader): Promise<ReconcileSummary> {
  const summary = emptySummary();
  // Read as text (var-text.ts): an unquoted number or table here made every run throw.
  const rpc = varText(env.RPC_URL).trim();
  if (!reader && !rpc) return { ...summary, skipped: SKIP_NO_RPC };
  // Said in the summary (the Cron's run fails naming the var; admin's 503 says it), not read.
  const malformed = reader ? undefined : rpcUrlProblem(rpc);
  if (malformed) return { ...summary, skipped: malformed };
  const spent: Spent = { n: 0 };
  const chain = countedReader(reader ?? (await rpcChainReader(rpc)), spent);
  const network = varText(env.X402_NETWORK);
  const chainId = await chain.chainId();
  if (`eip155:${chainId}` !== network) {
    return { ...summary, skipped: `RPC_URL serves chain ${chainId}, X402_NETWORK is ${network}` };
  }
  const head = await chain.head();
  const nowMs = Date.now();
  // USDC has 6 decimals: an upstream payment's micros are its atomic amount.
  const judge = async (row: NonceRow | UpstreamRow, amountAtomic: number) => {
    const terms: Terms = {
      payer: row.payer,
      payTo: row.pay_to,
      asset: row.asset,
      amountAtomic: BigInt(amountAtomic),
      nonce: row.auth_nonce,
      validBefore: row.valid_before,
    };
    return decide(terms, await readAuthorization(chain, head, terms, row.created_at));
  };
  /** A refund this run's decision recorded: sent by this run (the only one that recorded it). */
  const sendNew = async (refund: Refund | undefined) => {
    // A refund of nothing (a partner was owed the whole price) is a row, not a send.
    const owed = refund && recorded(refund);
    if (!owed || owed.amount === 0n) return;
    spent.n += SEND_COST;
    const sent = await sendRecordedRefund(env, owed);
    if (sent.status === "refunded") summary.refunded++;
    else {
      summary.refunds_owed++;
      await warnOwed(env, owed.requestId);
    }
  };
  /** A spent nonce with no log found: counted, and held for a person once it stays so for a day. */
  const holdIfStuck = async (kind: HeldClaim["kind"], key: string | number, evidence: string) => {
    const held = await noteNoLog(env.DB, kind, key, evidence);
    if (held) summary.needs_person.push(held);
  };
  // A queue's query that failed stops that queue only: the run's summary still says what it did.
  const drained = (queue: Queue, { more, error }: Drained) => {
    summary.more[queue] = more;
    if (error !== undefined) summary.errors.push(`${queue} queue: ${errorText(error, env)}`);
  };
  const payments = async () => (await candidates(env.DB, network, nowMs)).results;
  const toBack = (row: NonceRow) => sendToBack(env.DB, "payment", row.nonce);
  const claims = await drainQueue(
    payments,
    BATCH,
    (row) => row.nonce,
    lookAt(
      summary,
      env,
      (row) => row.nonce,
      toBack,
      async (row) => {
        const d = await judge(row, row.amount_atomic);
        const { send, held } = await applyPayment(env, row, d);
        if (d.outcome === "paid") summary.settled++;
        else if (d.outcome === "unpaid") summary.released++;
        else summary.waiting++;
        if (d.outcome === "wait" && d.noLog) await holdIfStuck("payment", row.nonce, d.evidence);
        // A withheld call's refund its landing recorded held (its partner share unknown): counted as
        // a refund left owed, so the summary is at warn too, and warned of by the run whose batch
        // recorded it only (applyPayment), so overlapping runs do not both.
        if (held) {
          summary.refunds_owed++;
          await warnOwed(env, held.requestId);
        }
        await sendNew(send);
        // Looked at: behind every row not yet looked at, whatever came of it (a decided row leaves the queue).
        await toBack(row).catch(() => undefined);
      },
    ),
    spent,
  );
  drained("claims", claims);
  drained("refunds", await settleOwedRefunds(env, chain, head, summary, spent));
  const upstream = async () => (await upstreamCandidates(env.DB, network, nowMs)).results;
  const upstreamDrained = await drainQueue(
    upstream,
    BATCH,
    (row) => row.id,
    lookAt(
      summary,
      env,
      (row) => `upstream ${row.id}`,
      (row) => sendToBack(env.DB, "upstream", row.id),
      async (row) => {
        let d = await judge(row, row.amount_micro);
        // Our nonce spent on a transfer other than the one we signed: no rule decides that (money
        // moved, but not as recorded), so the row stays undecided, re-read each run, and the run
        // reports it (a failed Cron run) for a person; nothing is refunded or owed on its account.
        // A cancel (only the operating key can sign one) moved nothing: not landed, like an expiry.
        if (spentElsewhere(d)) {
          summary.errors.push(`upstream ${row.id}: ${d.evidence}; left undecided for a person`);
          d = { outcome: "wait", evidence: d.evidence };
        }
        // Not landed: what a refund kept back for the partner goes back to the caller.
        const refund = await applyUpstream(env.DB, row, d);
        if (d.outcome === "paid") summary.upstream_landed++;
        else if (d.outcome === "unpaid") summary.upstream_not_landed++;
        else summary.waiting++;
        if (d.outcome === "wait" && d.noLog) await holdIfStuck("upstream", row.id, d.evidence);
        await sendNew(refund);
      },
    ),
    spent,
  );
  drained("upstream", upstreamDrained);
  return summary;
}

/**
 * Owed refunds (a send that failed or got no answer, or a run cut off before sending): the chain
 * says whether the last authorization landed, read under the wallet that signed it. Landed →
 * refunded; still valid and unused → left for the next run; expired unused, or never sent → sent
 * (again) under the same nonce, so at most one ever lands. A row from before migration 0010 (its
 * send, if any, used another nonce) is held for the maintainer.
 */
async function settleOwedRefunds(
  env: Bindings,
  chain: ChainReader,
  head: Awaited<ReturnType<ChainReader["head"]>>,
  summary: ReconcileSummary,
  spent: Spent,
): Promise<Drained> {
  if (!operatingKey(env)) return { more: false }; // nothing could be sent; the rows say why
  const network = varText(env.X402_NETWORK);
  // Each row a run looks at is touched (or leaves the queue), so refundsToSettle (rows untouched
  // for a minute) leaves it out of the run's next batch.
  const owed = async () => (await refundsToSettle(env.DB, network, Date.now(), BATCH_REFUNDS)).results;
  return drainQueue(
    owed,
    BATCH_REFUNDS,
    (row) => row.request_id,
    // A throw leaves the row where a refund is touched: behind the rest of the queue
    // (refundsToSettle takes the least recently touched first), as a claim is. Left as it was, a
    // batch of refunds whose read or send throws every time came first again on every run, and no
    // refund behind them was ever sent. Only its place moves: the next run reads the chain before
    // sending it again, under the same nonce.
    lookAt(
      summary,
      env,
      (row) => `refund ${row.request_id}`,
      (row) => touchRefund(env.DB, row.request_id),
      async (row) => {
        if (row.auth_nonce === null) {
          await touchRefund(env.DB, row.request_id, PRE_0010_HOLD);
          summary.refunds_owed++;
          warnRefund(env, row.request_id, { hold: PRE_0010_HOLD, error: null });
          return;
        }
        const d =
          row.valid_before === null
            ? undefined
            : await judgeRefund(chain, head, row, varText(env.USDC_ADDRESS));
        if (d?.outcome === "paid") {
          // Never over a hand record (markRefunded), and there can be none: one is written only once
          // the chain shows this authorization can no longer land (resolveRefundByHand).
          const marked = await markRefunded(env.DB, row.request_id, d.txHash);
          if (marked.meta.changes) summary.refunded++;
        } else if (
          d?.outcome === "wait" &&
          d.noLog &&
          head.timestamp > (row.valid_before ?? 0) + NO_LOG_REFUND_AFTER_S
        ) {
          const marked = await markRefundedWithoutLog(env.DB, row.request_id, d.evidence);
          if (marked.meta.changes) summary.refunded++;
        } else if (d?.outcome === "wait") {
          await touchRefund(env.DB, row.request_id);
          summary.waiting++;
        } else if (d?.txHash || (d?.outcome === "unpaid" && d.cancelled)) {
          // Our nonce moved something else, or was cancelled (with the operating key), before or
          // after it expired: it can never be sent again under it, so a person looks at it.
          await touchRefund(env.DB, row.request_id, d.evidence);
          summary.refunds_owed++;
          warnRefund(env, row.request_id, { hold: d.evidence, error: null });
        } else {
          spent.n += SEND_COST;
          const sent = await sendRecordedRefund(env, {
            requestId: row.request_id,
            payer: row.payer,
            network,
            asset: row.asset ?? varText(env.USDC_ADDRESS),
            amount: BigInt(row.amount_micro),
            reason: row.reason,
          });
          if (sent.status === "refunded") summary.refunded++;
          else {
            summary.refunds_owed++;
            await warnOwed(env, row.request_id);
          }
        }
      },
    ),
    spent,
  );
}

/**
 * Seconds past a refund's valid_before after which its authorization spent with no log found is
 * recorded as paid without a hash: an RPC's log index can lag its state, and before then the next
 * run may still find the transaction (recorded once the row is no longer owed, it never would).
 */
const NO_LOG_REFUND_AFTER_S = 600;

const PRE_0010_HOLD =
  "recorded before migration 0010: any earlier send used another nonce, so it cannot be resent safely; check the chain, then refund by hand";

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
