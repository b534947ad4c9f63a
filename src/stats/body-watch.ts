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
 * no I/O: two property writes and a promise reaction, on the read that happens anyway.
 */
export function watchBody(req: HonoRequest): BodyWatch {
  const watch: BodyWatch = { waitedMs: 0, failed: false };
  const cache: Record<string, Promise<unknown>> = {};
  // Whether the raw body was already consumed when the first read began (Hono looks the cache up
  // before it reads): that read then rejects "body used", our code's fault, not the caller's.
  let usedBefore = false;
  req.bodyCache = new Proxy(cache, {
    get(target, key, receiver) {
      if (Object.keys(target).length === 0) usedBefore = req.raw.bodyUsed;
      return Reflect.get(target, key, receiver);
    },
    set(target, key, value) {
      const first = Object.keys(target).length === 0 && value instanceof Promise;
      Reflect.set(target, key, value);
      if (first && !usedBefore) {
        const began = startClock();
        value.then(
          () => {
            watch.waitedMs = elapsedMs(began);
          },
          () => {
            watch.failed = true;
          },
        );
      }
      return true;
    },
  }) as HonoRequest["bodyCache"];
  return watch;
}

/** A start for elapsedMs. */
export const startClock = () => ({ mono: performance.now(), wall: Date.now() });

/**
 * Whole milliseconds since `start`: in workerd performance.now() advances only across I/O, which
 * is what server time costs; the wall clock is the floor where the monotonic one lags.
 */
export const elapsedMs = (start: ReturnType<typeof startClock>) =>
  Math.max(0, Math.round(performance.now() - start.mono), Date.now() - start.wall);
