import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call, ORIGIN } from "../helpers";

// Spec 2.8, copied by hand: [partner, service, method, path, partner price, listing price].
const SPEC: [string, string, string, string, number, number][] = [
  ["pricefeed", "price", "GET", "/price", 0.01, 0.03],
  ["pricefeed", "price_coin", "GET", "/price/{coin}", 0.02, 0.06],
  ["pricefeed", "portfolio", "GET", "/portfolio", 0.05, 0.15],
  ["pricefeed", "opportunities", "GET", "/opportunities/latest", 0.03, 0.09],
  ["pricefeed", "briefing", "GET", "/briefing/morning", 0.01, 0.03],
  ["pricefeed", "research", "GET", "/research/{topic}", 0.02, 0.06],
  ["pricefeed", "audit_x402", "GET", "/audit/x402", 1.0, 3.0],
  ["pricefeed", "receipt_verify", "POST", "/receipt/verify", 0.05, 0.15],
  ["pricefeed", "mcp_tools", "GET", "/mcp/tools", 0.0, 0.0],
  ["pricefeed", "mcp_call", "POST", "/mcp/call", 0.05, 0.15],
  ["textkit", "pii-redactor", "POST", "/api/redact", 0.01, 0.03],
  ["textkit", "rag-chunker", "POST", "/api/chunk", 0.012, 0.036],
  ["textkit", "heading-outline", "POST", "/api/outline", 0.01, 0.03],
  ["textkit", "csv-normalizer", "POST", "/api/normalize-csv", 0.008, 0.024],
  ["textkit", "text-structurer", "POST", "/api/structure", 0.015, 0.045],
  ["textkit", "token-counter", "POST", "/api/token-count", 0.005, 0.015],
  ["textkit", "base64", "POST", "/api/base64", 0.003, 0.009],
  ["textkit", "json-sort", "POST", "/api/json-sort", 0.004, 0.012],
  ["refinery", "eval_set", "POST", "/api/recipes/eval_set/run", 0.02, 0.06],
  ["refinery", "rag_chunks", "POST", "/api/recipes/rag_chunks/run", 0.02, 0.06],
  ["refinery", "policy_digest", "POST", "/api/recipes/policy_digest/run", 0.03, 0.09],
  ["refinery", "custom", "POST", "/api/recipes/custom/run", 0.02, 0.06],
  ["notifyhook", "notify", "POST", "/v1/hooks", 0.0, 0.0],
];

interface Flat {
  partner_id: string;
  service_id: string;
  id: string;
  method: string;
  path: string;
  partner_price_usd: number;
  price_usd: number;
  cost_multiplier: number;
  marketplace_fee_usd: number;
  partner_payout_usd: number;
  revenue_vs_cost: number | null;
  try_url: string;
  external_url: string;
  base_url: string;
  listing_status: string;
  [k: string]: unknown;
}
const listing = async (e = env) =>
  (await createApp().fetch(new Request("https://skills.test/api/partners"), e)).json<{
    partners: Record<string, unknown>[];
    services: Flat[];
    listing_status: string;
  }>();

