import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { newApiKey } from "../../src/payments/credits";
import { skills } from "../../src/skills/registry";
import { keyWith as newKey } from "../fixtures/credits";
import { call, postJson } from "../helpers";

const B = "https://skills.test";

describe("buying from the pages", () => {
  it("each docs page and the applet quote the pack POST /api/cardpay/checkout then sells", async () => {
    const applet = await (await call("/applet")).text();
    for (const s of skills) {
      const res = await postJson("/api/cardpay/checkout", { skill_id: s.id });
      expect(res.status, s.id).toBe(200);
      const { calls, amount_usd } = await res.json<{ calls: number; amount_usd: number }>();
      const label = `Buy ${calls} calls for $${amount_usd.toFixed(2)}`;
      const page = await (await call(`/docs/${s.slug}`)).text();
      expect(page, s.id).toContain(`data-skill-id="${s.id}"`);
      expect(page, s.id).toContain(`>${label}</button>`);
      expect(page, s.id).toContain('src="/assets/buy.js"');
      expect(applet, s.id).toContain(`data-pack="${label}"`);
    }
  }, 60_000);

  it("without Stripe no page offers a card purchase", async () => {
    const noStripe = { ...env, STRIPE_SECRET_KEY: undefined };
    const page = await (await createApp().fetch(new Request(`${B}/docs/slugify`), noStripe)).text();
    expect(page).not.toContain('id="buy"');
    const applet = await (await createApp().fetch(new Request(`${B}/applet`), noStripe)).text();
    expect(applet).not.toContain("data-pack=");
  });
});

describe("docs pages tell what costs nothing", () => {
  it("every page says 422 comes only after payment; analytic pages list their uncharged 502/504", async () => {
    for (const s of skills) {
      const page = await (await call(`/docs/${s.slug}`)).text();
      expect(page, s.id).toContain("is checked once the call is paid");
      const upstream = page.includes("502 and 504: an upstream source failed (not charged)");
      expect(upstream, s.id).toBe(s.kind === "analytic");
      if (upstream) expect(page, s.id).toContain("&quot;charged&quot;: false");
    }
    const agents = await (await call("/AGENTS.md")).text();
    expect(agents).toContain("Only a paid call (or one with a card-credit key) gets this far");
  });
});

describe("card-credit key forms", () => {
  const paidEnv = { ...env, FREE_BETA: "false", X402_ENABLED: "false" };
  const keyWith = (calls: number) => newKey(env.DB, calls, "sha256");
  const sha = (headers: Record<string, string>) =>
    createApp().fetch(
      new Request(`${B}/api/skills/sha256`, { method: "POST", headers, body: '{"text":"abc"}' }),
      paidEnv,
    );

  it.each([
    ["Authorization: Bearer mk_…", (k: string) => ({ authorization: `Bearer ${k}` })],
    ["Authorization: mk_… (no Bearer)", (k: string) => ({ authorization: k })],
    ["X-API-Key: mk_…", (k: string) => ({ "x-api-key": k })],
    ["X-API-Key: Bearer mk_…", (k: string) => ({ "x-api-key": `Bearer ${k}` })],
  ])("%s pays for the call and spends one credit", async (_, headers) => {
    const key = await keyWith(3);
    const res = await sha(headers(key));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-remaining")).toBe("2");
    const credits = await createApp().fetch(
      new Request(`${B}/api/credits`, { headers: headers(key) }),
      paidEnv,
    );
    expect(await credits.json()).toMatchObject({ skill_id: "sha256", calls_left: 2 });
  });

  it("an unknown key in X-API-Key is a 401, not a silent 402", async () => {
    const res = await sha({ "x-api-key": newApiKey() });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: "Unknown card-credit key" });
  });
});
