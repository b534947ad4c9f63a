import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";

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
    // wrangler.toml ships PAY_TO empty: nothing is sold until the operator names a wallet.
    [{ PAY_TO: "" }, /payments are not configured/],
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

  it.each([
    [{ PARTNER_BASE_URLS: '{"textkit":"host:9999"}' }],
    [{ PARTNER_BASE_URLS: "null" }],
    [{ PARTNER_PRICE_MULTIPLIER: "2" }],
  ])("bad partner configuration %j never stops the skills being sold", async (overrides) => {
    const res = await post(
      paidEnv({ ...overrides, FACILITATOR_URL: `${new URL(env.WIKIPEDIA_API_BASE).origin}/facilitator` }),
    );
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
    const partner = await createApp().fetch(
      new Request("https://skills.test/api/partners"),
      paidEnv(overrides),
    );
    expect(partner.status).toBe(503);
    // The refinery skill is a partner service: it answers the same 503, and never runs unpaid.
    const refinery = await createApp().fetch(
      new Request("https://skills.test/api/skills/refinery-recipes", {
        method: "POST",
        body: JSON.stringify({ raw: "x", request: "y", recipe: "custom" }),
      }),
      paidEnv(overrides),
    );
    expect(refinery.status).toBe(503);
  });

  it("a bad partner base URL leaves the documents up; only the partner routes answer 503", async () => {
    const e = paidEnv({ PARTNER_BASE_URLS: '{"textkit":"host:9999"}' });
    for (const path of ["/openapi.json", "/llms.txt", "/.well-known/x402", "/"]) {
      const res = await createApp().fetch(new Request(`https://skills.test${path}`), e);
      expect(res.status, path).toBe(200);
    }
  });

  it("x402 disabled without another way to pay is a 402 that says so", async () => {
    const res = await post(paidEnv({ X402_ENABLED: "false" }));
    expect(res.status).toBe(402);
  });
});
