import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type McpHttpHandler,
  SUPPORTED_PROTOCOL_VERSIONS,
  specTypeSchemas,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { Context, ExecutionContext } from "hono";
import { accepts } from "hono/accepts";
import * as z from "zod";
import { publicConfig } from "../config";
import type { AppEnv, Bindings } from "../env";
import { executionCtxOf } from "../http/after-response";
import { listedPartnerPricing } from "../partners/request";
import { cardKeyAuthorization } from "../payments/credits";
import { rpcError } from "./rpc-error";
import { asLegacyResourceNotFound, createMcpServer } from "./server";
import { mcpTools } from "./tools";

/** How the router reaches the rest of the app (src/app.ts passes `app.fetch`; no import cycle). */
export type AppFetch = (
  req: Request,
  env: Bindings,
  ctx: ExecutionContext | undefined,
) => Response | Promise<Response>;

// The SDK's spec schemas are zod objects typed as Standard Schemas only.
const JSONRPC_MESSAGE = specTypeSchemas.JSONRPCMessage as unknown as z.ZodType;
const INITIALIZE_REQUEST = specTypeSchemas.InitializeRequest as unknown as z.ZodType;
/** The revision served per request (no initialize), beside the legacy ones of SUPPORTED_PROTOCOL_VERSIONS. */
const MODERN_PROTOCOL_VERSION = "2026-07-28";
const SERVED_VERSIONS = [MODERN_PROTOCOL_VERSION, ...SUPPORTED_PROTOCOL_VERSIONS];

/** Each modern request's server context, for the handler's factory (it is handed the request). */
const contexts = new WeakMap<Request, ServerContext>();
let modern: McpHttpHandler | undefined;

/**
 * The SDK's handler for the 2026-07-28 revision, one per isolate: building one per request cost
 * ~80 µs and logged the SDK's warning about JSON answers every time. Strict: a claim-less request
 * never reaches it (it is the legacy transport's, below). Each request still gets a fresh server,
 * built from its own context.
 */
function modernHandler() {
  modern ??= createMcpHandler(
    ({ requestInfo }) => {
      const context = requestInfo && contexts.get(requestInfo);
      if (!context) throw new Error("an MCP request reached the handler without its context");
      return createMcpServer(context);
    },
    { legacy: "reject", responseMode: "json" },
  );
  return modern;
}

/**
 * One parsed JSON value POSTed to /mcp, answered by a fresh server. This module holds everything
 * the MCP SDK brings (its zod schemas, the JSON Schema validator): src/routes/mcp.ts loads it on
 * the first MCP message of an isolate, so start-up never evaluates it.
 *
 * Two eras: a request carrying the 2026-07-28 envelope (`_meta["io.modelcontextprotocol/
 * protocolVersion"]`, no initialize) goes to the SDK's per-request handler, which owns that
 * revision's checks and answers (server/discover, resultType, its header rules); any other
 * (2024-11-05 … 2025-11-25, after initialize) is answered as before, by a stateless transport.
 */
