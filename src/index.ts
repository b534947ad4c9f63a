import { createApp } from "./app";
import { redactSecrets } from "./config";
import type { Bindings } from "./env";
import { cronFailure, reconcile } from "./payments/reconcile";

const app = createApp();

/**
 * The Cron Trigger (wrangler.toml [triggers]): reconciles unconfirmed payments against the chain.
 * Awaited, and a run that failed or left errors throws: the Cron Events list and its alerts then
 * show it as failed instead of a success whose only trace is a log line. Not retried by the
 * platform (noRetry): the next run is 5 minutes away and picks up what this one left.
 */
async function scheduled(controller: ScheduledController, env: Bindings, _ctx: ExecutionContext) {
  // The summary's errors (per row) and a failed run can quote the RPC URL: redacted before logging.
  const redacted = (fields: Record<string, unknown>) =>
    redactSecrets(JSON.stringify({ cron: controller.cron, ...fields }), env);
  let summary: Awaited<ReturnType<typeof reconcile>>;
  try {
    summary = await reconcile(env);
  } catch (e) {
    const line = redacted({ level: "error", error: `reconcile: ${e}` });
    console.error(line);
    controller.noRetry();
    throw new Error(line);
  }
  console.log(redacted({ level: "info", reconcile: summary }));
  const failure = cronFailure(summary);
  if (failure) {
    controller.noRetry();
    throw new Error(redacted({ level: "error", error: `reconcile: ${failure}` }));
  }
}

// Only the handlers are exported: workerd treats every named export of the main module as an entrypoint.
export default { fetch: app.fetch, scheduled } satisfies ExportedHandler<Bindings>;
