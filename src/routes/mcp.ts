import { type Context, Hono } from "hono";
import type { AppEnv } from "../env";
import { limitBody } from "../http/body-limit";
import { bodyText, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, nonFiniteItems, scanJson } from "../http/json-text";
import { withExactArguments, withRawArguments } from "../mcp/arguments";
import type { AppFetch } from "../mcp/handle";
import { MCP_ENVELOPE_CONTAINERS, MCP_ENVELOPE_DEPTH, MCP_MAX_BODY_BYTES, MCP_PATH } from "../mcp/limits";
import { notLocal } from "../mcp/local-origin";
import { rpcError } from "../mcp/rpc-error";

export type { AppFetch } from "../mcp/handle";

/** The message's bounds: a JSON body's, with the envelope's headroom (see MCP_ENVELOPE_DEPTH). */
const MESSAGE_BOUNDS = {
  depth: MAX_JSON_DEPTH + MCP_ENVELOPE_DEPTH,
  containers: MAX_JSON_CONTAINERS + MCP_ENVELOPE_CONTAINERS,
};

// The MCP SDK (zod schemas, ajv) is loaded on the first MCP message of an isolate, not at start-up.
let handler: Promise<typeof import("../mcp/handle")> | undefined;
const loadHandler = () => {
  handler ??= import("../mcp/handle").catch((e) => {
    handler = undefined; // a failed load is retried by the next request
    throw e;
  });
  return handler;
};

/**
 * MCP over Streamable HTTP, stateless: every POST gets a fresh server and transport, and plain
 * JSON answers (no SSE stream, no session id). GET (a server-to-client stream) and DELETE (ending
 * a session) have no meaning without sessions and answer 405, as the transport spec allows.
 */
export function mcpRoutes(appFetch: AppFetch) {
  const routes = new Hono<AppEnv>();

  // Before any of /mcp's routes, whatever the method: a DNS-rebinding page gets nothing of a local
  // server (local-origin.ts). Not the CORS preflight: edgeHeaders answers OPTIONS before routing,
  // the same headers for every origin, and it runs nothing (the POST after it is checked here).
  routes.use(MCP_PATH, async (c, next) => {
    const refused = notLocal(c.env.BASE_URL, c.req.url, c.req.header("host"), c.req.header("origin"));
    if (refused) return rpcError(c, 403, -32000, refused);
    await next();
  });

  const postOnly = (c: Context<AppEnv>) =>
    rpcError(c, 405, -32000, "Method Not Allowed: this stateless MCP server takes POST only", {
      Allow: "POST",
    });
  routes.on(["GET", "DELETE", "PUT", "PATCH"], MCP_PATH, postOnly);

  routes.post(
    MCP_PATH,
    limitBody(MCP_MAX_BODY_BYTES, (c) =>
      rpcError(c, 413, -32000, `Request body larger than ${MCP_MAX_BODY_BYTES} bytes`),
    ),
    async (c) => {
      // Codes as the SDK's own web transport answers them, except a well-formed JSON value that is
      // no JSON-RPC message: that is -32600 Invalid Request in JSON-RPC 2.0.
      if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) {
        return rpcError(c, 415, -32000, "Unsupported Media Type: Content-Type must be application/json");
      }
      let parsed: unknown;
      // Strict UTF-8, as every JSON body (json-text.ts): a replaced byte would reach the tool as
      // other text than was sent.
      const body = await bodyText(c);
      if (!body.ok) return rpcError(c, 400, -32700, `Parse error: ${body.item.ctx?.error}`);
      const text = body.text;
      // Every JSON body's bound (json-text.ts), with the envelope's headroom: millions of empty
      // containers would fill the isolate's memory before anything looked at them. The arguments
      // within are judged by the tool's route, with its own bounds: a body the HTTP route takes
      // goes through, and one it refuses gets its 422 as the call's tool error.
      // (The scan stops at the first bound it crosses, so both are checked.)
      const scan = scanJson(text, MESSAGE_BOUNDS);
      if (scan.depth > MESSAGE_BOUNDS.depth || scan.containers > MESSAGE_BOUNDS.containers) {
        return rpcError(
          c,
          400,
          -32700,
          `Parse error: a message nested deeper than ${MESSAGE_BOUNDS.depth} levels or with more than ${MESSAGE_BOUNDS.containers} arrays and objects`,
        );
      }
      try {
        parsed = JSON.parse(text);
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
      // Arguments that may hold a number past a double's range are checked parsed (below).
      const raw = scan.mayOverflow ? parsed : withRawArguments(parsed, text);
      if (raw !== parsed) parsed = raw;
      else if (scan.longDigits) parsed = withExactArguments(parsed, text);
      // A number past a double's range (1e400) parses to Infinity and reached the tool as null:
      // refused as every JSON body refuses it (finite_number), naming where it is. After the exact
      // integers: a long integer kept as written is a number the tool can read.
      const nonFinite = scan.mayOverflow ? nonFiniteItems(parsed) : [];
      if (nonFinite.length > 0) {
        const at = (nonFinite[0]?.loc ?? []).slice(1).join(".");
        const id = (parsed as { id?: unknown } | null)?.id;
        return rpcError(c, 400, -32602, `Invalid params: a number past a double's range at ${at}`, {}, id);
      }
      // The bytes read: Hono keeps them for later readers, and there are none (the message is
      // parsed), so they are not held through the tool's call.
      c.req.bodyCache = {};
      const { handleMcpMessage } = await loadHandler();
      return handleMcpMessage(c, parsed, appFetch);
    },
  );
  // Any other method (TRACE) the same way: left to the app's 405 it answered {"detail": …}. After
  // POST, so it takes only what no route above did (OPTIONS is the CORS preflight, before routing).
  routes.all(MCP_PATH, postOnly);
  return routes;
}
