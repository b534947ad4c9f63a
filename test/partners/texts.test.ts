import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { publicConfig } from "../../src/config";
import { mcpTools } from "../../src/mcp/tools";
import type { PricingConfig } from "../../src/partners/config";
import { pricingConfig } from "../../src/partners/config";
import { send } from "./network";

// What the documents tell a buyer about partner calls matches what the routes do: a partner paid
// before it answers settles the caller first and refunds on failure, and partner routes take
// x402 only (routes/partners.ts mounts no card-credit step).

const REFUNDED = /charged.{0,3}:? ?true.*refund/;

describe("partner texts say what a partner call charges and how it is paid", () => {
  const tools = mcpTools(publicConfig(env, "https://skills.test"), pricingConfig(env) as PricingConfig);
  const partnerTools = tools.filter((t) => t.tool.name.includes("__") || t.tool.name === "refinery_recipes");

  it("partner and refinery tools: refunded when paid first, no card credits offered", () => {
    expect(partnerTools.length).toBeGreaterThan(1);
    for (const { tool } of partnerTools) {
      expect(tool.description, tool.name).toMatch(REFUNDED);
      expect(tool.description, tool.name).not.toMatch(/charged only when the partner answers 2xx/);
      expect(tool.description, tool.name).not.toMatch(/Bearer mk_/);
    }
    const skill = tools.find((t) => t.tool.name === "sha256");
    expect(skill?.tool.description).toMatch(/Bearer mk_\.\.\. card credits/);
  });

  it.each(["/llms.txt", "/AGENTS.md", "/agents.json", "/docs/mcp"])(
    "%s tells MCP clients card credits pay skills only, and names the partner refund",
    async (path) => {
      const text = await (await send(path)).text();
      expect(text).toMatch(/partner services and refinery recipes take x402 only/);
      expect(text).not.toMatch(/Charged only for a successful result/);
      expect(text).toMatch(REFUNDED);
    },
  );

  it("the MCP instructions offer card credits for skills only, and name the partner refund", async () => {
    const res = await send("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    const instructions = String((await res.json<{ result: { instructions: string } }>()).result.instructions);
    expect(instructions).toMatch(/partner services and refinery recipes take x402 only/);
    expect(instructions).toMatch(REFUNDED);
  });

  it("OpenAPI's partner 502 and 504 and the humanless contract name the charged-and-refunded case", async () => {
    const doc = await (await send("/openapi.json")).json<{
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    }>();
    const tryOp = doc.paths["/api/partners/{partner_id}/try/{service_id}"]?.get;
    for (const code of ["502", "504"]) expect(tryOp?.responses[code]?.description).toMatch(REFUNDED);
    expect(doc.paths["/api/skills/refinery-recipes"]?.post?.responses["502"]?.description).toMatch(REFUNDED);
    const contract = await (await send("/contracts/humanless.json")).text();
    expect(contract).not.toMatch(
      /a partner\) failed \(502\) or timed out \(504\); the call is not charged\."/,
    );
    expect(contract).toMatch(/charged\\":true with a refund/);
  });
});
