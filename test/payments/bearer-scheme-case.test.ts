import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { FIXTURE } from "../fixtures/upstream-requests";

// HTTP authentication schemes are case-insensitive (RFC 9110 §11.1): `bearer mk_…` is the key
// `Bearer mk_…` is. It was refused 401 "Malformed card-credit key" (the gate matched the scheme in
// any case, the key reader only as "Bearer").
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

const send = (path: string, headers: Record<string, string>, body?: unknown) =>
  app.fetch(
    new Request(`https://skills.test${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    paidEnv,
  );

describe("a card-credit key is read under any case of the Bearer scheme", () => {
  it.each(["bearer", "BEARER", "bEaReR"])(
    "Authorization: %s mk_…: the call is paid from the key",
    async (scheme) => {
      const key = await keyWith(env.DB, 3, "sha256");
      const res = await send("/api/skills/sha256", { authorization: `${scheme} ${key}` }, { text: "abc" });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-credits-remaining")).toBe("2");
      expect(await callsLeft(env.DB, key)).toBe(2);
    },
  );

  it("X-API-Key: bearer mk_… pays as well", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const res = await send("/api/skills/sha256", { "x-api-key": `bearer ${key}` }, { text: "abc" });
    expect(res.status).toBe(200);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("GET /api/credits reads the key under bearer", async () => {
    const key = await keyWith(env.DB, 5, "sha256");
    const res = await send("/api/credits", { authorization: `bearer ${key}` });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ skill_id: "sha256", calls_left: 5 });
    // A key's standing, asked with X-API-Key (no Authorization, which shared caches honour on
    // their own): no cache may keep it for another client.
    const asked: Record<string, string>[] = [
      { "x-api-key": key },
      { authorization: `Bearer ${key}` },
      { "x-api-key": "mk_unknown" },
    ];
    for (const headers of asked) {
      const again = await send("/api/credits", headers);
      expect(again.headers.get("cache-control")).toBe("private, no-store");
      await again.arrayBuffer();
    }
  });

  it("a key that is not one stays malformed whatever the scheme's case", async () => {
    const res = await send("/api/skills/sha256", { authorization: "bearer mk_short" }, { text: "abc" });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: "Malformed card-credit key" });
  });
});
