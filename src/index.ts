import { createApp } from "./app";
import type { Bindings } from "./env";
import { reconcile } from "./payments/reconcile";

const app = createApp();

/** The Cron Trigger (wrangler.toml [triggers]): reconciles unconfirmed payments against the chain. */
async function scheduled(controller: ScheduledController, env: Bindings, ctx: ExecutionContext) {
  ctx.waitUntil(
    reconcile(env).then(
      (summary) => console.log(JSON.stringify({ level: "info", cron: controller.cron, reconcile: summary })),
      (e) =>
        console.error(JSON.stringify({ level: "error", cron: controller.cron, error: `reconcile: ${e}` })),
    ),
  );
}

// Only the handlers are exported: workerd treats every named export of the main module as an entrypoint.
export default { fetch: app.fetch, scheduled } satisfies ExportedHandler<Bindings>;
