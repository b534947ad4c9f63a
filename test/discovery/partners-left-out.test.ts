import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";

afterEach(() => vi.restoreAllMocks());

/** Every discovery document and page, and what in it names a partner route or price. */
const DOCUMENTS = [
  "/",
  "/docs",
  "/api/catalog",
  "/.well-known/x402",
  "/.well-known/agents.json",
  "/openapi.json",
  "/llms.txt",
  "/AGENTS.md",
  "/services/sha256.json",
];
// AGENTS.md names partners only in its spend cap, sized for the dearest partner price.
const PARTNER_ROUTE =
  /\/api\/partners\/|\/api\/skills\/refinery-recipes|services\/refinery-recipes|setSpendControls/;

async function get(bindings: object, path: string) {
  return createApp().fetch(new Request(`https://skills.test${path}`), bindings);
}

describe("a refused partner configuration leaves the partners out of every discovery document", () => {
  it.each([
    ["a multiplier below 3", { PARTNER_PRICE_MULTIPLIER: "2" }, "PARTNER_PRICE_MULTIPLIER"],
    ["PARTNER_BASE_URLS that is not JSON", { PARTNER_BASE_URLS: "{not json" }, "PARTNER_BASE_URLS"],
    ["PARTNERS_ENABLED false", { PARTNERS_ENABLED: "false" }, "PARTNERS_ENABLED"],
  ])(
    "%s: every document answers 200 without a partner route; the partner routes 503",
    async (_what, vars, named) => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      vi.spyOn(console, "log").mockImplementation(() => {});
      const bad = { ...env, ...vars };
      for (const path of DOCUMENTS) {
        const res = await get(bad, path);
        expect(res.status, path).toBe(200);
        expect(await res.text(), path).not.toMatch(PARTNER_ROUTE);
      }
      expect((await get(bad, "/services/refinery-recipes.json")).status).toBe(404);
      for (const path of ["/api/partners", "/api/partners/pricefeed"]) {
        const res = await get(bad, path);
        expect(res.status, path).toBe(503);
        expect((await res.json<{ detail: string }>()).detail, path).toContain(named);
      }
    },
  );

  it("with a configuration that can be read, the same documents name the partner routes", async () => {
    for (const path of DOCUMENTS.filter(
      (p) => !["/docs", "/api/catalog", "/.well-known/agents.json", "/services/sha256.json"].includes(p),
    )) {
      const res = await get(env, path);
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toMatch(PARTNER_ROUTE);
    }
    expect((await get(env, "/services/refinery-recipes.json")).status).toBe(200);
  });
});
