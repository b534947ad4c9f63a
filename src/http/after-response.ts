import type { Context } from "hono";
import type { AppEnv } from "../env";

/**
 * A request's ExecutionContext, or undefined when it came without one (app.fetch in tests): Hono's
 * `executionCtx` getter throws then.
 */
export function executionCtxOf<X>(c: { readonly executionCtx: X }): X | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

/** A request's waitUntil (work that may finish after the answer), or undefined without a context. */
export function afterAnswerOf(c: {
  readonly executionCtx: { waitUntil(work: Promise<unknown>): void };
}): ((work: Promise<unknown>) => void) | undefined {
  const ctx = executionCtxOf(c);
  return ctx && ((work) => ctx.waitUntil(work));
}

/** Work that may finish after the answer was sent (waitUntil); awaited where no context exists. */
export async function afterResponse(c: Context<AppEnv>, work: Promise<unknown>) {
  const ctx = executionCtxOf(c);
  if (ctx) {
    try {
      return ctx.waitUntil(work);
    } catch {
      // A waitUntil that refuses the work: awaited, as without a context.
    }
  }
  await work;
}

/**
 * Work the answer waits for that a client going away must not cut short (a failed card call's
 * credit given back): awaited, and handed to waitUntil too. On Cloudflare a disconnect cancels a
 * request's pending work except what waitUntil holds, which runs on up to 30 s after it (see
 * shared-load.ts); work still pending then is cancelled too.
 */
export function outlastingClient<T>(c: Context<AppEnv>, work: Promise<T>): Promise<T> {
  // Without an ExecutionContext (app.fetch in tests) awaiting it is all there is.
  const ctx = executionCtxOf(c);
  try {
    // Its failure is the awaiting caller's to handle; waitUntil only keeps it alive.
    ctx?.waitUntil(work.catch(() => undefined));
  } catch {
    // A waitUntil that refuses it: the caller's await still holds it.
  }
  return work;
}

/** The last attempt of a retried write (retryWrite): the answer's own, then three after it. */
export const LAST_WRITE_ATTEMPT = 4;

/**
 * A write that failed while answering a paid call, tried three more times (100, 300 and 900 ms
 * apart) after the answer: the paid answer never waits for, or fails with, the storage behind it.
 */
export async function retryWrite(
  write: () => Promise<unknown>,
  onFailure: (e: unknown, attempt: number) => void,
) {
  for (let attempt = 2; attempt <= LAST_WRITE_ATTEMPT; attempt++) {
    await new Promise((r) => setTimeout(r, 100 * 3 ** (attempt - 2)));
    try {
      await write();
      return;
    } catch (e) {
      onFailure(e, attempt);
    }
  }
}

/**
 * One log line per failed write attempt (the attempt counts from 1, the write on the answer's path).
 * The last one says so (`final: true`): nothing tries that write again, so what it was to record
 * is missing until a person writes it (docs/OPERATIONS.md, "Log lines").
 */
export function logWriteFailure(requestId: string, what: string, e: unknown, attempt: number) {
  console.error(
    JSON.stringify({
      level: "error",
      request_id: requestId,
      attempt,
      ...(attempt >= LAST_WRITE_ATTEMPT ? { final: true } : {}),
      error: `${what} write: ${e}`,
    }),
  );
}

/** A write that already failed once on the answer's path (and was logged), retried after it. */
export function retryAfterAnswer(c: Context<AppEnv>, what: string, write: () => Promise<unknown>) {
  const requestId = c.get("requestId");
  return afterResponse(
    c,
    retryWrite(write, (e, attempt) => logWriteFailure(requestId, what, e, attempt)),
  );
}

/**
 * A write the answer must not fail with (the buyer's payment or refund already stands): tried
 * now, and if D1 refuses it, logged and retried after the answer.
 */
export async function writeOrRetryAfter(c: Context<AppEnv>, what: string, write: () => Promise<unknown>) {
  try {
    await write();
  } catch (e) {
    logWriteFailure(c.get("requestId"), what, e, 1);
    await retryAfterAnswer(c, what, write);
  }
}
