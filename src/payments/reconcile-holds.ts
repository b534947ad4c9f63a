import type { Bindings } from "../env";
import { type Decision, withoutRetryNote } from "./reconcile-decide";
import {
  applyPayment,
  applyUpstream,
  NO_LOG_SPACED_AFTER,
  type NonceRow,
  type UpstreamRow,
} from "./reconcile-store";

/*
 * Claims reconciliation cannot decide and holds for a person: the "used, no log" count that leads to
 * a hold (noteNoLog, called by a run), the list the maintainer sees (GET /api/admin/payments
 * `needs_person`, the dashboard) and the maintainer's decision (POST /api/admin/resolve/...). The
 * run's own reads and writes are reconcile-store.ts.
 */

/**
 * A claim whose nonce the chain shows spent with no log of the spend (no archive node, or a
 * provider that dropped the log) is decided by no later run: each would spend up to two
 * eth_getLogs on it for ever. After this many runs judged it so, spanning NO_LOG_HOLD_MS at least,
 * it is held for a person and no longer read. Twelve reads over a day give a provider that lagged
 * or dropped a log time and other nodes to answer; the day keeps a short queue (read every 5
 * minutes) from holding a claim within the hour. After its second such run it is read only every
 * NO_LOG_EVERY_MS (candidates), so the twelve take ~20 h and the hold comes by the ~14th read: at
 * most ~28 eth_getLogs per claim.
 */
export const NO_LOG_HOLD_RUNS = 12;
export const NO_LOG_HOLD_MS = 86_400_000;

export type ClaimKind = "payment" | "upstream";
const claimTable = {
  payment: { table: "payment_nonces", key: "nonce", undecided: "status IN ('failed', 'running')" },
  upstream: { table: "upstream_payments", key: "id", undecided: "chain_status IS NULL" },
} as const;

/** A claim held for a person, as the run summary and GET /api/admin/payments list it (`needs_person`). */
export interface HeldClaim {
  kind: ClaimKind;
  ref: string;
  request_id: string;
  /** What reconciliation saw on its last read. */
  hold: string;
  no_log_runs: number;
  no_log_since: number;
  /** The maintainer's action: POST it `{outcome: "queue" | "landed" | "not_landed", tx_hash?, note?}`. */
  resolve: string;
}

const resolvePath = (kind: ClaimKind, ref: string) =>
  `/api/admin/resolve/${claimTable[kind].table}/${encodeURIComponent(ref)}`;

/**
 * Counts a run that found the claim's nonce spent with no log, and holds the claim once that was
 * NO_LOG_HOLD_RUNS runs over NO_LOG_HOLD_MS (one conditional UPDATE: a racing run counts once more
 * at most, and a decided or held row is left alone). Answers the claim if this run held it.
 */
export async function noteNoLog(
  db: D1Database,
  kind: ClaimKind,
  key: string | number,
  evidence: string,
  now = Date.now(),
): Promise<HeldClaim | undefined> {
  const t = claimTable[kind];
  const hold = `${withoutRetryNote(evidence)}; read so on ${NO_LOG_HOLD_RUNS} runs over a day, held for a person`;
  const row = await db
    .prepare(
      `UPDATE ${t.table} SET no_log_runs = no_log_runs + 1, no_log_since = coalesce(no_log_since, ?2),
         hold = CASE WHEN no_log_runs + 1 >= ?3 AND coalesce(no_log_since, ?2) <= ?2 - ?4 THEN ?5 END
       WHERE ${t.key} = ?1 AND hold IS NULL AND ${t.undecided}
       RETURNING request_id, hold, no_log_runs, no_log_since`,
    )
    .bind(key, now, NO_LOG_HOLD_RUNS, NO_LOG_HOLD_MS, hold)
    .first<{ request_id: string; hold: string | null; no_log_runs: number; no_log_since: number }>();
  if (!row?.hold) return undefined;
  return { kind, ref: String(key), ...row, hold: row.hold, resolve: resolvePath(kind, String(key)) };
}

/** Every claim held for a person and still undecided (GET /api/admin/payments `needs_person`). */
export async function heldClaims(db: D1Database): Promise<HeldClaim[]> {
  const { results } = await db
    .prepare(
      `SELECT 'payment' AS kind, nonce AS ref, request_id, hold, no_log_runs, no_log_since FROM payment_nonces
       WHERE hold IS NOT NULL AND ${claimTable.payment.undecided}
       UNION ALL
       SELECT 'upstream', CAST(id AS TEXT), request_id, hold, no_log_runs, no_log_since FROM upstream_payments
       WHERE hold IS NOT NULL AND ${claimTable.upstream.undecided}
       LIMIT 1000`,
    )
    .all<Omit<HeldClaim, "resolve">>();
  return results.map((c) => ({ ...c, resolve: resolvePath(c.kind, c.ref) }));
}

/** What the maintainer decided about a held claim (POST /api/admin/resolve/{table}/{key}). */
export interface ClaimResolution {
  /**
   * queue: back to reconciliation, its count of runs started again; landed: the promised transfer
   * is on chain in tx_hash; not_landed: the authorization moved nothing (cancelled, tx_hash the
   * cancel if known).
   */
  outcome: "queue" | "landed" | "not_landed";
  txHash?: string;
  note?: string;
}

