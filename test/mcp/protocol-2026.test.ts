import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { skills } from "../../src/skills/registry";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// MCP 2026-07-28, the stateless revision: no initialize, every request carries its version in the
// MCP-Protocol-Version header and in _meta, and the client first asks server/discover. Served beside
// 2024-11-05 … 2025-11-25 (server.test.ts) by the same tools and the same payment chain.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const ORIGIN = "https://skills.test";
const VERSION = "2026-07-28";
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

interface RpcAnswer {
  id: number | string | null;
  result?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  error?: { code: number; message: string };
}

/** What the envelope of every 2026-07-28 request holds, as a client sends it. */
const envelope = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientInfo": { name: "modern-test", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

let nextId = 1;
/** A 2026-07-28 message as written, with the headers such a client sends (Mcp-Name for a named call). */
function post(text: string, method: string, name?: string, e: object = paidEnv) {
  return app.fetch(
    new Request(`${ORIGIN}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
        ...(name ? { "mcp-name": name } : {}),
      },
      body: text,
    }),
    e,
  );
}

/** One 2026-07-28 request: its params with the envelope in their _meta. */
async function modern(method: string, params: Record<string, unknown> = {}, name?: string) {
  const { _meta, ...rest } = params as { _meta?: Record<string, unknown> };
  const body = {
    jsonrpc: "2.0",
    id: nextId++,
    method,
    params: { ...rest, _meta: { ...envelope, ..._meta } },
  };
  const res = await post(JSON.stringify(body), method, name);
  return { status: res.status, answer: await res.json<RpcAnswer>() };
}

const call = (tool: string, args: unknown, meta: Record<string, unknown> = {}) =>
  modern("tools/call", { name: tool, arguments: args, _meta: meta }, tool);

describe("MCP 2026-07-28 (per-request envelope, no initialize)", () => {
  it("is served, not refused with the 400 'Unsupported protocol version' of the 1.x SDK", async () => {
    const { status, answer } = await modern("tools/list");
    expect(status).toBe(200);
    expect(answer.error).toBeUndefined();
    expect(answer.result?.resultType).toBe("complete");
  });

  it("a message naming 2026-07-28 by header alone is refused as lacking the envelope, not as an unserved revision", async () => {
    const res = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, result: {} }), "tools/list");
    expect(res.status).toBe(400);
    const { error } = await res.json<RpcAnswer>();
    expect(error?.message).toBe(
      'Bad Request: a 2026-07-28 message carries _meta["io.modelcontextprotocol/protocolVersion"]',
    );
  });

  it("many requests log the SDK's warning about JSON answers at most once (one handler per isolate)", async () => {
    const warn = vi.spyOn(console, "warn");
    for (let i = 0; i < 3; i++) expect((await modern("tools/list")).status).toBe(200);
    const warnings = warn.mock.calls.filter((args) => String(args[0]).includes("responseMode"));
    expect(warnings.length).toBeLessThanOrEqual(1);
    warn.mockRestore();
  });

  it("server/discover names this server, its capabilities, the revision and the instructions", async () => {
    const { status, answer } = await modern("server/discover");
    expect(status).toBe(200);
    // The earlier revisions are negotiated by initialize, as before; discover names the modern ones.
    expect(answer.result).toMatchObject({
      supportedVersions: [VERSION],
      capabilities: { tools: {}, resources: {} },
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "agent-skills-marketplace" } },
    });
    expect(String(answer.result?.instructions)).toContain('_meta["x402/payment"]');
  });

  it("tools/list: the same tools, names and schemas as a 2025-11-25 client gets", async () => {
    const { answer } = await modern("tools/list");
    const tools = answer.result?.tools as { name: string }[];
    const legacy = await app.fetch(
      new Request(`${ORIGIN}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      }),
      paidEnv,
    );
    expect(tools).toEqual(((await legacy.json()) as RpcAnswer).result?.tools);
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(skills.map((s) => s.id)));
  });

  it("an unpaid call is the tool error with the x402 offer, as in every revision", async () => {
    const { answer } = await call("sha256", { text: "abc" });
    const result = answer.result as { isError?: boolean; structuredContent?: PaymentRequired };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2, error: expect.any(String) });
    expect(result.structuredContent?.accepts[0]?.amount).toBe(
      String(skills.find((s) => s.id === "sha256")?.price_atomic),
    );
  });

  it('a call paid with _meta["x402/payment"]: the result and its settlement, settled once', async () => {
    const offer = (await call("sha256", { text: "abc" })).answer.result?.structuredContent;
    const { payload, nonce } = unsignedPayment(offer as PaymentRequired, SETTLES_OK);
    const { answer } = await call("sha256", { text: "abc" }, { "x402/payment": payload });
    const result = answer.result as { isError?: boolean; structuredContent?: { hex?: string } };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent?.hex).toMatch(/^ba7816bf/);
    expect(answer.result?._meta?.["x402/payment-response"]).toMatchObject({
      success: true,
      payer: SETTLES_OK,
    });
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(1);
    const { network, asset } = payload.accepted;
    const key = `${network}:${asset}:${SETTLES_OK}:${nonce}`.toLowerCase();
    const rows = await env.DB.prepare("SELECT resource FROM payments WHERE nonce = ?1").bind(key).all();
    expect(rows.results).toEqual([{ resource: "mcp:sha256" }]);

    // The same authorization again is refused by the one claim table, as in every revision.
    const again = (await call("sha256", { text: "abc" }, { "x402/payment": payload })).answer.result;
    expect(again?.structuredContent).toMatchObject({ reason: "payment_authorization_reused" });
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(1);
  });

  it("resources: a skill's docs read; a missing one is -32602, the code 2026-07-28 gives it", async () => {
    const uri = "skills://docs/token_count";
    const docs = await modern("resources/read", { uri }, uri);
    expect(docs.answer.result?.contents).toMatchObject([{ uri, mimeType: "text/markdown" }]);
    const missing = await modern("resources/read", { uri: "skills://docs/nope" }, "skills://docs/nope");
    expect(missing.answer.error?.code).toBe(-32602);
  });

  it("integers past 2^53 in a tool's arguments come back digit for digit (json_sort), as in 2025-11-25", async () => {
    const id = "12345678901234567890";
    const res = await post(
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"json_sort","arguments":{"data":{"b":${id},"a":[-${id}1,1.5]}},"_meta":${JSON.stringify(envelope)}}}`,
      "tools/call",
      "json_sort",
      { ...env, FREE_BETA: "true" },
    );
    const text = await res.text();
    expect(text).toContain(`"b":${id}`);
    expect(text).toContain(`-${id}1`);
    expect(text).not.toContain("12345678901234567000");
  });

  it("an unknown tool is -32602 with the message a 2025 client gets", async () => {
    const { answer } = await call("nope", {});
    expect(answer.error).toMatchObject({ code: -32602, message: "Unknown tool: nope. See tools/list." });
  });
});
