import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unique, upstreamRequests } from "../fixtures/upstream-requests";
import { paidEnv } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const app = createApp();

/** A research call under `bindings`, returned once its work past the answer (the cache write) is done. */
async function research(bindings: object, query: string, headers: Record<string, string> = {}) {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request("https://skills.test/api/skills/research", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ query }),
    }),
    bindings as typeof env,
    ctx,
  );
  const body = await res.json<{ cache?: string }>();
  await waitOnExecutionContext(ctx);
  return { status: res.status, cache: body.cache };
}

describe("the network skills' cache rules", () => {
  it(
    "KV refuses a lifetime under 60 s, so a NETWORK_CACHE_TTL_SECONDS under it is raised to 60 and still caches",
    async () => {
      // The reason for the floor (net/config.ts): a put with a shorter lifetime is refused outright.
      const refused = await env.KV.put(`ttl-probe:${crypto.randomUUID()}`, "x", { expirationTtl: 30 }).then(
        () => undefined,
        (e: unknown) => String(e),
      );
      expect(refused).toMatch(/expiration_ttl|60/i);
      const query = unique("short ttl");
      const bindings = { ...env, NETWORK_CACHE_TTL_SECONDS: "30" };
      expect(await research(bindings, query)).toEqual({ status: 200, cache: "miss" });
      expect(await research(bindings, query)).toEqual({ status: 200, cache: "hit" });
      expect(await upstreamRequests(`srsearch=${query}&`)).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an answer from the cache is charged as any answer: the buyer pays for the answer, not for its fetching",
    async () => {
      const paid = paidEnv();
      const key = await keyWith(env.DB, 2, "research");
      const query = unique("paid hit");
      const authorization = `Bearer ${key}`;
      expect(await research(paid, query, { authorization })).toEqual({ status: 200, cache: "miss" });
      expect(await callsLeft(env.DB, key)).toBe(1);
      expect(await research(paid, query, { authorization })).toEqual({ status: 200, cache: "hit" });
      expect(await callsLeft(env.DB, key)).toBe(0);
    },
    SKILL_TEST_TIMEOUT,
  );
});
