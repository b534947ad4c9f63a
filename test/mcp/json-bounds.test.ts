import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../src/http/json-text";
import { MCP_ENVELOPE_CONTAINERS, MCP_ENVELOPE_DEPTH } from "../../src/mcp/limits";
import { ORIGIN } from "../helpers";

// A JSON body's bounds (200 levels, 500,000 arrays and objects) hold for a tool's arguments as for
// its HTTP body: the JSON-RPC envelope around them does not count against them.
const app = createApp();
const betaEnv = { ...env, FREE_BETA: "true" };
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A json_sort body of `depth` levels: {"data": [[…]]}. */
const deep = (depth: number) => `{"data":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
/** A json_sort body of `containers` arrays and objects: {"data": [[], [], …]}. */
const many = (containers: number) =>
  `{"data":[${Array(containers - 2)
    .fill("[]")
    .join(",")}]}`;

const http = (body: string) =>
  app.fetch(
    new Request(`${ORIGIN}/api/skills/json-sort`, { method: "POST", headers: HEADERS, body }),
    betaEnv,
  );
const mcp = (args: string, id = 7) =>
  app.fetch(
    new Request(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: HEADERS,
      body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"json_sort","arguments":${args}}}`,
    }),
    betaEnv,
  );

interface Answer {
  id: unknown;
  result?: { isError?: boolean; structuredContent?: Record<string, unknown> };
  error?: { code: number; message: string };
}

/** The same body over HTTP and as a tools/call's arguments: the HTTP answer and the call's result. */
async function both(body: string) {
  const h = await http(body);
  const m = await mcp(body);
  expect(m.status).toBe(200);
  const answer = await m.json<Answer>();
  expect(answer.error).toBeUndefined();
  expect(answer.id).toBe(7);
  return { status: h.status, httpJson: await h.json<Record<string, unknown>>(), result: answer.result };
}

describe("a tool's arguments have the HTTP body's JSON bounds, not the message's", {
  timeout: 60_000,
}, () => {
  it(`nested exactly ${MAX_JSON_DEPTH} levels: answered over both; one more: the route's 422, as a tool error of the call`, async () => {
    const at = await both(deep(MAX_JSON_DEPTH));
    expect(at.status).toBe(200);
    expect(at.result?.isError).toBeFalsy();
    expect(at.result?.structuredContent).toEqual(at.httpJson);

    const over = await both(deep(MAX_JSON_DEPTH + 1));
    expect(over.status).toBe(422);
    expect(over.result?.isError).toBe(true);
    expect(over.result?.structuredContent).toEqual(over.httpJson);
    expect(JSON.stringify(over.httpJson)).toContain("recursion limit exceeded");
  });

  it(`exactly ${MAX_JSON_CONTAINERS} arrays and objects: answered over both; one more: the route's 422, as a tool error of the call`, async () => {
    const at = await both(many(MAX_JSON_CONTAINERS));
    expect(at.status).toBe(200);
    expect(at.result?.isError).toBeFalsy();
    expect(at.result?.structuredContent).toEqual(at.httpJson);

    const over = await both(many(MAX_JSON_CONTAINERS + 1));
    expect(over.status).toBe(422);
    expect(over.result?.isError).toBe(true);
    expect(over.result?.structuredContent).toEqual(over.httpJson);
    expect(JSON.stringify(over.httpJson)).toContain(`more than ${MAX_JSON_CONTAINERS} arrays and objects`);
  });

  it("the message itself: refused before it is parsed (-32700) only past the envelope's headroom", async () => {
    // The arguments sit 2 levels down: these messages are exactly at the message's bounds, and the
    // call is the route's to refuse.
    const depth = MAX_JSON_DEPTH + MCP_ENVELOPE_DEPTH;
    const containers = MAX_JSON_CONTAINERS + MCP_ENVELOPE_CONTAINERS;
    for (const args of [deep(depth - 2), many(containers - 2)]) {
      const res = await mcp(args);
      expect(res.status).toBe(200);
      expect((await res.json<Answer>()).result?.isError).toBe(true);
    }
    for (const args of [deep(depth - 1), many(containers - 1)]) {
      const res = await mcp(args);
      expect(res.status).toBe(400);
      const answer = await res.json<Answer>();
      expect(answer.error?.code).toBe(-32700);
      expect(answer.id).toBeNull();
    }
  });
});
