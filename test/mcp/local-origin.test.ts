import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { mcpInit } from "../helpers";

// DNS-rebinding protection (src/mcp/local-origin.ts): a local stack's /mcp answers only requests
// for a loopback host from no page or a loopback page; a public deployment answers any origin.
const app = createApp();
const LOCAL = "http://127.0.0.1:8787";

async function list(base: string, url: string, headers: Record<string, string>) {
  const init = mcpInit("tools/list", {});
  const res = await app.fetch(
    new Request(`${url}/mcp`, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...headers },
    }),
    { ...env, BASE_URL: base },
  );
  const answer = await res.json<{
    result?: { tools: unknown[] };
    error?: { code: number; message: string };
  }>();
  return { status: res.status, answer };
}

describe("/mcp on a loopback BASE_URL refuses what DNS rebinding sends", () => {
  it.each([
    [
      "a foreign Host and Origin (the conformance suite's rebinding case)",
      LOCAL,
      "evil.example.com",
      "http://evil.example.com",
    ],
    ["a loopback Host from a foreign page", LOCAL, "127.0.0.1:8787", "http://evil.example.com"],
    ["a foreign Host without Origin", LOCAL, "evil.example.com", undefined],
    ["a foreign URL host", "http://evil.example.com:8787", undefined, undefined],
    ["an opaque Origin (a sandboxed frame)", LOCAL, undefined, "null"],
  ])("%s: 403 with a JSON-RPC error", async (_case, url, host, origin) => {
    const headers: Record<string, string> = {};
    if (host) headers.host = host;
    if (origin) headers.origin = origin;
    const { status, answer } = await list(LOCAL, url, headers);
    expect(status).toBe(403);
    expect(answer.error?.code).toBe(-32000);
    expect(answer.error?.message).toMatch(/^Forbidden: this local MCP server/);
  });

  it.each([
    ["no Origin (a local agent)", "localhost:8787", undefined],
    ["a loopback page", "127.0.0.1:8787", "http://localhost:3000"],
    ["IPv6 loopback", "[::1]:8787", "http://[::1]:8787"],
  ])("%s: answered", async (_case, host, origin) => {
    const headers: Record<string, string> = { host };
    if (origin) headers.origin = origin;
    const { status, answer } = await list(LOCAL, LOCAL, headers);
    expect(status).toBe(200);
    expect(answer.result?.tools.length).toBeGreaterThan(30);
  });

  it("a public BASE_URL answers any Origin: the endpoint is public and holds no ambient credential", async () => {
    const { status, answer } = await list("https://skills.test", "https://skills.test", {
      origin: "https://some-agent-ui.example",
    });
    expect(status).toBe(200);
    expect(answer.result?.tools.length).toBeGreaterThan(30);
  });
});
