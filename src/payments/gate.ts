import type { MiddlewareHandler } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { x402Gate } from "./x402-gate";

/** Who pays for a call: nobody in free beta, otherwise x402. */
export const paymentGate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const cfg = publicConfig(c.env, c.req.url);
  if (cfg.freeBeta) return next();
  if (!cfg.x402Enabled)
    return detail(c, 402, "Payment required: x402 payments are disabled on this deployment.");
  return x402Gate(c, next);
};
