import { env } from "cloudflare:test";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { AppEnv } from "../../src/env";
import { mcpRoutes } from "../../src/routes/mcp";
import { ORIGIN, type ToolResult } from "../helpers";

// A tools/call's arguments reach the tool's route as the bytes the client sent: not parsed and
// written out again (a second copy beside the parsed ones, held through the whole call), and a
// 4 MiB json_sort no longer needs the isolate's memory three times over. The router is mounted
// here over a dispatch that records each body the app is sent.
const app = createApp();
const bodies: string[] = [];
const probed = new Hono<AppEnv>().route(
  "/",
  mcpRoutes(async (req, e, ctx) => {
    bodies.push(await req.clone().text());
    return app.fetch(req, e, ctx);
  }),
);
const freeEnv = { ...env, FREE_BETA: "true" };

async function post(message: string) {
  bodies.length = 0;
  const res = await probed.fetch(
    new Request(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: message,
    }),
    freeEnv,
  );
  expect(res.status).toBe(200);
  const answer = await res.json<{ result?: ToolResult; error?: { code: number; message: string } }>();
  return { answer, bodies: [...bodies] };
}

describe("tools/call sends the tool's route the arguments as written", () => {
  it("spacing, key order (integer-like keys included) and escapes are the client's own", async () => {
    const args = '{ "data" : {"b":1,"10":[1, 2],"9":"x\\u00e9 }\\"{"} ,\n "reverse":false }';
    const { answer, bodies } = await post(
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"json_sort","arguments":${args},"_meta":{"arguments":{"a":1}}}}`,
    );
    expect(bodies).toEqual([args]);
    expect(answer.result?.isError).toBeFalsy();
    expect(answer.result?.structuredContent?.canonical).toBe('{"10":[1,2],"9":"xé }\\"{","b":1}');
  });

  it("of duplicate members the last is sent, as JSON.parse reads them, an escaped name included", async () => {
    const { answer, bodies } = await post(
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":1},"argu\\u006dents":{"data":[2, {"z":0,"y":"]"}]}},"params":{"name":"json_sort","arguments":{"data":[3]},"arguments":{"data":[4, 5]}}}',
    );
    expect(bodies).toEqual(['{"data":[4, 5]}']);
    expect(answer.result?.structuredContent?.canonical).toBe("[4,5]");
  });

  it("integers past 2^53 go to the route as written, and come back so", async () => {
    const id = "123456789012345678901";
    const { answer, bodies } = await post(
      `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"b":${id},"a":-${id}}}}}`,
    );
    expect(bodies).toEqual([`{"data":{"b":${id},"a":-${id}}}`]);
    expect(answer.result?.structuredContent?.canonical).toBe(`{"a":-${id},"b":${id}}`);
  });

  it("arguments that are no object are the SDK's invalid params, and nothing is sent", async () => {
    const { answer, bodies } = await post(
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"json_sort","arguments":[1,2]}}',
    );
    expect(answer.error?.code).toBe(-32602);
    expect(bodies).toEqual([]);
  });
});
