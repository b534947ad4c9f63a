import type { MiddlewareHandler } from "hono";
import type { AppEnv, Bindings } from "../env";
import { detail } from "./errors";
import { logOncePerValue } from "./log-once";

/**
 * The storage bindings a call needs: D1 holds the payment claims, ledger, credits and call log, KV
 * the stored answers kept out of D1 and the network skills' caches. deploy-check refuses a
 * wrangler.toml without them; a deployment that lost one anyway answered an unpaid call with a 500
 * (the call log keyed on `env.DB`), and without KV sold a call whose answer it might not store.
 */
const NEEDED = ["DB", "KV"] as const;

/** The needed bindings this deployment lacks, by name (a binding has no value to leak). */
export const missingBindings = (env: Bindings): string[] =>
  NEEDED.filter((name) => !(env as unknown as Record<string, unknown>)[name]);

/**
 * The first step of every sold call (skills, partner tries, refinery): a 503 naming the missing
 * binding, before anything is recorded, priced or charged. /health says the same (routes/health.ts).
 */
export const bindingsPresent: MiddlewareHandler<AppEnv> = (c, next) => {
  const missing = missingBindings(c.env);
  if (missing.length === 0) return next();
  logOncePerValue("bindings", missing.join(","), {
    level: "error",
    msg: "storage binding missing: calls refused",
    missing,
  });
  return Promise.resolve(
    detail(
      c,
      503,
      `This deployment is missing its ${missing.join(" and ")} storage binding: calls are refused until the operator restores it; nothing was charged`,
    ),
  );
};
