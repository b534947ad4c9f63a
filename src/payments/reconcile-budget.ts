import type { ChainReader } from "./reconcile-chain";

/*
 * How much of a Cron invocation's subrequests (1,000 on Workers Paid, shared with the run's other
 * parts: pruning, the checkout sweep, the figures) each reconciliation queue may spend. A fixed 40
 * rows a queue kept a run far below that with a backlog of cheap rows (an authorization expired
 * unused: one RPC read and a few statements), so a day's outage left ~7,000 claims that took ~15 h
 * to drain while the refunds of those that landed waited; it also left no margin when every row
 * landed and sent a refund. Now each queue takes rows, batch after batch, until its estimate of
 * what it spent reaches QUEUE_BUDGET: ~75 expired-unused rows a run, ~23 landed ones with a refund.
 */

/** Estimated subrequests one queue (claims, owed refunds, upstream payments) may spend in one run. */
export const QUEUE_BUDGET = 300;
/** D1 statements a looked-at row costs besides its chain reads: its decision, its place in the queue, a count. */
export const ROW_STATEMENTS = 3;
/** A refund sent: its D1 reads and writes and the facilitator's verify and settle. */
export const SEND_COST = 6;
/** findUse: up to two eth_getLogs and the transaction's receipt. */
const FIND_USE_COST = 3;

/** What a run has spent so far, in estimated subrequests. */
export interface Spent {
  n: number;
}

/** `reader`, counting each read it makes into `spent`. */
export function countedReader(reader: ChainReader, spent: Spent): ChainReader {
  return {
    chainId: () => reader.chainId(),
    head: () => reader.head(),
    blockTime: (block) => {
      spent.n++;
      return reader.blockTime(block);
    },
    authorizationUsed: (asset, authorizer, nonce, block) => {
      spent.n++;
      return reader.authorizationUsed(asset, authorizer, nonce, block);
    },
    findUse: (asset, authorizer, nonce, from, to) => {
      spent.n += FIND_USE_COST;
      return reader.findUse(asset, authorizer, nonce, from, to);
    },
  };
}

/** How a queue's run ended: `more`, rows may be left for the next run; `error`, a batch's query threw. */
export interface Drained {
  more: boolean;
  error?: unknown;
}

/**
 * Looks at a queue's rows, batch after batch (`next`: at most `batchSize`, those the run already
 * looked at left out by the query), until the queue is empty or QUEUE_BUDGET is spent. The budget
 * is checked before each row, so a run stops between rows: a row is decided wholly or left as it
 * was. A row `next` answers again (its write that moves it to the back refused) is not looked at
 * twice: the run stops taking batches instead. A batch's query that throws (a D1 error) stops this
 * queue only: the run keeps what it did and goes on to the other queues.
 */
export async function drainQueue<T>(
  next: () => Promise<T[]>,
  batchSize: number,
  keyOf: (row: T) => string | number,
  each: (row: T) => Promise<void>,
  spent: Spent,
): Promise<Drained> {
  const start = spent.n;
  const seen = new Set<string | number>();
  for (;;) {
    let rows: T[];
    try {
      rows = await next();
    } catch (error) {
      return { more: true, error };
    } finally {
      spent.n++;
    }
    const fresh = rows.filter((row) => !seen.has(keyOf(row)));
    for (const row of fresh) {
      if (spent.n - start >= QUEUE_BUDGET) return { more: true };
      seen.add(keyOf(row));
      await each(row);
      spent.n += ROW_STATEMENTS;
    }
    if (fresh.length < batchSize) return { more: rows.length > fresh.length };
  }
}
