import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";

/**
 * Paths other origins may read: the public API, the MCP endpoint and the discovery documents, so
 * browser-based agents and tools can fetch the catalog, call a skill and read its 402. Never the admin API or pages:
 * they answer no preflight and carry no Access-Control-* header.
 */
const CORS_PATH =
  /^\/(?:api\/(?!admin(?:\/|$)).*|mcp|openapi\.json|llms\.txt|AGENTS\.md|robots\.txt|sitemap\.xml|agents\.json|\.well-known\/.*|contracts\/.*|services\/.*)$/;

export const isCorsPath = (path: string) => CORS_PATH.test(path);

const apiCors = cors({
  origin: "*",
  allowMethods: ["GET", "POST", "OPTIONS"],
  allowHeaders: [
    "PAYMENT-SIGNATURE",
    "X-PAYMENT",
    "Authorization",
    "X-API-Key",
    "Content-Type",
    "Idempotency-Key",
    // Browser-based MCP clients (Streamable HTTP) send these on /mcp.
    "Accept",
    "Mcp-Protocol-Version",
    "Mcp-Session-Id",
  ],
  exposeHeaders: [
    "PAYMENT-REQUIRED",
    "PAYMENT-RESPONSE",
    "X-PAYMENT-RESPONSE",
    "X-Credits-Remaining",
    "X-Request-Id",
    // Receipts and idempotent replays (docs/receipts-and-retries.md); Retry-After of a 409 in flight.
    "X-Payment-Receipt",
    "X-Idempotent-Replay",
    "X-Original-Request-Id",
    "Retry-After",
  ],
  maxAge: 600,
});

/** CORS for the public API and discovery documents only (hono/cors, `*` origin, no credentials). */
export const publicCors: MiddlewareHandler = (c, next) =>
  isCorsPath(c.req.path) ? apiCors(c, next) : next();