describe("GET /api/partners", () => {
  it("lists the four partners and all 23 services of spec 2.8 with exact derived prices", async () => {
    const body = await listing();
    expect(body.listing_status).toBe("paid");
    expect(body.partners.map((p) => p.id)).toEqual(["pricefeed", "textkit", "refinery", "notifyhook"]);
    expect(
      body.services.map((s) => [
        s.partner_id,
        s.service_id,
        s.method,
        s.path,
        s.partner_price_usd,
        s.price_usd,
      ]),
    ).toEqual(SPEC);
    for (const s of body.services) {
      const free = s.partner_price_usd === 0;
      // Exact decimals: 3 × 0.012 is 0.036, not 0.036000000000000004.
      expect(String(s.price_usd)).toBe(
        String(SPEC.find((r) => r[1] === s.service_id && r[0] === s.partner_id)?.[5]),
      );
      expect(s.cost_multiplier).toBe(3);
      expect(s.partner_payout_usd).toBe(s.partner_price_usd);
      // In integer micro-dollars, then back: exactly the number the listing carries.
      expect(s.marketplace_fee_usd).toBe(
        (Math.round(s.price_usd * 1e6) - Math.round(s.partner_price_usd * 1e6)) / 1e6,
      );
      expect(s.revenue_vs_cost).toBe(free ? null : 3);
      expect(s.try_url).toBe(`/api/partners/${s.partner_id}/try/${s.service_id}`);
      expect(s.external_url).toBe(`${s.base_url}${s.path}`);
      const partner = body.partners.find((p) => p.id === s.partner_id);
      for (const [field, from] of [
        ["partner_name", "name"],
        ["provider", "provider"],
        ["github", "github"],
        ["icon", "icon"],
        ["base_url", "base_url"],
        ["listing_status", "listing_status"],
      ] as const) {
        expect(s[field], `${s.service_id}.${field}`).toBe(partner?.[from]);
        expect(s[field], `${s.service_id}.${field}`).toBeTruthy();
      }
      for (const hidden of ["test_params", "test_headers", "test_body", "our_margin_vs_cost"]) {
        expect(s, `${s.service_id}.${hidden}`).not.toHaveProperty(hidden);
      }
    }
    expect(body.services.find((s) => s.service_id === "rag-chunker")?.marketplace_fee_usd).toBe(0.024);
  });

  it("partner objects carry every field of spec 2.6, external fields only on the external partner", async () => {
    const { partners } = await listing();
    for (const p of partners) {
      expect(p).toMatchObject({ category: "hosted_partner", network: "base", cost_multiplier: 3 });
      for (const k of [
        "id",
        "name",
        "provider",
        "github",
        "base_url",
        "icon",
        "description",
        "facilitator",
        "ownership_wallet",
        "listing_status",
        "services",
      ]) {
        expect(p, `${p.id}.${k}`).toHaveProperty(k);
      }
      const services = p.services as { our_margin_vs_cost: number | null; partner_price_usd: number }[];
      for (const s of services) expect(s.our_margin_vs_cost).toBe(s.partner_price_usd === 0 ? null : 2);
    }
    const notify = partners.find((p) => p.id === "notifyhook");
    expect(notify).toMatchObject({ listing_status: "external_x403", facilitator: "" });
    expect(notify?.billing_model).toBeTruthy();
    expect(notify?.protocol).toBeTruthy();
    const paid = partners.filter((p) => p.id !== "notifyhook");
    for (const p of paid) {
      expect(p).not.toHaveProperty("billing_model");
      expect(p.facilitator).toBe(env.FACILITATOR_URL);
    }
  });

  it("base URLs are overridable and the multiplier is configuration, refused below 3", async () => {
    const overridden = await listing({ ...env, PARTNER_BASE_URLS: '{"textkit":"http://127.0.0.1:9999/"}' });
    expect(overridden.services.find((s) => s.service_id === "base64")?.external_url).toBe(
      "http://127.0.0.1:9999/api/base64",
    );
    // An unquoted 4 changed after deploy (a number binding) is read as "4", not a 500.
    for (const multiplier of ["4", 4]) {
      const four = await listing({ ...env, PARTNER_PRICE_MULTIPLIER: multiplier as string });
      expect(four.services.find((s) => s.service_id === "rag-chunker")).toMatchObject({
        price_usd: 0.048,
        revenue_vs_cost: 4,
      });
    }
    const low = await createApp().fetch(new Request("https://skills.test/api/partners"), {
      ...env,
      PARTNER_PRICE_MULTIPLIER: "2.5",
    });
    expect(low.status).toBe(503);
    expect((await low.json<{ detail: string }>()).detail).toMatch(/below the minimum of 3/);
  });

  it.each([
    ["null", /not a JSON object/],
    ["[]", /not a JSON object/],
    ['["http://127.0.0.1:1"]', /not a JSON object/],
    ["3", /not a JSON object/],
    ['"http://127.0.0.1:1"', /not a JSON object/],
    ["{nope", /not valid JSON/],
    ['{"textkit":"ftp://127.0.0.1/"}', /\["textkit"\] is not an http\(s\) URL/],
    ['{"textkit":"127.0.0.1:9999"}', /\["textkit"\] is not an http\(s\) URL/],
    ['{"textkit":5}', /\["textkit"\] is not an http\(s\) URL/],
    // A TOML table or array changed after deploy (an object binding, not a JSON string): not text.
    [{ textkit: "http://127.0.0.1:1" }, /is not text \(write it as a JSON string\)/],
    [['{"textkit":"http://127.0.0.1:1"}'], /is not text \(write it as a JSON string\)/],
  ])("PARTNER_BASE_URLS=%s is the documented 503, not a crash", async (value, message) => {
    const e = { ...env, PARTNER_BASE_URLS: value };
    for (const path of ["/api/partners", "/api/partners/textkit", "/api/partners/pricefeed/try/mcp_tools"]) {
      const res = await createApp().fetch(new Request(`${ORIGIN}${path}`), e);
      expect(res.status, path).toBe(503);
      const { detail } = await res.json<{ detail: string }>();
      expect(detail, path).toMatch(/^Partner listing is misconfigured: PARTNER_BASE_URLS/);
      expect(detail, path).toMatch(message);
    }
  });

  it("GET /api/partners/<id> for one; unknown is 404 JSON", async () => {
    expect(
      (await (await call("/api/partners/refinery")).json<{ services: unknown[] }>()).services,
    ).toHaveLength(4);
    const missing = await call("/api/partners/nope");
    expect(missing.status).toBe(404);
  });
});
