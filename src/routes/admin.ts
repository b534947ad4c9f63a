import { Hono, type MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { z } from "zod";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { queryParams } from "../http/validation";

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

/** The x402 ledger: settled payments, newest first, with totals over the filter. */
adminRoutes.get("/api/admin/payments", queryParams(paymentsQuery), async (c) => {
  const q = c.get("query") as z.infer<typeof paymentsQuery>;
  const where = "WHERE (?1 IS NULL OR resource = ?1) AND (?2 IS NULL OR request_id = ?2)";
  const args = [q.resource ?? null, q.request_id ?? null];
  const [rows, totals] = await c.env.DB.batch([
    c.env.DB.prepare(
      `SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at
       FROM payments ${where} ORDER BY id DESC LIMIT ?3`,
    ).bind(...args, q.limit),
    c.env.DB.prepare(
      `SELECT count(*) AS count, coalesce(sum(amount_atomic), 0) AS amount_atomic FROM payments ${where}`,
    ).bind(...args),
  ]);
  return c.json({
    payments: rows?.results ?? [],
    totals: totals?.results[0] ?? { count: 0, amount_atomic: 0 },
  });
});
