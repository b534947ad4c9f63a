/**
 * Paths other origins may read: the public API, the MCP endpoint, the discovery documents and
 * /health (which interface 2.7.1 §4.1 lists with them), so browser-based agents and tools can
 * fetch the catalog, call a skill, read its 402 and check the service is up. Never the admin API
 * or pages: they answer no preflight and carry no Access-Control-* header.
 */
const CORS_PATH =
  /^\/(?:api\/(?!admin(?:\/|$)).*|mcp|health|openapi\.json|llms\.txt|AGENTS\.md|robots\.txt|sitemap\.xml|agents\.json|\.well-known\/.*|contracts\/.*|services\/.*)$/;

export const isCorsPath = (path: string) => CORS_PATH.test(path);

const ALLOW_HEADERS = [
  "PAYMENT-SIGNATURE",
  "X-PAYMENT",
  "Authorization",
  "X-API-Key",
  "Content-Type",
  "Idempotency-Key",
  // The official x402 clients (@x402/fetch and @x402/axios v2, x402-fetch and x402-axios v1) add
  // this as a request header on the paid retry; it is not CORS-safelisted, so without it the
  // browser's preflight fails and a browser agent on another origin can never send its payment.
  "Access-Control-Expose-Headers",
  // Browser-based MCP clients (Streamable HTTP) send these on /mcp.
  "Accept",
  "Mcp-Protocol-Version",
  "Mcp-Session-Id",
];

const EXPOSE_HEADERS = [
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
  // Where /api/stats's figures came from (docs/STATS.md): the route is public to every origin.
  "X-Stats-Cache",
];

/**
 * `*` origin and no credentials: nothing here rides on cookies (payments are signed headers,
 * credits a bearer key), so no Vary: Origin either. Set on every answer on a CORS path.
 */
export const CORS_ANSWER_HEADERS: [string, string][] = [
  ["Access-Control-Allow-Origin", "*"],
  ["Access-Control-Expose-Headers", EXPOSE_HEADERS.join(",")],
];

const PREFLIGHT_HEADERS: [string, string][] = [
  ...CORS_ANSWER_HEADERS,
  ["Access-Control-Max-Age", "600"],
  ["Access-Control-Allow-Methods", "GET,POST,OPTIONS"],
  ["Access-Control-Allow-Headers", ALLOW_HEADERS.join(",")],
  ["Vary", "Access-Control-Request-Headers"],
];

/** The preflight answer (204, any CORS path, routed or not): it never reaches a handler. */
export const preflight = () =>
  new Response(null, { status: 204, statusText: "No Content", headers: PREFLIGHT_HEADERS });
