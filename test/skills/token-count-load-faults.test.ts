import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { forgetBpeTables } from "../../src/skills/token-count";
import { callsLeft, keyWith } from "../fixtures/credits";
import { ORIGIN } from "../helpers";

/**
 * token_count's BPE table comes from the Worker's own static assets. However that load fails (the
 * asset missing or failing, cut short, not the table, the binding throwing), the caller gets the
 * documented 502 `{detail, charged:false}` (a timeout is the 504 of token-count-timeout.test.ts),
 * never a bare 500; a maintainer gets one line naming the asset; the next call loads it again.
 */

const app = createApp();
// Another test file of this isolate may have loaded the tables already.
beforeEach(() => forgetBpeTables());
afterEach(() => {
  vi.restoreAllMocks();
  forgetBpeTables();
});

const count = (e: object, headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`${ORIGIN}/api/skills/token-count`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ text: "hello world", encoding: "o200k" }),
    }),
    e,
  );
const servedBy = (fetch: () => Response | Promise<Response>) => ({ ...env, ASSETS: { fetch } });

/** A table's bytes as the Worker's own assets serve them. */
const asset = async (name: string) =>
  (await env.ASSETS.fetch(`https://assets.invalid/assets/bpe/${name}.bin`)).arrayBuffer();
const o200k = await asset("o200k_base");
/** Its hash slots' bytes (the third word of its header counts them). */
const SLOTS_BYTES = 4 * (new Uint32Array(o200k, 0, 4)[2] as number);
/** The o200k table with one region of it rewritten. */
const altered = (edit: (copy: Uint8Array) => void) => {
  const copy = new Uint8Array(o200k.slice(0));
  edit(copy);
  return copy;
};

const FAULTS: [string, () => Response | Promise<Response>][] = [
  ["a 404", () => new Response("Not Found", { status: 404 })],
  ["a 500", () => new Response("error", { status: 500 })],
  ["an empty body", () => new Response("")],
  ["a table cut short", () => new Response(o200k.slice(0, o200k.byteLength - 1))],
  ["a table with bytes to spare", () => new Response(new Blob([o200k, new Uint8Array(1)]))],
  ["the JSON table of before", () => new Response('["!","\\"","#"]')],
  ["an HTML page", () => new Response("<!doctype html><title>Not found</title>".repeat(100))],
  // The right size, its hash slots all naming rank 0: no empty slot ends a probe.
  ["a table with no empty slot", () => new Response(altered((b) => b.fill(0, 16, 16 + SLOTS_BYTES)))],
  // (Between the two: they fail for the same reason, and a reason is logged once until it changes.)
  ["the other encoding's table", async () => new Response(await asset("cl100k_base"))],
  // The right layout and size, its hash slots all empty: only counting tells it from the table.
  ["a table whose lookups all miss", () => new Response(altered((b) => b.fill(0xff, 16, 16 + SLOTS_BYTES)))],
  [
    "a throw",
    () => {
      throw new Error("ASSETS binding down");
    },
  ],
];

describe("a BPE table that fails to load", () => {
  it.each(FAULTS)(
    "%s answers 502, not charged, and the next call loads the table again",
    async (_, fetch) => {
      const errors = vi.spyOn(console, "error");
      const res = await count(servedBy(fetch));
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual({
        detail: expect.stringMatching(/o200k_base/),
        charged: false,
      });
      const lines = errors.mock.calls
        .map((args) => String(args[0]))
        .filter((l) => l.includes("BPE table unusable"));
      // Each case's reason differs from the one before it, so each is logged.
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] as string)).toMatchObject({ asset: "/assets/bpe/o200k_base.bin" });
      // Not kept: served the real table, the next call counts.
      const ok = await count(env);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ encoding: "o200k_base", approx_tokens: 2 });
    },
  );

  it("is logged once, naming the asset, however many calls meet it", async () => {
    const errors = vi.spyOn(console, "error");
    // A reason no other test gives: its line cannot have been logged before.
    const status = 400 + Math.floor(Math.random() * 50);
    for (let i = 0; i < 3; i++) {
      forgetBpeTables();
      expect((await count(servedBy(() => new Response("", { status })))).status).toBe(502);
    }
    const lines = errors.mock.calls
      .map((args) => String(args[0]))
      .filter((l) => l.includes("BPE table unusable"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: "error",
      asset: "/assets/bpe/o200k_base.bin",
      error: expect.stringContaining(String(status)),
    });
  });

  it("gives a card call's credit back", async () => {
    const key = await keyWith(env.DB, 3, "token_count");
    const paid = { FREE_BETA: "false" };
    const res = await count(
      { ...servedBy(() => new Response("[]")), ...paid },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status).toBe(502);
    await vi.waitFor(async () => expect(await callsLeft(env.DB, key)).toBe(3));
    expect((await count({ ...env, ...paid }, { authorization: `Bearer ${key}` })).status).toBe(200);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("is a 502 the OpenAPI document and the skill's page declare", async () => {
    const doc = await (await app.fetch(new Request(`${ORIGIN}/openapi.json`), env)).json<{
      paths: Record<string, { post: { responses: Record<string, { content: Record<string, unknown> }> } }>;
    }>();
    const declared = JSON.stringify(doc.paths["/api/skills/token-count"]?.post.responses["502"]);
    expect(declared).toContain("#/components/schemas/UpstreamError");
    // A utility skill that reads no assets fails only its settlement with a 502.
    expect(JSON.stringify(doc.paths["/api/skills/sha256"]?.post.responses["502"])).not.toContain(
      "UpstreamError",
    );
    const page = await (await app.fetch(new Request(`${ORIGIN}/docs/token-count`), env)).text();
    expect(page).toMatch(/When they fail to\s+load it answers <code>502<\/code>/);
  });
});
