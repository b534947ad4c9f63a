import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { validationResponse } from "../http/validation";
import { isSoldPerCall } from "./pricing";
import { partnerConfigOf, tryTargetOf } from "./request";
import { upstreamPath } from "./upstream";

/** The steps partner routes run before their handler (src/routes/partners.ts puts them in order). */

/** The ledger and statistics name of a try call. */
export const tryResource = (c: Context<AppEnv>) =>
  `partner:${c.req.param("partner_id")}/${c.req.param("service_id")}`;

/** Unknown targets and unsafe path parameters are refused before any payment is asked for. */
export const knownTryTarget: MiddlewareHandler<AppEnv> = async (c, next) => {
  const found = tryTargetOf(c);
  if (!found) return detail(c, 404, "Unknown partner or service; see /api/partners.");
  const res = upstreamPath(found.service, c.req.query());
  if ("errors" in res) return validationResponse(c, res.errors);
  await next();
};

/** A try call the caller pays for: a service sold per call under a valid configuration. */
export function trySoldPerCall(c: Context<AppEnv>) {
  const found = tryTargetOf(c);
  const pc = partnerConfigOf(c);
  return found !== undefined && !("error" in pc) && isSoldPerCall(found.partner, found.service, pc);
}

/**
 * Reads the body once, so every later reader (x402's dynamic price, the idempotency fingerprint,
 * validation) shares it. As bytes, not text: Request.text() replaces each byte that is no UTF-8
 * with U+FFFD, and bodyText (http/json-text.ts) takes a text already read as decoded, so the call
 * ran on other text than was sent; from the bytes it decodes strictly, and such a body is the
 * 422 json_invalid a JSON syntax error is, where that one is answered (after the payment gate).
 */
export const cacheBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "POST") await c.req.arrayBuffer();
  await next();
};

/**
 * Hono answers HEAD with the GET route, but x402 prices only GET and POST: a HEAD would run the
 * handler unpaid (and could pay the partner from the operating wallet). It is refused outright.
 */
export const refuseHead: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method !== "HEAD") return next();
  return detail(c, 405, "Method Not Allowed", {}, { Allow: "GET, POST" });
};
