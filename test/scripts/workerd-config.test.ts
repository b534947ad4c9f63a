import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { serve, writeConfig } from "../../scripts/bench/workerd-config.mjs";
// @ts-expect-error plain JS script
import { freePort } from "../../scripts/lib/proc.mjs";

const root = path.resolve(import.meta.dirname, "../..");

describe("the bench's plain workerd: its KV stub fails as a KV namespace that is down", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "workerd-config-"));
  let stop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await stop?.();
    rmSync(dir, { recursive: true });
  });

  it("KV.put and KV.get settle (rejected), so a cached skill's first call answers (seo's hung)", {
    timeout: 60_000,
  }, async () => {
    writeFileSync(
      path.join(dir, "index.js"),
      `export default {
        async fetch(request, env) {
          if (new URL(request.url).pathname === "/__probe") return new Response("up");
          const put = await env.KV.put("k", "x".repeat(4096), { expirationTtl: 60 }).then(() => "stored", (e) => "refused: " + e.message);
          const get = await env.KV.get("k").then((v) => "read " + v, (e) => "refused: " + e.message);
          return Response.json({ put, get });
        },
      };`,
    );
    const port = await freePort();
    const config = writeConfig(dir, {
      name: "kv",
      files: ["index.js"],
      main: "index.js",
      port,
      bindings: {},
    });
    const served = await serve(root, config, { port, probePath: "/__probe" });
    stop = served.stop;
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(20_000) });
    const { put, get } = (await res.json()) as { put: string; get: string };
    expect(put).toMatch(/^refused: /);
    expect(get).toMatch(/^refused: /);
  });
});
