import { Hono } from "hono";
import { INTERFACE_VERSION } from "../config";
import { CLIENT_ERROR, json, operation } from "../discovery/operation";
import type { AppEnv } from "../env";
import { ledgerAnswers } from "../payments/ledger-report";

export const healthRoutes = new Hono<AppEnv>();

export const healthOperation = operation({
  method: "get",
  path: "/health",
  operationId: "get_health",
  summary: "Liveness with a real D1 and KV check",
  tags: ["service"],
  responses: { "200": json("Healthy"), "4XX": CLIENT_ERROR, "503": json("A dependency failed") },
});

async function check(probe: () => Promise<unknown>) {
  const started = Date.now();
  try {
    await probe();
    return { ok: true, ms: Date.now() - started };
  } catch (e) {
    return { ok: false, ms: Date.now() - started, error: e instanceof Error ? e.message : String(e) };
  }
}

/** Liveness plus a real round trip to D1 (schema present) and KV. 503 when either fails. */
healthRoutes.get(healthOperation.route, async (c) => {
  const [d1, kv] = await Promise.all([
    check(() => ledgerAnswers(c.env.DB)),
    check(() => c.env.KV.get("health:probe")),
  ]);
  const ok = d1.ok && kv.ok;
  return c.json(
    { status: ok ? "ok" : "degraded", version: INTERFACE_VERSION, checks: { d1, kv } },
    ok ? 200 : 503,
  );
});
