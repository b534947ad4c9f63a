import type { Context } from "hono";

/** A JSON-RPC error answered at the HTTP level, before any MCP message is handled. */
export function rpcError(
  c: Context,
  status: 400 | 405 | 413 | 415,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  return c.json({ jsonrpc: "2.0", error: { code, message }, id: null }, status, headers);
}
