import { Hono } from "hono";
import { INTERFACE_VERSION, x402Selling } from "../config";
import { CLIENT_ERROR, json, operation } from "../discovery/operation";
import type { AppEnv } from "../env";
import { requestConfig } from "../http/request-config";
import { configProblems } from "../ops/config-problems";
import { ledgerAnswers } from "../payments/ledger-report";
import { x402Server } from "../payments/x402-lazy";

export const healthRoutes = new Hono<AppEnv>();

export const healthOperation = operation({
  method: "get",
  path: "/health",
  operationId: "get_health",
  summary:
    "Readiness: a real D1 and KV round trip, and the configuration's mistakes by var name (never a value)",
  tags: ["service"],
  responses: {
    "200": json("Serving and selling; checks.config may still list mistakes that refuse no sale"),
    "4XX": CLIENT_ERROR,
    "503": json("A dependency failed, or a configuration mistake refuses sales (checks.config names it)"),
  },
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

const missing = (name: string) => ({ ok: false, ms: 0, error: `the ${name} binding is missing` });

/**
 * D1 (schema present) and KV each probed with a real round trip, and the configuration checked
 * locally (ops/config-problems.ts: no facilitator, RPC or Stripe call). 503 `degraded` when a
 * probe fails or a mistake refuses sales (docs/OPERATIONS.md, "What /health says").
 */
healthRoutes.get(healthOperation.route, async (c) => {
  const env = c.env;
  const cfg = requestConfig(c);
  // The gate's own verdict, from the module paid calls load anyway; not loaded while x402 sells nothing.
  const gate = x402Selling(env) ? await x402Server() : undefined;
  const x402Problem = gate?.configProblem(cfg);
  // What this isolate's gate last saw of the facilitator, never a read of its own.
  const facilitator = gate && !x402Problem ? gate.facilitatorState(env, cfg) : undefined;
  const [d1, kv] = await Promise.all([
    env.DB ? check(() => ledgerAnswers(env.DB)) : missing("DB"),
    env.KV ? check(() => env.KV.get("health:probe")) : missing("KV"),
  ]);
  const problems = configProblems(env, cfg, x402Problem);
  const ok = d1.ok && kv.ok && (facilitator?.ok ?? true) && !problems.some((p) => p.blocks);
  return c.json(
    {
      status: ok ? "ok" : "degraded",
      version: INTERFACE_VERSION,
      checks: {
        d1,
        kv,
        ...(facilitator ? { facilitator } : {}),
        config: { ok: problems.length === 0, problems },
      },
    },
    ok ? 200 : 503,
  );
});
