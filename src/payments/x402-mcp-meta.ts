/**
 * The x402 MCP transport's (v2) `_meta` keys: facts of the payment protocol, so the gate can name
 * them in what it tells an MCP payer; mcp/limits.ts gives them to the MCP server and the documents
 * that describe it. Plain values, nothing loaded.
 */
export const PAYMENT_META = "x402/payment";
export const PAYMENT_RESPONSE_META = "x402/payment-response";
/** Where MCP payers that predate structuredContent (Cloudflare Agents' withX402Client) read an offer. */
export const PAYMENT_ERROR_META = "x402/error";
