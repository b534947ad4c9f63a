/**
 * The x402 MCP transport's (v2) `_meta` keys: facts of the payment protocol, so the gate can name
 * them in what it tells an MCP payer; mcp/limits.ts gives them to the MCP server and the documents
 * that describe it. Plain values, nothing loaded.
 */
export const PAYMENT_META = "x402/payment";
export const PAYMENT_RESPONSE_META = "x402/payment-response";
/** Where MCP payers that predate structuredContent (Cloudflare Agents' withX402Client) read an offer. */
export const PAYMENT_ERROR_META = "x402/error";
/**
 * The x402 v1 keys of Vercel's `x402-mcp` (npm x402-mcp, a dot where v2 has a slash): the v1
 * `X-PAYMENT` header value in, the v1 settle response (as `X-PAYMENT-RESPONSE` decodes) out.
 */
export const V1_PAYMENT_META = "x402.payment";
export const V1_PAYMENT_RESPONSE_META = "x402.payment-response";
