import { Hono, type MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { z } from "zod";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { jsonBody, queryParams } from "../http/validation";
import { partnerById } from "../partners/listing";
import { ledgerCsv, owedSummary, settlePartner } from "../partners/payouts";
import { reconcile, reconciliationReport } from "../payments/reconcile";
import { MAX_TIMEOUT_SECONDS } from "../payments/x402-gate";

export const adminRoutes = new Hono<AppEnv>();

// Maintainer endpoints: a deployment without ADMIN_TOKEN has none (503), never an open door.
adminRoutes.use("/api/admin/*", async (c, next) => {
  const token = c.env.ADMIN_TOKEN;
  if (!token) return detail(c, 503, "Admin endpoints are disabled: set the ADMIN_TOKEN secret.");
  const auth: MiddlewareHandler<AppEnv> = bearerAuth({
    token,
    noAuthenticationHeader: { message: { detail: "Missing bearer token" } },
    invalidToken: { message: { detail: "Invalid bearer token" } },
    invalidAuthenticationHeader: { message: { detail: "Malformed Authorization header" } },
  });
  return auth(c, next);
});

export const paymentsQuery = z.object({
  resource: z.string().max(200).optional(),
  request_id: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/**
 * A 'running' authorization older than its own validity window can no longer settle: if it is
 * still running then, the ledger write after its settlement failed, or the Worker was cut off.
 */
const RUNNING_GRACE_MS = MAX_TIMEOUT_SECONDS * 1000;

/** The x402 ledger: settled payments, newest first, with totals over the filter. */
adminRoutes.get("/api/admin/payments", queryParams(paymentsQuery), async (c) => {
  const q = c.get("query") as z.infer<typeof paymentsQuery>;
  const where = "WHERE (?1 IS NULL OR resource = ?1) AND (?2 IS NULL OR request_id = ?2)";
  const args = [q.resource ?? null, q.request_id ?? null];
  const [rows, totals] = await c.env.DB.batch([
    c.env.DB.prepare(
      `SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at, reconciled_at
       FROM payments ${where} ORDER BY id DESC LIMIT ?3`,
    ).bind(...args, q.limit),
    c.env.DB.prepare(
      `SELECT count(*) AS count, coalesce(sum(amount_atomic), 0) AS amount_atomic FROM payments ${where}`,
    ).bind(...args),
  ]);
  // Authorizations whose settlement was never confirmed (facilitator gave no answer, or the
  // ledger write failed after settling): check each against the chain before crediting anyone.
  const unconfirmed = await c.env.DB.prepare(
    `SELECT nonce, request_id, resource, status, updated_at FROM payment_nonces
     WHERE status = 'failed' OR (status = 'running' AND updated_at < ?1) ORDER BY updated_at DESC LIMIT 1000`,
  )
    .bind(Date.now() - RUNNING_GRACE_MS)
    .all();
  return c.json({
    payments: rows?.results ?? [],
    totals: totals?.results[0] ?? { count: 0, amount_atomic: 0 },
    unconfirmed: unconfirmed.results,
    // What the reconciler decided from the chain (payments/reconcile.ts), newest first.
    reconciliations: await reconciliationReport(c.env.DB, q.limit),
  });
});

/** Runs the reconciler now (the same run the Cron Trigger makes every 5 minutes). */
adminRoutes.post("/api/admin/reconcile", async (c) => {
  const summary = await reconcile(c.env);
  return c.json(summary, summary.skipped ? 503 : 200);
});

export const payoutsQuery = z.object({ format: z.enum(["json", "csv"]).default("json") });

/** What is owed to each partner and service; `?format=csv` exports every ledger row. */
adminRoutes.get("/api/admin/payouts", queryParams(payoutsQuery), async (c) => {
  const { format } = c.get("query") as z.infer<typeof payoutsQuery>;
  if (format === "csv") {
    return c.body(await ledgerCsv(c.env.DB), 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": 'attachment; filename="payout-ledger.csv"',
    });
  }
  return c.json(await owedSummary(c.env.DB));
});

export const settleBody = z.object({
  tx_hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "a 0x-prefixed 32-byte transaction hash")
    .meta({ description: "Transaction that paid the partner." }),
});

/** Records a payout batch for a partner: owed amounts go to zero, history stays. */
adminRoutes.post("/api/admin/payouts/:partner_id/settle", jsonBody(settleBody), async (c) => {
  const partnerId = c.req.param("partner_id");
  if (!partnerById(partnerId)) return detail(c, 404, `Unknown partner "${partnerId}"`);
  const { tx_hash } = c.get("body") as z.infer<typeof settleBody>;
  const batch = await settlePartner(c.env.DB, partnerId, tx_hash);
  if (!batch) return detail(c, 409, `Nothing is owed to ${partnerId}`);
  return c.json({ partner_id: partnerId, batch });
});
