import { createApp } from "./app";
import { redactSecrets } from "./config";
import type { Bindings } from "./env";
import { reconcile } from "./payments/reconcile";

const app = createApp();

/** The Cron Trigger (wrangler.toml [triggers]): reconciles unconfirmed payments against the chain. */
async function scheduled(controller: ScheduledController, env: Bindings, ctx: ExecutionContext) {
  // The summary's errors (per row) and a failed run can quote the RPC URL: redacted before logging.
  const log = (level: "info" | "error", fields: Record<string, unknown>) =>
    (level === "info" ? console.log : console.error)(
      redactSecrets(JSON.stringify({ level, cron: controller.cron, ...fields }), env),
    );
  ctx.waitUntil(
    reconcile(env).then(
      (summary) => log("info", { reconcile: summary }),
      (e) => log("error", { error: `reconcile: ${e}` }),
    ),
  );
}

// Only the handlers are exported: workerd treats every named export of the main module as an entrypoint.
export default { fetch: app.fetch, scheduled } satisfies ExportedHandler<Bindings>;
