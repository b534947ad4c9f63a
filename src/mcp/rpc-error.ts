import type { Context } from "hono";

/** A JSON-RPC error answered at the HTTP level, before any MCP message is handled. */
export function rpcError(
  c: Context,
  status: 400 | 403 | 405 | 406 | 413 | 415,
  code: number,
  message: string,
  headers: Record<string, string> = {},
  // The request's id when the message was read (JSON-RPC: null only when it could not be).
  id: unknown = null,
) {
  const echoed = typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
  return c.json({ jsonrpc: "2.0", error: { code, message }, id: echoed }, status, headers);
}