export async function handleMcpMessage(c: Context<AppEnv>, parsed: unknown, appFetch: AppFetch) {
  // Before the eras are told apart: the SDK sends a value that is no message to its modern handler.
  const message = JSONRPC_MESSAGE.safeParse(parsed);
  if (!message.success) return rpcError(c, 400, -32600, "Invalid Request: not a JSON-RPC 2.0 message");
  if (!(await isLegacyRequest(c.req.raw, parsed))) {
    // The SDK's handler answered any Accept (text/html too): refused here as the legacy path
    // refuses it, so one endpoint has one rule whatever the revision.
    if (!acceptable(c)) return notAcceptable(c);
    contexts.set(c.req.raw, serverContext(c, appFetch));
    return modernHandler().fetch(c.req.raw, { parsedBody: parsed });
  }
  // The transport reads initialize itself and answers bad params with -32603 (internal error):
  // checked here, so a client gets -32602 (invalid params) with its own request id.
  const m = message.data as { method?: unknown; id?: string | number };
  if (m.method === "initialize" && m.id !== undefined) {
    const init = INITIALIZE_REQUEST.safeParse(message.data);
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
    // The modern revision named by the header alone (a response or a message without the envelope):
    // refused as what it lacks, not as a revision the list below would name as served.
    if (version === MODERN_PROTOCOL_VERSION) {
      return rpcError(
        c,
        400,
        -32000,
        `Bad Request: a ${MODERN_PROTOCOL_VERSION} message carries _meta["io.modelcontextprotocol/protocolVersion"]`,
      );
    }
    return rpcError(
      c,
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SERVED_VERSIONS.join(", ")})`,
    );
  }

  if (!acceptable(c)) return notAcceptable(c);
  const headers = new Headers(c.req.raw.headers);
  headers.set("accept", "application/json, text/event-stream");
  const request = new Request(c.req.url, { method: "POST", headers });
  // JSON answers, never an SSE stream: nothing is sent before a result (this legacy path; the
  // modern handler's subscriptions/listen is a stream that closes at once, no subscriptions offered).
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  const instance = createMcpServer(serverContext(c, appFetch));
  await instance.connect(transport);
  const send = transport.send.bind(transport);
  transport.send = (reply, options) => send(asLegacyResourceNotFound(reply), options);
  try {
    return await transport.handleRequest(request, { parsedBody: message.data });
  } finally {
    await instance.close();
  }
}

/**
 * Hono's Accept parser (q values, parameters, quoted strings) with a rule of our own (Hono's match
 * returns a preference and never matches the any-type range). The answer is always
 * application/json (no stream is ever sent), so the JSON answer's most specific range decides
 * (RFC 9110 12.5.1: `application/json;q=0, *\/*` refuses it, with or without an SSE beside it); a
 * client naming text/event-stream without naming JSON is taken as before (@hono/mcp): the SDK's
 * transport wants both, which such clients never sent. text/* alone admits SSE but never the JSON answer. Media types are case-insensitive
 * (RFC 9110 8.3.1); no Accept means any, and a bare `*` is taken as any, as Hono's own matcher does.
 */
const acceptable = (c: Context<AppEnv>) =>
  accepts(c, {
    header: "Accept",
    supports: ["application/json"],
    default: "*/*",
    match: (ranges) => {
      const q = (type: string) => ranges.find((r) => r.type.toLowerCase() === type)?.q;
      // JSON named (exactly or as application/*) decides alone: refused there, an SSE beside it
      // does not make the JSON answer acceptable.
      const named = q("application/json") ?? q("application/*");
      if (named !== undefined) return named > 0 ? "taken" : "";
      return (q("*/*") ?? q("*") ?? 0) > 0 || (q("text/event-stream") ?? 0) > 0 ? "taken" : "";
    },
  }) !== "";

const notAcceptable = (c: Context<AppEnv>) =>
  rpcError(c, 406, -32000, "Not Acceptable: Client must accept application/json or text/event-stream");

type ServerContext = ReturnType<typeof serverContext>;

function serverContext(c: Context<AppEnv>, appFetch: AppFetch) {
  const cfg = publicConfig(c.env, c.req.url);
  const env = c.env;
  const ctx = executionCtxOf(c);
  const pc = listedPartnerPricing(c);
  return {
    tools: mcpTools(cfg, pc),
    baseUrl: cfg.baseUrl,
    partners: pc !== undefined,
    freeBeta: cfg.freeBeta,
    origin: new URL(c.req.url).origin,
    // A card key in any form the HTTP gate takes (X-API-Key, a bare mk_…) pays over MCP too.
    authorization: cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key")),
    db: env.DB,
    clientIp: c.req.header("cf-connecting-ip"),
    dispatch: async (req: Request) => appFetch(req, env, ctx),
  };
}
