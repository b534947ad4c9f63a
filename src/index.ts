import { createApp } from "./app";
import { redactSecrets, x402Selling } from "./config";
import type { Bindings } from "./env";
import { missingBindings } from "./http/bindings";
import { databaseSize, pruneExpired, sizeReport } from "./ops/database";
import { sweepCheckouts } from "./payments/checkout-sweep";
import { cronFailure, logSummary, reconcile } from "./payments/reconcile";
import { refreshPublishedStats } from "./stats/published";

const app = createApp();

/**
 * The Cron Trigger (wrangler.toml [triggers]): reconciles unconfirmed payments against the chain,
 * recomputes the published reliability figures into KV (stats/published.ts), deletes expired
 * stored answers and old call-log rows and clears unpaid checkouts' stale payloads
 * (ops/database.ts), and asks Stripe about card checkouts no webhook settled
 * (payments/checkout-sweep.ts: a pack granted there runs its first call in waitUntil), side by side
 * so no part's failure skips or hides another's; then reads the database's size, logged at "warn"
 * near D1's cap. Awaited,
 * and a run where a part failed (or reconciliation left errors) throws, naming each: the Cron
 * Events list and its alerts then show it as failed instead of a success whose only trace is a
 * log line. Not retried by the platform (noRetry): the next run is 5 minutes away and picks up
 * what this one left.
 */
async function scheduled(controller: ScheduledController, env: Bindings, ctx: ExecutionContext) {
  // The summary's errors (per row) and a failed run can quote the RPC URL: redacted before logging.
  const redacted = (fields: Record<string, unknown>) =>
    redactSecrets(JSON.stringify({ cron: controller.cron, ...fields }), env);
  // Without DB every part failed on its own TypeError (five lines, none naming the binding): the
  // run does nothing, one line says why, and it fails naming it, as calls answer 503
  // (http/bindings.ts). Without KV alone the parts that need it are skipped, the rest run:
  // reconciliation reads KV only for a refund's hand-paid copy, and a send that cannot read it is
  // not signed (the refund stays owed); the published figures are written to KV; and the sweep's
  // grant runs the pack's first call, whose answer and the skills' caches may go to KV (the webhook
  // refuses its events without KV too, and Stripe's paid sessions wait for either). The run then
  // fails naming KV.
  const missing = missingBindings(env);
  const line = { level: "error", msg: "storage binding missing: the Cron's run did nothing", missing };
  if (missing.includes("DB")) {
    console.error(redacted(line));
    controller.noRetry();
    throw new Error(redacted(line));
  }
  const noKv = missing.length > 0;
  const skippedNoKv = async () => {
    throw new Error("skipped: the KV binding is missing");
  };
  const [reconciled, stats, pruned, swept] = await Promise.allSettled([
    reconcile(env),
    noKv ? skippedNoKv() : refreshPublishedStats(env),
    pruneExpired(env.DB),
    noKv ? skippedNoKv() : sweepCheckouts(env, (run) => ctx.waitUntil(run)),
  ]);
  const failures: string[] = [];
  const failed = (part: string, reason: unknown) => {
    failures.push(`${part}: ${reason}`);
    console.error(redacted({ level: "error", error: `${part}: ${reason}` }));
  };
  if (reconciled.status === "fulfilled") {
    logSummary(reconciled.value, redacted, x402Selling(env));
    const failure = cronFailure(reconciled.value);
    if (failure) failures.push(`reconcile: ${failure}`);
  } else failed("reconcile", reconciled.reason);
  if (stats.status === "fulfilled") {
    console.log(redacted({ level: "info", stats: { computed_at: stats.value.computed_at } }));
  } else failed("stats", stats.reason);
  if (pruned.status === "fulfilled") console.log(redacted({ level: "info", pruned: pruned.value }));
  else failed("prune", pruned.reason);
  // A Stripe outage stops the sweep with what it did so far: logged, then the run fails naming it.
  if (swept.status === "fulfilled") {
    const level = swept.value.error ? "error" : "info";
    (level === "error" ? console.error : console.log)(redacted({ level, checkout_sweep: swept.value }));
    if (swept.value.error) failures.push(`checkout_sweep: ${swept.value.error}`);
  } else failed("checkout_sweep", swept.reason);
  // Read after the deletes: what they left. Nothing else watches it, and past D1's cap every
  // x402 claim is refused.
  try {
    const { level, ...database } = sizeReport(await databaseSize(env.DB));
    (level === "warn" ? console.warn : console.log)(redacted({ level, database }));
  } catch (e) {
    failed("database size", e);
  }
  if (failures.length) {
    controller.noRetry();
    throw new Error(redacted({ level: "error", error: failures.join("; ") }));
  }
}

// Only the handlers are exported: workerd treats every named export of the main module as an entrypoint.
export default { fetch: app.fetch, scheduled } satisfies ExportedHandler<Bindings>;
