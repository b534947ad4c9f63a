import { sameAddress } from "../money";
import type { ChainView } from "./reconcile-chain";

/** What one authorization promises. */
export interface Terms {
  payer: string;
  payTo: string;
  asset: string;
  amountAtomic: bigint;
  nonce: string;
  validBefore: number;
}

export type Decision =
  /** blockNumber: undefined only for a maintainer's decision (reconcile-holds.ts resolveHeldClaim). */
  | { outcome: "paid"; txHash: string; blockNumber?: number; evidence: string }
  | {
      outcome: "unpaid";
      txHash?: string;
      blockNumber?: number;
      /** Spent by cancelAuthorization (txHash is the cancel): nothing moved, and nothing ever can. */
      cancelled?: boolean;
      evidence: string;
    }
  | {
      outcome: "wait";
      evidence: string;
      /**
       * The nonce is spent but no log of the spend was found: unlike a still-valid authorization,
       * nothing the chain does later decides it (reconcile-holds.ts holds it for a person).
       */
      noLog?: true;
    };

/**
 * Unpaid because the nonce was spent by a transaction that used it for something other than the
 * promised transfer: money moved, but not as recorded. Not an expiry or a cancel, where nothing did.
 */
export const spentElsewhere = (d: Decision) => d.outcome === "unpaid" && !!d.txHash && !d.cancelled;

const RETRIED = "; retried next run";
/** A "wait" decision's evidence as a final record quotes it: the run that writes it retries nothing. */
export const withoutRetryNote = (evidence: string) =>
  evidence.endsWith(RETRIED) ? evidence.slice(0, -RETRIED.length) : evidence;

/** The decision from what the chain says; pure, so every branch is tested without a chain. */
export function decide(t: Terms, chain: ChainView): Decision {
  if (chain.used) {
    const f = chain.found;
    if (!f && chain.unusedAtExpiry) {
      const { block, time } = chain.unusedAtExpiry;
      return {
        outcome: "unpaid",
        // Only a cancel spends a nonce after valid_before.
        cancelled: true,
        evidence: `authorizationState: unused at block ${block} (time ${time}, past valid_before ${t.validBefore}), used later: spent after it expired (a cancel outside the blocks searched), so no transfer used it`,
      };
    }
    if (!f) {
      const range = chain.searched ? ` in blocks ${chain.searched.fromBlock}-${chain.searched.toBlock}` : "";
      return {
        outcome: "wait",
        noLog: true,
        evidence: `authorizationState: used, but no AuthorizationUsed or AuthorizationCanceled log found${range}${RETRIED}`,
      };
    }
    if (f.cancelled) {
      // The signer cancelled it (FiatToken's cancelAuthorization): no Transfer, and the nonce is spent.
      return {
        outcome: "unpaid",
        txHash: f.txHash,
        blockNumber: f.blockNumber,
        cancelled: true,
        evidence: `authorizationState: used; AuthorizationCanceled in tx ${f.txHash} (block ${f.blockNumber}): the signer cancelled this authorization, nothing moved and it can never settle`,
      };
    }
    const tr = f.transfer;
    if (tr && sameAddress(tr.from, t.payer) && sameAddress(tr.to, t.payTo) && tr.value === t.amountAtomic) {
      return {
        outcome: "paid",
        txHash: f.txHash,
        blockNumber: f.blockNumber,
        evidence: `authorizationState: used; AuthorizationUsed and Transfer ${t.amountAtomic} to ${t.payTo} in tx ${f.txHash} (block ${f.blockNumber})`,
      };
    }
    // The signer spent the nonce on another transfer: this authorization can never pay.
    return {
      outcome: "unpaid",
      txHash: f.txHash,
      blockNumber: f.blockNumber,
      evidence: tr
        ? `authorizationState: used by tx ${f.txHash} for a different transfer (${tr.value} to ${tr.to}); this authorization can never settle`
        : `authorizationState: used by tx ${f.txHash}, but no Transfer from the payer follows its AuthorizationUsed; this authorization can never settle`,
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
