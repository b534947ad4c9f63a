import type { HonoRequest } from "hono";

/** What the caller's body cost a call: the time spent waiting for it, and whether it never came whole. */
export interface BodyWatch {
  /** Milliseconds the first read of the request body waited for the caller's bytes. */
  waitedMs: number;
  /**
   * The read failed: the caller's connection broke (or it stopped sending) before its body was in.
   * Not when the raw body had been consumed before the read began: that 500 is ours.
   */
  failed: boolean;
}

/**
 * Watches the request body's first read, whoever makes it (jsonBody, a partner route's cacheBody,
 * c.req.json()): Hono keeps each read's promise in `req.bodyCache`, and only the first one reads
 * the stream, so a setter on that object sees it begin and end. The body is read inside the
 * call's clock (after the payment gate, or earlier by the idempotency fingerprint or a partner
 * route's cacheBody), so the time a caller takes to send it fell inside a skill's server time: one
 * paid call that trickled its body for a minute set a skill's p95, and a connection cut mid-body was a 500
 * counted as the skill's failure, at no cost (a failed call is never charged). No await, no timer,
 * no I/O: a few property writes and a promise reaction, on the read that happens anyway.
 */
export function watchBody(req: HonoRequest): BodyWatch {
  const watch: BodyWatch = { waitedMs: 0, failed: false };
  req.bodyCache = new WatchedBodyCache(req, watch) as HonoRequest["bodyCache"];
  return watch;
}

/**
 * The keys Hono 4 keeps a body under (its #cachedBody and parseBody). An accessor on the prototype
 * per key, not a Proxy: a Proxy (and its handler and traps) per priced call, and the traps on every
 * read, were a share of every call's statistics (docs/PERFORMANCE.md, stop 36). A stored value
 * becomes an own enumerable property, as in Hono's plain object, so `for…in` and `Object.keys`
 * (Hono's cloneRawRequest) see exactly the keys stored.
 */
const BODY_KEYS = ["arrayBuffer", "blob", "formData", "json", "text", "parsedBody"] as const;

class WatchedBodyCache {
  readonly #req: HonoRequest;
  readonly #watch: BodyWatch;
  // Whether the raw body was already consumed when the first read began (Hono looks the cache up
  // before it reads): that read then rejects "body used", our code's fault, not the caller's.
  #usedBefore = false;
  #stored = false;

  constructor(req: HonoRequest, watch: BodyWatch) {
    this.#req = req;
    this.#watch = watch;
  }

  /** A key read before anything is stored: a read may begin. */
  looked() {
    if (!this.#stored) this.#usedBefore = this.#req.raw.bodyUsed;
    return undefined;
  }

  store(key: string, value: unknown) {
    const first = !this.#stored && value instanceof Promise;
    Object.defineProperty(this, key, { value, writable: true, enumerable: true, configurable: true });
    this.#stored = true;
    if (!first || this.#usedBefore) return;
    const began = startClock();
    const watch = this.#watch;
    (value as Promise<unknown>).then(
      () => {
        watch.waitedMs = elapsedMs(began);
      },
      () => {
        watch.failed = true;
      },
    );
  }
}

for (const key of BODY_KEYS) {
  Object.defineProperty(WatchedBodyCache.prototype, key, {
    get(this: WatchedBodyCache) {
      return this.looked();
    },
    set(this: WatchedBodyCache, value: unknown) {
      this.store(key, value);
    },
    configurable: true,
  });
}

/** A start for elapsedMs. */
export const startClock = () => ({ mono: performance.now(), wall: Date.now() });

/**
 * Whole milliseconds since `start`: in workerd performance.now() advances only across I/O, which
 * is what server time costs; the wall clock is the floor where the monotonic one lags.
 */
export const elapsedMs = (start: ReturnType<typeof startClock>) =>
  Math.max(0, Math.round(performance.now() - start.mono), Date.now() - start.wall);
