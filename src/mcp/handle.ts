import { StreamableHTTPTransport } from "@hono/mcp";
import {
  InitializeRequestSchema,
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import type { Context, ExecutionContext } from "hono";
import { HTTPException } from "hono/http-exception";
import * as z from "zod";
import { publicConfig } from "../config";
import type { AppEnv, Bindings } from "../env";
import { listedPartnerPricing } from "../partners/request";
import { cardKeyAuthorization } from "../payments/credits";
import { rpcError } from "./rpc-error";
import { createMcpServer } from "./server";
import { mcpTools } from "./tools";

/** How the router reaches the rest of the app (src/app.ts passes `app.fetch`; no import cycle). */
export type AppFetch = (
  req: Request,
  env: Bindings,
  ctx: ExecutionContext | undefined,
) => Response | Promise<Response>;

const executionCtx = (c: Context<AppEnv>): ExecutionContext | undefined => {
  try {
    return c.executionCtx;
  } catch {
    return undefined; // app.fetch without a context (tests)
  }
};

/**
 * One parsed JSON value POSTed to /mcp, answered by a fresh server and transport. This module
 * holds everything the MCP SDK brings (its zod schemas, ajv, @hono/mcp): src/routes/mcp.ts loads
 * it on the first MCP message of an isolate, so start-up never evaluates it.
 */
export async function handleMcpMessage(c: Context<AppEnv>, parsed: unknown, appFetch: AppFetch) {
  const message = JSONRPCMessageSchema.safeParse(parsed);
  if (!message.success) return rpcError(c, 400, -32600, "Invalid Request: not a JSON-RPC 2.0 message");
  // The transport reads initialize itself and answers bad params with -32603 (internal error):
  // checked here, so a client gets -32602 (invalid params) with its own request id.
  const m = message.data as { method?: unknown; id?: string | number };
  if (m.method === "initialize" && m.id !== undefined) {
    const init = InitializeRequestSchema.safeParse(message.data);
    if (!init.success) {
      return c.json({
        jsonrpc: "2.0",
        id: m.id,
        error: { code: -32602, message: `Invalid params: ${z.prettifyError(init.error)}` },
      });
    }
  }
  const version = c.req.header("mcp-protocol-version");
  // An empty header is an unsupported version too (400 as the transport spec says), not the SDK's 404.
  if (
    version !== undefined &&
    !isInitializeRequest(message.data) &&
    !SUPPORTED_PROTOCOL_VERSIONS.includes(version)
  ) {
    return rpcError(
      c,
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(", ")})`,
    );
  }

  const cfg = publicConfig(c.env, c.req.url);
  const env = c.env;
  const ctx = executionCtx(c);
  const pc = listedPartnerPricing(c);
  const server = createMcpServer({
    tools: mcpTools(cfg, pc),
    baseUrl: cfg.baseUrl,
    partners: pc !== undefined,
    freeBeta: cfg.freeBeta,
    origin: new URL(c.req.url).origin,
    // A card key in any form the HTTP gate takes (X-API-Key, a bare mk_…) pays over MCP too.
    authorization: cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key")),
    db: env.DB,
    clientIp: c.req.header("cf-connecting-ip"),
    dispatch: async (req) => appFetch(req, env, ctx),
  });
  const transport = new StreamableHTTPTransport({ enableJsonResponse: true });
  await server.connect(transport);
  try {
    const res = await transport.handleRequest(c, message.data);
    // Notifications and responses are accepted with 202 and no body (Streamable HTTP); the
    // transport writes `null` as JSON there.
    if (!res || res.status === 202) return c.body(null, 202);
    return res;
  } catch (e) {
    // The transport answers its refusals (406 Not Acceptable, …) as HTTPExceptions with a body.
    if (e instanceof HTTPException) return e.getResponse();
    throw e;
  } finally {
    await server.close();
  }
}
