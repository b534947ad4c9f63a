import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";

type X402Server = typeof import("./x402-gate");
let loaded: X402Server | undefined;

/**
 * The x402 server stack (@x402/core's server, the EVM scheme, bazaar and its ajv, viem through the
 * extensions) is imported on the first request that needs it, not at start-up: a static import
 * anywhere would evaluate it when the Worker starts (docs/PERFORMANCE.md, "Start-up"). Later
 * requests use the loaded module without waiting.
 */
export async function x402Server(): Promise<X402Server> {
  loaded ??= await import("./x402-gate");
  return loaded;
}

/**
 * x402 v2 payment for one call (src/payments/x402-gate.ts), loaded on first use. Not async once
 * loaded: every unpaid call comes here, and an async step costs it two more promise jobs.
 */
export const x402Gate: MiddlewareHandler<AppEnv> = (c, next) =>
  loaded ? loaded.x402Gate(c, next) : x402Server().then((m) => m.x402Gate(c, next));
