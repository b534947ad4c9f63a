import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { FIXTURE } from "../fixtures/upstream-requests";
import { mcpInit } from "../helpers";

// With FREE_BETA=true skill calls answer unpaid, yet llms.txt, AGENTS.md, /docs/<slug> and the MCP
// instructions promised a 402: each says so in one sentence while the beta is on, and not after.
const app = createApp();
const freeEnv = { ...env, FREE_BETA: "true", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const paidEnv = { ...freeEnv, FREE_BETA: "false" };

const text = async (path: string, e: object) => {
  const res = await app.fetch(new Request(`https://skills.test${path}`), e);
  expect(res.status, path).toBe(200);
  return res.text();
};

async function mcpInstructions(e: object) {
  const res = await app.fetch(
    new Request(
      "https://skills.test/mcp",
      mcpInit("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      }),
    ),
    e,
  );
  const { result } = await res.json<{ result: { instructions: string } }>();
  return result.instructions;
}

const NOTICE = /Free beta(:|\*\*:|<\/strong>)/;

describe("the free beta is named where a 402 is promised", () => {
  it.each([
    ["/llms.txt", /^Free beta: skill calls are free for now[^\n]*\.$/m],
    ["/AGENTS.md", /^\*\*Free beta\*\*: skill calls are free for now[^\n]*\.$/m],
    ["/docs/slugify", /<p id="free-beta"><strong>Free beta:<\/strong> this skill answers without payment/],
  ])("%s: one notice while FREE_BETA is on, none otherwise", async (path, line) => {
    const free = await text(path, freeEnv);
    expect(free).toMatch(line);
    expect(free.match(new RegExp(NOTICE, "g"))).toHaveLength(1);
    expect(await text(path, paidEnv)).not.toMatch(NOTICE);
  });

  it("the MCP instructions open with the notice while FREE_BETA is on, and leave it out otherwise", async () => {
    expect(await mcpInstructions(freeEnv)).toMatch(
      /^Free beta: skill tools answer without payment for now[^.]*\. Every tool/,
    );
    expect(await mcpInstructions(paidEnv)).not.toMatch(/Free beta/);
  });

  it("the notice tells the truth: a skill answers unpaid, a partner route still asks for payment", async () => {
    const skill = await app.fetch(
      new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        body: JSON.stringify({ text: "a" }),
      }),
      freeEnv,
    );
    expect(skill.status).toBe(200);
    const partner = await app.fetch(
      new Request("https://skills.test/api/partners/pricefeed/try/price"),
      freeEnv,
    );
    expect(partner.status).toBe(402);
  });
});
