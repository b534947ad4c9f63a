import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";

const paidEnv = (overrides: Record<string, string>) => ({ ...env, FREE_BETA: "false", ...overrides });
const post = (e: Record<string, unknown>) =>
  createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    e,
  );

describe("x402 configuration problems are a clear 503, never a crash", () => {
  it.each([
    [{ X402_NETWORK: "base-mainnet" }, /X402_NETWORK/],
    [{ PAY_TO: "not-an-address" }, /PAY_TO/],
    [{ FACILITATOR_URL: "nope" }, /FACILITATOR_URL/],
  ])("%j", async (overrides, message) => {
    const res = await post(paidEnv(overrides));
    expect(res.status).toBe(503);
    expect((await res.json<{ detail: string }>()).detail).toMatch(message);
  });

  it("an unreachable facilitator is 503 and the next request tries again", async () => {
    const e = paidEnv({ FACILITATOR_URL: "http://127.0.0.1:9/facilitator" });
    for (let i = 0; i < 2; i++) {
      const res = await post(e);
      expect(res.status).toBe(503);
      expect((await res.json<{ detail: string }>()).detail).toMatch(/facilitator/);
    }
  });

  it("x402 disabled without another way to pay is a 402 that says so", async () => {
    const res = await post(paidEnv({ X402_ENABLED: "false" }));
    expect(res.status).toBe(402);
  });
});
