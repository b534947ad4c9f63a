import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../../src/app";

// Hono's SmartRouter uses its RegExpRouter (one regular expression per method) unless a route
// pattern is one it cannot compile, e.g. a static path beside a parameter (/docs/mcp next to
// /docs/:slug); then every request of the app walks the TrieRouter instead (measured in the CPU
// profile of the 402 path, docs/PERFORMANCE.md).
it("every route of the app fits Hono's RegExpRouter", { timeout: 30_000 }, async () => {
  const app = createApp();
  expect((await app.request("/health", {}, env)).status).toBe(200);
  expect((app.router as unknown as { activeRouter?: { name: string } }).activeRouter?.name).toBe(
    "RegExpRouter",
  );
});

it("the pages taken by name on /docs/:slug still answer", { timeout: 30_000 }, async () => {
  const app = createApp();
  for (const path of ["/docs/mcp", "/docs/reliability", "/docs/sha256"]) {
    const res = await app.request(path, {}, env);
    expect(res.status, path).toBe(200);
    expect(res.headers.get("content-type"), path).toContain("text/html");
  }
  expect((await app.request("/docs/no-such-skill", {}, env)).status).toBe(404);
});
