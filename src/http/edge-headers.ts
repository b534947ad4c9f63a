import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { CORS_ANSWER_HEADERS, isCorsPath, preflight } from "./cors";
import { securityHeaders } from "./security-headers";

/**
 * The outermost middleware, and the only one on every request: request id, CORS preflight, and
 * the security headers of the final answer (a document's set or a non-document's: security-headers.ts).
 * One step instead of five (hono's requestId, secureHeaders and
 * cors, and two of ours), and the headers are set once, after everything inside (the x402 steps
 * replace whole responses). hono/cors also wrote its headers on a placeholder response before the
 * handler ran, so Hono copied every handler's Response into a new one; the profile of a 1 KB call
 * showed that copy, the placeholder and the chain as the app's largest per-request cost.
 */
export const edgeHeaders: MiddlewareHandler<AppEnv> = async (c, next) => {
  // Always our own id: it keys the ledgers and Stripe idempotency, so a client-sent X-Request-Id
  // (reused, or chosen to collide) must never reach them. It is echoed in X-Request-Id.
  const id = crypto.randomUUID();
  c.set("requestId", id);
  const cors = isCorsPath(c.req.path);
  if (cors && c.req.method === "OPTIONS") c.res = preflight();
  else await next();
  let headers = c.res.headers;
  try {
    headers.set("X-Request-Id", id);
  } catch {
    // A Response made by fetch() (a proxied partner answer) has immutable headers: copy it once.
    c.res = new Response(c.res.body, c.res);
    headers = c.res.headers;
    headers.set("X-Request-Id", id);
  }
  // Decided on the final answer: a step inside may have replaced it (an x402 402, an HTML error page).
  for (const [name, value] of securityHeaders(c.res.status, headers.get("content-type"), cors))
    headers.set(name, value);
  if (cors) for (const [name, value] of CORS_ANSWER_HEADERS) headers.set(name, value);
  headers.delete("X-Powered-By");
};
