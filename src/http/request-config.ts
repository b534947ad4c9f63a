import type { Context } from "hono";
import { type PublicConfig, publicConfig } from "../config";
import type { AppEnv } from "../env";

const byRequest = new WeakMap<Context<AppEnv>, PublicConfig>();

/**
 * publicConfig of this request, looked up once per request: a priced call's steps (statistics,
 * quota, payment gate, x402 gate) each asked for it, and each time read the request's URL (a new
 * string from the runtime) to find its origin (docs/PERFORMANCE.md, stop 36). A request's
 * bindings and URL never change while it runs.
 */
export function requestConfig(c: Context<AppEnv>): PublicConfig {
  let cfg = byRequest.get(c);
  if (cfg === undefined) {
    cfg = publicConfig(c.env, c.req.url);
    byRequest.set(c, cfg);
  }
  return cfg;
}
