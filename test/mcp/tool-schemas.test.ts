import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { mcpInit, ORIGIN } from "../helpers";

// What tools/list publishes about a tool's arguments is what its route takes: a client (or the
// model filling the arguments) builds its call from these schemas.
const app = createApp();
const betaEnv = { ...env, FREE_BETA: "true" };

interface Tool {
  name: string;
  inputSchema: { properties: Record<string, Record<string, unknown>>; required?: string[] };
}

async function tools(): Promise<Map<string, Tool>> {
  const res = await app.fetch(new Request(`${ORIGIN}/mcp`, mcpInit("tools/list", {})), betaEnv);
  const list = (await res.json<{ result: { tools: Tool[] } }>()).result.tools;
  return new Map(list.map((t) => [t.name, t]));
}

describe("tools/list's argument schemas", () => {
  it("sha256's encoding names every alias its pattern lets through (binary, utf16le included), and each is taken", async () => {
    const field = (await tools()).get("sha256")?.inputSchema.properties.encoding as {
      description: string;
      pattern: string;
    };
    // The pattern's alternatives, each letter written as [xX].
    const names = /\(\?:(.*)\)/
      .exec(field.pattern)?.[1]
      ?.split("|")
      .map((n) => n.replace(/\[([a-z])[A-Z]\]/g, "$1"));
    expect(names).toContain("binary");
    for (const name of names ?? []) {
      expect(field.description, name).toMatch(new RegExp(`(^|[ (,])${name.replace(/-/g, "\\-")}\\b`));
      const res = await app.fetch(
        new Request(`${ORIGIN}/api/skills/sha256`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "ab", encoding: ` ${name.toUpperCase()} ` }),
        }),
        betaEnv,
      );
      expect(res.status, name).toBe(200);
    }
  });
});
