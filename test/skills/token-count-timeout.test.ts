import { env } from "cloudflare:test";
import { afterEach, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { forgetBpeTables } from "../../src/skills/token-count";

/**
 * token_count reads its BPE tables from the Worker's own static assets: when they do not arrive in
 * time the caller gets a 504 it is not charged for, and the OpenAPI document says so (a generated
 * client treats an undeclared status as a protocol error).
 */

afterEach(() => {
  vi.useRealTimers();
  forgetBpeTables();
});

it("a BPE table that does not load within 20 s answers 504, not charged, as the OpenAPI document lists", async () => {
  const app = createApp();
  const count = (e: object) =>
    app.fetch(
      new Request("https://skills.test/api/skills/token-count", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "hello", encoding: "o200k" }),
      }),
      e,
    );
  // A table this isolate loaded is not read again (as another test file may have loaded it).
  expect((await count(env)).status).toBe(200);
  forgetBpeTables();
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  const stalled = { ...env, ASSETS: { fetch: () => new Promise<Response>(() => {}) } };
  const pending = count(stalled);
  await vi.advanceTimersByTimeAsync(20_001);
  const res = await pending;
  expect(res.status).toBe(504);
  expect(await res.json()).toMatchObject({ detail: expect.stringMatching(/o200k_base/), charged: false });
  vi.useRealTimers();

  const doc = await (await app.fetch(new Request("https://skills.test/openapi.json"), env)).json<{
    paths: Record<string, { post: { responses: Record<string, unknown> } }>;
  }>();
  expect(doc.paths["/api/skills/token-count"]?.post.responses).toHaveProperty("504");
  // A utility skill that reads no assets cannot time out, and its operation does not say it can.
  expect(doc.paths["/api/skills/sha256"]?.post.responses).not.toHaveProperty("504");
  // The skill's docs page says so too.
  const page = async (slug: string) =>
    (await app.fetch(new Request(`https://skills.test/docs/${slug}`), env)).text();
  expect(await page("token-count")).toContain("502 and 504: its data tables did not load (not charged)");
  expect(await page("sha256")).not.toContain("504");
});