export type ClaimResolved =
  | { status: "recorded" | "replayed"; claim: Record<string, unknown> }
  | { status: "unknown" }
  | { status: "refused"; detail: string; claim: Record<string, unknown> };

/** How a maintainer's decision reads in the reconciliations log, so a retry can recognise it. */
const BY_HAND = "resolved by hand";

/**
 * A maintainer's decision on a held claim. Back to the queue: the hold and its count cleared (the
 * row is read again next run). Landed or not: the same writes as a run's decision
 * (applyPayment/applyUpstream, conditional on the row being undecided), with the maintainer's words
 * as the evidence; a refund or a partner's share it records is sent by the next run, as any owed
 * one. Only a held claim: one reconciliation is still deciding is refused. The same body again
 * answers the recorded decision.
 */
export async function resolveHeldClaim(
  env: Bindings,
  kind: ClaimKind,
  key: string,
  r: ClaimResolution,
): Promise<ClaimResolved> {
  const db = env.DB;
  const t = claimTable[kind];
  if (kind === "upstream" && !/^[1-9][0-9]{0,15}$/.test(key)) return { status: "unknown" };
  const read = () =>
    db
      .prepare(
        kind === "payment"
          ? `SELECT nonce, request_id, resource, status, payer, pay_to, asset, network, amount_atomic, auth_nonce,
                    valid_before, created_at, payout, hold, no_log_runs, no_log_since,
                    status IN ('failed', 'running') AS undecided
             FROM payment_nonces WHERE nonce = ?1`
          : `SELECT id, request_id, partner_id, service_id, payer, pay_to, asset, network, amount_micro, auth_nonce,
                    valid_before, created_at, chain_status, tx_hash, hold, no_log_runs, no_log_since,
                    chain_status IS NULL AS undecided
             FROM upstream_payments WHERE id = ?1`,
      )
      .bind(kind === "payment" ? key : Number(key))
      .first<Record<string, unknown> & { hold: string | null; undecided: number; request_id: string }>();
  const decision = () =>
    db
      .prepare(
        "SELECT outcome, evidence, tx_hash, created_at FROM reconciliations WHERE kind = ?1 AND ref = ?2",
      )
      .bind(kind, key)
      .first<{ outcome: string; evidence: string; tx_hash: string | null }>();
  const answer = async (row: Record<string, unknown>) => {
    const { undecided: _u, ...claim } = row;
    return { kind, ...claim, decision: await decision() };
  };
  const row = await read();
  if (!row) return { status: "unknown" };
  const tx = r.txHash?.toLowerCase() ?? null;

  if (r.outcome === "queue") {
    if (!row.undecided)
      return {
        status: "refused",
        detail: `Claim already decided: nothing to queue`,
        claim: await answer(row),
      };
    const queued = await db
      .prepare(
        // A claim not held but counted (spaced out: read every NO_LOG_EVERY_MS) starts over too:
        // the maintainer asks for it to be read on the next run, not in up to two hours.
        `UPDATE ${t.table} SET hold = NULL, no_log_runs = 0, no_log_since = NULL, checked_at = NULL
         WHERE ${t.key} = ?1 AND (hold IS NOT NULL OR no_log_runs >= ?2) AND ${t.undecided}`,
      )
      .bind(kind === "payment" ? key : Number(key), NO_LOG_SPACED_AFTER)
      .run();
    const now = (await read()) ?? row;
    // Neither held nor counted: in the queue already, read every run, as asked.
    return now.undecided
      ? { status: queued.meta.changes ? "recorded" : "replayed", claim: await answer(now) }
      : { status: "refused", detail: "Claim already decided: nothing to queue", claim: await answer(now) };
  }

  const outcome =
    r.outcome === "landed"
      ? kind === "payment"
        ? "settled"
        : "landed"
      : kind === "payment"
        ? "released"
        : "not_landed";
  const ours = (d: { outcome: string; evidence: string; tx_hash: string | null } | null) =>
    !!d &&
    d.evidence.startsWith(BY_HAND) &&
    d.outcome === outcome &&
    (d.tx_hash?.toLowerCase() ?? null) === tx;
  if (!row.undecided) {
    const d = await decision();
    return ours(d)
      ? { status: "replayed", claim: await answer(row) }
      : {
          status: "refused",
          detail: `Claim already decided: ${d?.outcome ?? "decided"}${d ? ` (${d.evidence})` : ""}`,
          claim: await answer(row),
        };
  }
  if (row.hold === null)
    return {
      status: "refused",
      detail:
        "Claim not held: reconciliation is still deciding it (held ones are listed as needs_person by GET /api/admin/payments)",
      claim: await answer(row),
    };
  const evidence = `${BY_HAND}${r.note ? `: ${r.note}` : ""} (held after: ${row.hold})`;
  const d: Decision =
    r.outcome === "landed"
      ? { outcome: "paid", txHash: tx as string, evidence }
      : { outcome: "unpaid", cancelled: true, ...(tx ? { txHash: tx } : {}), evidence };
  if (kind === "payment") await applyPayment(env, row as unknown as NonceRow, d);
  else await applyUpstream(db, row as unknown as UpstreamRow, d);
  const after = (await read()) ?? row;
  return ours(await decision())
    ? { status: "recorded", claim: await answer(after) }
    : {
        status: "refused",
        detail: "Claim decided meanwhile by someone else: nothing recorded",
        claim: await answer(after),
      };
}
