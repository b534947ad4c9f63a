import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../src/index";

export const ORIGIN = "https://skills.test";

/** What a browser sends for a page: an HTML Accept and a browser's User-Agent. */
export const BROWSER = {
  accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
  "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36",
};

/** A deployment that sells calls (FREE_BETA off) against the fixture facilitator. */
export const paidEnv = () => ({
  ...env,
  FREE_BETA: "false",
  FACILITATOR_URL: `${new URL(env.WIKIPEDIA_API_BASE).origin}/facilitator`,
});

/** Sends a request to the Worker under test (the real default export, real bindings). */
export function call(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, init));
}

export function postJson(path: string, body: unknown, headers: Record<string, string> = {}) {
  return call(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/**
 * As postJson, returned once the work the call handed to waitUntil is done too: a network skill's
 * cache write lands after its answer, so a test that wants the next call to be a hit makes this one
 * with it (as KV, read at the same location after the write).
 */
export async function postJsonSettled(path: string, body: unknown) {
  const ctx = createExecutionContext();
  const init = {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  const res = await worker.fetch(new Request(`${ORIGIN}${path}`, init), env, ctx);
  const bytes = await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  // A status that carries no body refuses even an empty one in the Response constructor.
  return new Response(NULL_BODY_STATUSES.has(res.status) ? null : bytes, res);
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** A POST /mcp of one JSON-RPC request (id 1), with the headers the Streamable HTTP transport wants. */
export function mcpInit(method: string, params: unknown, id = 1): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  };
}

/** What a tools/call answers: an MCP CallToolResult. */
export interface ToolResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text: string }[];
  _meta?: Record<string, unknown>;
}

let nextToolCallId = 1;
/**
 * A POST /mcp of one tools/call (a fresh JSON-RPC id each), the call's own `_meta` in its params
 * and the connection's headers `headers` (a card key's Authorization, an Idempotency-Key).
 */
export function mcpToolCall(
  name: string,
  args: unknown,
  meta?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Request {
  return new Request(`${ORIGIN}/mcp`, {
    ...mcpInit("tools/call", { name, arguments: args, ...(meta ? { _meta: meta } : {}) }, nextToolCallId++),
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
  });
}

export interface ErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

export async function detailOf(res: Response): Promise<ErrorItem[]> {
  const body = await res.json<{ detail: ErrorItem[] }>();
  return body.detail;
}

/**
 * Signs in to the maintainer dashboard as its form does (a same-origin POST of the token) through
 * `send` (a request to the app under test, `redirect: "manual"`): the session cookie to send back.
 */
export async function adminCookie(
  send: (path: string, init: RequestInit) => Response | Promise<Response>,
  token: string,
): Promise<string> {
  const login = await send("/admin/login", {
    method: "POST",
    headers: { origin: ORIGIN },
    body: new URLSearchParams({ token }),
  });
  return (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
}

/**
 * One tools/call over /mcp to `app` under `e`, which must answer a JSON-RPC result: the result,
 * and the X-Request-Id of the MCP POST itself.
 */
export async function mcpCall(
  app: { fetch(req: Request, e: object): Response | Promise<Response> },
  e: object,
  name: string,
  args: unknown,
  meta?: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await app.fetch(mcpToolCall(name, args, meta, headers), e);
  expect(res.status).toBe(200);
  const answer = await res.json<{ result: ToolResult; error?: unknown }>();
  expect(answer.error).toBeUndefined();
  return { result: answer.result, outerRequestId: res.headers.get("x-request-id") };
}
