import { type Schema, Validator } from "@cfworker/json-schema";
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from "@x402/extensions/bazaar";
import { describe, expect, it } from "vitest";
import { MCP_MAX_BODY_BYTES } from "../../src/mcp/limits";
import { skills } from "../../src/skills/registry";
import { call, ORIGIN, postJson } from "../helpers";

// Where an agent learns that the MCP endpoint exists and how to pay through it.
const MCP_URL = `${ORIGIN}/mcp`;

interface BazaarInfo {
  input: Record<string, unknown>;
  output?: unknown;
}

/**
 * The MCP schema of extensions/bazaar.md ("MCP Schema Example"), closed to other fields as it is,
 * but for the one @x402/extensions 2.27.0 writes and requires (toolName).
 */
const SPEC_MCP_SCHEMA = new Validator(
  {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      input: {
        type: "object",
        properties: {
          type: { type: "string", const: "mcp" },
          tool: { type: "string" },
          toolName: { type: "string" },
          description: { type: "string" },
          transport: { type: "string", enum: ["streamable-http", "sse"] },
          inputSchema: { type: "object" },
          example: { type: "object" },
        },
        required: ["type", "tool", "inputSchema"],
        additionalProperties: false,
      },
      output: { type: "object", properties: { type: { type: "string" }, example: {} }, required: ["type"] },
    },
    required: ["input"],
  },
  "2020-12",
);

describe("MCP endpoint in the discovery documents", () => {
  it("llms.txt and AGENTS.md name the endpoint, the transport and both ways to pay", async () => {
    const llms = await (await call("/llms.txt")).text();
    expect(llms).toContain(`- [MCP server](${MCP_URL}): MCP server (Streamable HTTP`);
    expect(llms).toContain('_meta["x402/payment"]');
    const agents = await (await call("/AGENTS.md")).text();
    expect(agents).toContain("## 4b. Or connect over MCP");
    expect(agents).toContain(`"url": "${MCP_URL}"`);
    expect(agents).toContain("Authorization: Bearer mk_");
  });

  it.each(["/agents.json", "/.well-known/agents.json"])("%s has the mcp entry", async (path) => {
    const doc = await (await call(path)).json<{ mcp: Record<string, unknown> }>();
    expect(doc.mcp).toMatchObject({
      url: MCP_URL,
      transport: "streamable-http",
      stateless: true,
      max_body_bytes: MCP_MAX_BODY_BYTES,
      docs: `${ORIGIN}/docs/mcp`,
    });
  });

  it("the MCP docs, the server's instructions and every tool's description name the keys agents.json publishes", async () => {
    const doc = await (await call("/agents.json")).json<{
      mcp: {
        payment: {
          x402: { request_meta: string; response_meta: string };
          x402_v1: { request_meta: string; response_meta: string };
          receipt_meta: string;
        };
      };
    }>();
    const { x402, x402_v1, receipt_meta } = doc.mcp.payment;
    // The v1 keys are the ones tools/call reads and writes (Vercel's x402-mcp uses them).
    expect(x402_v1).toMatchObject({ request_meta: "x402.payment", response_meta: "x402.payment-response" });
    const keys = [
      x402.request_meta,
      x402.response_meta,
      x402_v1.request_meta,
      x402_v1.response_meta,
      receipt_meta,
    ].map((k) => `_meta[&quot;${k}&quot;]`);
    const html = await (await call("/docs/mcp")).text();
    for (const k of keys) expect(html).toContain(k);
    const init = await postJson(
      "/mcp",
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      },
      { accept: "application/json, text/event-stream" },
    );
    const instructions = (await init.json<{ result: { instructions: string } }>()).result.instructions;
    for (const k of [x402.request_meta, x402.response_meta, x402_v1.request_meta, receipt_meta]) {
      expect(instructions).toContain(`_meta["${k}"]`);
    }
    const llms = await (await call("/llms.txt")).text();
    for (const k of [x402_v1.request_meta, x402_v1.response_meta]) expect(llms).toContain(`_meta["${k}"]`);
    const list = await postJson(
      "/mcp",
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { accept: "application/json, text/event-stream" },
    );
    const { tools } = (await list.json<{ result: { tools: { name: string; description: string }[] } }>())
      .result;
    for (const t of tools) expect(t.description, t.name).toContain(`params._meta["${x402.request_meta}"]`);
  });

  it("the home page and the docs index link the MCP page; /docs/mcp has a config snippet under a strict CSP", async () => {
    expect(await (await call("/")).text()).toContain('href="/docs/mcp"');
    expect(await (await call("/docs")).text()).toContain('href="/docs/mcp"');
    const res = await call("/docs/mcp");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain(`<code id="mcp-url">${MCP_URL}</code>`);
    expect(html).toContain("&quot;mcpServers&quot;");
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it("every skill tool carries an x402 bazaar MCP discovery declaration valid by the specification and by the library", async () => {
    const res = await postJson(
      "/mcp",
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { accept: "application/json, text/event-stream" },
    );
    const { result } = await res.json<{
      result: { tools: { name: string; inputSchema: unknown; _meta?: Record<string, unknown> }[] };
    }>();
    const declared = result.tools.filter((t) => t._meta?.["x402/bazaar"]);
    expect(declared.map((t) => t.name)).toEqual(expect.arrayContaining(skills.map((s) => s.id)));
    for (const t of declared) {
      const bazaar = t._meta?.["x402/bazaar"] as { info: BazaarInfo; schema: Schema };
      // extensions/bazaar.md: the tool's tools/call name in `tool`; @x402/extensions 2.27.0 reads
      // the same in `toolName`.
      expect(bazaar.info.input, t.name).toMatchObject({
        type: "mcp",
        tool: t.name,
        toolName: t.name,
        transport: "streamable-http",
      });
      // A facilitator validates info against the declared schema, which must require tool and
      // inputSchema (extensions/bazaar.md, Schema Validation).
      expect(new Validator(bazaar.schema, "2020-12").validate(bazaar.info).errors, t.name).toEqual([]);
      const input = (bazaar.schema.properties as Record<string, Schema>).input as Schema;
      expect(input.required, t.name).toEqual(expect.arrayContaining(["type", "tool", "inputSchema"]));
      expect(input.additionalProperties, t.name).toBe(false);
      expect(SPEC_MCP_SCHEMA.validate(bazaar.info).errors, t.name).toEqual([]);
      // The library's own checks: its schema validation and its MCP rules (toolName required).
      expect(validateDiscoveryExtension(bazaar as never), t.name).toEqual({ valid: true });
      expect(validateDiscoveryExtensionSpec(bazaar as never), t.name).toEqual({ valid: true });
    }
  });
});
