import { StreamableHTTPTransport } from "@hono/mcp";
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { type Context, type ExecutionContext, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { publicConfig } from "../config";
import type { AppEnv, Bindings } from "../env";
import { MCP_MAX_BODY_BYTES, MCP_PATH } from "../mcp/limits";
import { createMcpServer } from "../mcp/server";
import { mcpTools } from "../mcp/tools";
import { pricingOf } from "../partners/request";

/** How the router reaches the rest of the app (src/app.ts passes `app.fetch`; no import cycle). */
export type AppFetch = (
  req: Request,
  env: Bindings,
  ctx: ExecutionContext | undefined,
) => Response | Promise<Response>;

/** A JSON-RPC error answered at the HTTP level, before any MCP message is handled. */
function rpcError(
  c: Context,
  status: 400 | 405 | 413 | 415,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  return c.json({ jsonrpc: "2.0", error: { code, message }, id: null }, status, headers);
}

const executionCtx = (c: Context<AppEnv>): ExecutionContext | undefined => {
  try {
    return c.executionCtx;
  } catch {
    return undefined; // app.fetch without a context (tests)
  }
};

/**
 * MCP over Streamable HTTP, stateless: every POST gets a fresh server and transport, and plain
 * JSON answers (no SSE stream, no session id). GET (a server-to-client stream) and DELETE (ending
 * a session) have no meaning without sessions and answer 405, as the transport spec allows.
 */
export function mcpRoutes(appFetch: AppFetch) {
  const routes = new Hono<AppEnv>();

  routes.on(["GET", "DELETE", "PUT", "PATCH"], MCP_PATH, (c) =>
    rpcError(c, 405, -32000, "Method Not Allowed: this stateless MCP server takes POST only", {
      Allow: "POST",
    }),
  );

  routes.post(
    MCP_PATH,
    bodyLimit({
      maxSize: MCP_MAX_BODY_BYTES,
      onError: (c) => rpcError(c, 413, -32000, `Request body larger than ${MCP_MAX_BODY_BYTES} bytes`),
    }),
    async (c) => {
      // Codes as the SDK's own web transport answers them, except a well-formed JSON value that is
      // no JSON-RPC message: that is -32600 Invalid Request in JSON-RPC 2.0.
      if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) {
        return rpcError(c, 415, -32000, "Unsupported Media Type: Content-Type must be application/json");
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(await c.req.text());
      } catch {
        return rpcError(c, 400, -32700, "Parse error: Invalid JSON");
      }
      if (Array.isArray(parsed)) {
        // MCP 2025-06-18 removed JSON-RPC batching; one message per POST keeps one payment per call.
        return rpcError(
          c,
          400,
          -32600,
          "Invalid Request: JSON-RPC batches are not supported; send one message per request",
        );
      }
      const message = JSONRPCMessageSchema.safeParse(parsed);
      if (!message.success) return rpcError(c, 400, -32600, "Invalid Request: not a JSON-RPC 2.0 message");
      const version = c.req.header("mcp-protocol-version");
      if (version && !isInitializeRequest(message.data) && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        return rpcError(
          c,
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`,
        );
      }

      const cfg = publicConfig(c.env, c.req.url);
      const pricing = pricingOf(c);
      const env = c.env;
      const ctx = executionCtx(c);
      const server = createMcpServer({
        tools: mcpTools(cfg, "error" in pricing ? undefined : pricing),
        baseUrl: cfg.baseUrl,
        origin: new URL(c.req.url).origin,
        authorization: c.req.header("authorization"),
        dispatch: async (req) => appFetch(req, env, ctx),
      });
      const transport = new StreamableHTTPTransport({ enableJsonResponse: true });
      await server.connect(transport);
      try {
        return (await transport.handleRequest(c, message.data)) ?? c.body(null, 202);
      } catch (e) {
        // The transport answers its refusals (406 Not Acceptable, …) as HTTPExceptions with a body.
        if (e instanceof HTTPException) return e.getResponse();
        throw e;
      } finally {
        await server.close();
      }
    },
  );
  return routes;
}
