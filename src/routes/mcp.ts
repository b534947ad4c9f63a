import { type Context, Hono } from "hono";
import type { AppEnv } from "../env";
import { limitBody } from "../http/body-limit";
import { parseKeepingIntegers } from "../http/exact-integers";
import { bodyText, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, nonFiniteItems, scanJson } from "../http/validation";
import type { AppFetch } from "../mcp/handle";
import { MCP_MAX_BODY_BYTES, MCP_PATH, RAW_ARGUMENTS, RawArguments } from "../mcp/limits";
import { rpcError } from "../mcp/rpc-error";
import { isRecord } from "../net/fetcher";

export type { AppFetch } from "../mcp/handle";

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
 * A tools/call whose arguments hold integers past 2^53 gets them as written (exact-integers.ts):
 * json_sort and json_flatten hand a client's ids back, and the HTTP route they are run through
 * keeps them exact. Only the arguments: the envelope (a 20-digit JSON-RPC id) stays as JSON.parse
 * reads it, which the SDK's schemas expect.
 */
function withExactArguments(parsed: unknown, text: string): unknown {
  if (!isRecord(parsed) || parsed.method !== "tools/call" || !isRecord(parsed.params)) return parsed;
  const exact = parseKeepingIntegers(text) as { params: { arguments?: unknown } };
  return { ...parsed, params: { ...parsed.params, arguments: exact.params.arguments } };
}

const isWhitespace = (ch: number) => ch === 0x20 || ch === 0x0a || ch === 0x0d || ch === 0x09;
const skipWhitespace = (text: string, i: number) => {
  while (isWhitespace(text.charCodeAt(i))) i++;
  return i;
};

/** Index just past the JSON string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 0x5c)
      j++; // a backslash: the next character is escaped
    else if (ch === 0x22) return j + 1;
  }
  return text.length;
}

/** Index just past the JSON value that starts at `i`, in text JSON.parse has accepted. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === 0x22) return stringEnd(text, i);
  if (first !== 0x7b && first !== 0x5b) {
    // A number, true, false or null: up to the next comma, bracket or whitespace.
    let j = i;
    for (let ch = text.charCodeAt(j); j < text.length; ch = text.charCodeAt(++j)) {
      if (ch === 0x2c || ch === 0x5d || ch === 0x7d || isWhitespace(ch)) break;
    }
    return j;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 0x22) j = stringEnd(text, j) - 1;
    else if (ch === 0x7b || ch === 0x5b) depth++;
    else if ((ch === 0x7d || ch === 0x5d) && --depth === 0) return j + 1;
  }
  return text.length;
}

/**
 * Where the value of the member `name` of the object opening at `open` lies, in text JSON.parse
 * has accepted: the last such member, as JSON.parse keeps the last of duplicate keys, with keys
 * compared as JSON.parse reads them (escapes decoded).
 */
function memberSpan(text: string, open: number, name: string): [number, number] | undefined {
  let found: [number, number] | undefined;
  let i = skipWhitespace(text, open + 1);
  while (text.charCodeAt(i) === 0x22) {
    const keyEnd = stringEnd(text, i);
    const written = text.slice(i + 1, keyEnd - 1);
    const key = written.includes("\\") ? (JSON.parse(text.slice(i, keyEnd)) as string) : written;
    const start = skipWhitespace(text, skipWhitespace(text, keyEnd) + 1); // past the colon
    const end = valueEnd(text, start);
    if (key === name) found = [start, end];
    i = skipWhitespace(text, end);
    if (text.charCodeAt(i) !== 0x2c) break; // the closing brace
    i = skipWhitespace(text, i + 1);
  }
  return found;
}

/**
 * A tools/call with its arguments object replaced by their JSON text as sent (RawArguments), read
 * from `text`, the message JSON.parse made `parsed` of. The parsed arguments are then dropped before
 * the tool's route runs and parses them itself, and are not written out again for it: the text
 * also keeps integers past 2^53 as written, so exact-integers.ts is not needed for them. Anything
 * else (another method, arguments that are no object) is left as it is.
 */
function withRawArguments(parsed: unknown, text: string): unknown {
  if (!isRecord(parsed) || parsed.method !== "tools/call" || !isRecord(parsed.params)) return parsed;
  if (!isRecord(parsed.params.arguments)) return parsed;
  const params = memberSpan(text, skipWhitespace(text, 0), "params");
  const args =
    params && text.charCodeAt(params[0]) === 0x7b ? memberSpan(text, params[0], "arguments") : undefined;
  if (!args || text.charCodeAt(args[0]) !== 0x7b) return parsed;
  const raw = new RawArguments(text.slice(args[0], args[1]));
  return { ...parsed, params: { ...parsed.params, arguments: { [RAW_ARGUMENTS]: raw } } };
}

/**
 * MCP over Streamable HTTP, stateless: every POST gets a fresh server and transport, and plain
 * JSON answers (no SSE stream, no session id). GET (a server-to-client stream) and DELETE (ending
 * a session) have no meaning without sessions and answer 405, as the transport spec allows.
 */
export function mcpRoutes(appFetch: AppFetch) {
  const routes = new Hono<AppEnv>();

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
      // Strict UTF-8, as every JSON body (validation.ts): a replaced byte would reach the tool as
      // other text than was sent.
      const body = await bodyText(c);
      if (!body.ok) return rpcError(c, 400, -32700, `Parse error: ${body.item.ctx?.error}`);
      const text = body.text;
      // The same bound as every JSON body (validation.ts): millions of empty containers would fill
      // the isolate's memory before anything looked at them.
      // (The scan stops at the first bound it crosses, so both are checked.)
      const scan = scanJson(text);
      if (scan.depth > MAX_JSON_DEPTH || scan.containers > MAX_JSON_CONTAINERS) {
        return rpcError(
          c,
          400,
          -32700,
          `Parse error: nested deeper than ${MAX_JSON_DEPTH} levels or more than ${MAX_JSON_CONTAINERS} arrays and objects`,
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
