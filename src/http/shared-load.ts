import { waitUntil } from "cloudflare:workers";

/**
 * A value loaded once per isolate, by whichever request needs it first, and shared by every later
 * request (the facilitator's /supported, a BPE table, an RPC's chain id).
 *
 * On Cloudflare, when a client disconnects, the I/O of its request is cancelled unless it was
 * handed to waitUntil (developers.cloudflare.com/workers/platform/limits/, Duration). A shared load
 * started by a request that goes away then never settles, and every request that awaited it hung
 * until the isolate was evicted. So:
 * - the load is handed to the starting request's waitUntil: a disconnect does not cancel it (the
 *   runtime still ends it 30 s after that request's answer);
 * - a load still pending `staleAfterMs` after it started is taken for dead: the next request
 *   starts another instead of joining it;
 * - each waiting request bounds its own wait with `within`.
 * A failed load is not kept: the next request tries again.
 */
export class SharedLoad<T> {
  #current: { promise: Promise<T>; startedAt: number; done: boolean } | undefined;

  constructor(readonly staleAfterMs: number) {}

  /** The loaded value, the load in flight, or a load `start`ed now on this request's behalf. */
  get(start: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const known = this.#current;
    if (known && (known.done || now - known.startedAt < this.staleAfterMs)) return known.promise;
    const load = { promise: start(), startedAt: now, done: false };
    this.#current = load;
    // A stale load that settles after its replacement started changes nothing.
    const settled = load.promise.then(
      () => {
        load.done = true;
      },
      () => {
        if (this.#current === load) this.#current = undefined;
      },
    );
    keepAlive(settled);
    return load.promise;
  }
}

/** Hands `p` to the current request's waitUntil: a client that goes away does not cancel it. */
export function keepAlive(p: Promise<unknown>) {
  try {
    waitUntil(p);
  } catch {
    // Outside a request (none in production: loads start inside one) the load simply runs on.
  }
}

/** A wait that ran out: `[what ]did not answer within N s`. */
export class DeadlineError extends Error {}

/** `p`, or a DeadlineError once `ms` have passed without it settling. */
export function within<T>(p: Promise<T>, ms: number, what?: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const message = `${what ? `${what} ` : ""}did not answer within ${ms / 1000} s`;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(message)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
