import type { Context } from "hono";
import type { AppEnv } from "../env";

/** Work that may finish after the answer was sent (waitUntil); awaited where no context exists. */
export async function afterResponse(c: Context<AppEnv>, work: Promise<unknown>) {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    await work; // Hono throws when the request came without an ExecutionContext (app.fetch in tests)
  }
}

/**
 * A write that failed while answering a paid call, tried three more times (100, 300 and 900 ms
 * apart) after the answer: the paid answer never waits for, or fails with, the storage behind it.
 */
export async function retryWrite(
  write: () => Promise<unknown>,
  onFailure: (e: unknown, attempt: number) => void,
) {
  for (let attempt = 2; attempt <= 4; attempt++) {
    await new Promise((r) => setTimeout(r, 100 * 3 ** (attempt - 2)));
    try {
      await write();
      return;
    } catch (e) {
      onFailure(e, attempt);
    }
  }
}
