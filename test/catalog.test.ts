import { env } from "cloudflare:test";
import { type Schema, Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { skills as registry } from "../src/skills/registry";
import { call } from "./helpers";

interface Entry {
  id: string;
  name: string;
  description: string;
  endpoint: string;
  method: string;
  doc_slug: string;
  category: string;
  price_usd: number;
  docs_url: string;
  example_request: Record<string, unknown>;
  example_response: Record<string, unknown>;
  input_schema: { type: string; properties: Record<string, unknown>; required?: string[] };
}

// Spec 2.2, copied by hand on purpose: the registry must agree with the contract, not with itself.
const SPEC: [string, string, number, string][] = [
  ["osint_graph", "/api/skills/osint-graph", 0.01, "osint_graph"],
  ["research", "/api/skills/research", 0.015, "research"],
  ["seo", "/api/skills/seo", 0.012, "marketing"],
  ["ai_detector", "/api/skills/ai-detector", 0.01, "ai_detection"],
  ["json_flatten", "/api/skills/json-flatten", 0.006, "data_prep"],
  ["json_sort", "/api/skills/json-sort", 0.003, "data_prep"],
  ["text_diff", "/api/skills/text-diff", 0.006, "text_ops"],
  ["url_normalize", "/api/skills/url-normalize", 0.005, "web_utils"],
  ["html_clean", "/api/skills/html-clean", 0.008, "data_prep"],
  ["json_schema_validate", "/api/skills/json-schema-validate", 0.006, "data_prep"],
  ["keyword_extract", "/api/skills/keyword-extract", 0.008, "text_ops"],
  ["token_count", "/api/skills/token-count", 0.004, "text_ops"],
  ["sha256", "/api/skills/sha256", 0.003, "text_ops"],
  ["uuid_mint", "/api/skills/uuid-mint", 0.003, "text_ops"],
  ["slugify", "/api/skills/slugify", 0.003, "text_ops"],
];

describe("GET /api/catalog", () => {
  it("reads its flags from configuration and lists no partners", async () => {
    const body = await (await call("/api/catalog")).json<Record<string, unknown>>();
    // This test worker runs with FREE_BETA=true; the deployed defaults are checked in test/e2e.
    expect(body).toMatchObject({
      x402_enabled: true,
      cardpay_enabled: true,
      free_beta: true,
      hosted_partners: [],
    });
    const app = createApp();
    const off = await app.fetch(new Request("https://skills.test/api/catalog"), {
      ...env,
      X402_ENABLED: "no",
    });
    expect(await off.json()).toMatchObject({ x402_enabled: false });
  });

  it("lists the 15 skills of spec 2.2 with exact prices and categories", async () => {
    const { skills } = await (await call("/api/catalog")).json<{ skills: Entry[] }>();
    expect(skills.map((s) => [s.id, s.endpoint, s.price_usd, s.category])).toEqual(SPEC);
    for (const s of skills) {
      expect(s.method).toBe("POST");
      expect(s.doc_slug).toBe(s.id.replaceAll("_", "-"));
      expect(s.endpoint).toBe(`/api/skills/${s.doc_slug}`);
      expect(s.docs_url).toBe(`https://skills.test/docs/${s.doc_slug}`);
      expect(s.name.length).toBeGreaterThan(0);
      expect(s.description.length).toBeGreaterThan(20);
      expect(s.description.length).toBeLessThan(500);
      expect(s.example_response.skill).toBe(s.id);
      expect(s.input_schema.type).toBe("object");
    }
  });

  it("input_schema carries the bounds of the zod schema", async () => {
    const { skills } = await (await call("/api/catalog")).json<{ skills: Entry[] }>();
    const osint = skills.find((s) => s.id === "osint_graph");
    expect(osint?.input_schema.required).toEqual(["seed_entity"]);
    expect(osint?.input_schema.properties.seed_entity).toMatchObject({
      type: "string",
      minLength: 1,
      maxLength: 500,
    });
    expect(osint?.input_schema.properties.max_depth).toMatchObject({
      type: "integer",
      minimum: 1,
      maximum: 4,
      default: 2,
    });
    const html = skills.find((s) => s.id === "html_clean");
    expect(html?.input_schema.properties.mode).toMatchObject({ maxLength: 16, enum: ["text", "markdown"] });
  });

  // Checked against the validators rather than by calling the skills: the network skills' examples
  // name real sites, and a test must not reach the internet.
  it("every example_request passes the skill's zod schema and its published input_schema", async () => {
    const { skills } = await (await call("/api/catalog")).json<{ skills: Entry[] }>();
    for (const s of skills) {
      const def = registry.find((d) => d.id === s.id);
      expect(def?.input.safeParse(s.example_request).success, s.id).toBe(true);
      const published = new Validator(s.input_schema as Schema, "2020-12").validate(s.example_request);
      expect(published.errors, s.id).toEqual([]);
    }
  });

  it("answers at the edges of what is accepted match the 200 schema openapi.json publishes (strict clients validate them)", async () => {
    const doc = await (await call("/openapi.json")).json<{
      paths: Record<
        string,
        { post: { responses: Record<string, { content: Record<string, { schema: Schema }> }> } }
      >;
    }>();
    const cases: [string, Record<string, unknown>][] = [
      // WHATWG and pydantic both accept port 0: the answer names it.
      ["/api/skills/url-normalize", { url: "https://a.b:0/" }],
      ["/api/skills/url-normalize", { url: "http://[::1]:65535/x" }],
    ];
    for (const [endpoint, body] of cases) {
      const res = await call(endpoint, { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(200);
      const answer = await res.json();
      const schema = doc.paths[endpoint]?.post.responses["200"]?.content["application/json"]
        ?.schema as Schema;
      const { errors } = new Validator(schema, "2020-12").validate(answer);
      expect(errors, JSON.stringify(answer)).toEqual([]);
    }
  });

  it("the published input_schema rejects what validation rejects, and accepts what it accepts", async () => {
    const { skills } = await (await call("/api/catalog")).json<{ skills: Entry[] }>();
    // [skill, body, accepted by the server]: checks that live in code, not only in types and bounds.
    const cases: [string, unknown, boolean][] = [
      ["token_count", { text: 42 }, false],
      ["ai_detector", {}, false],
      ["ai_detector", { text: "" }, false],
      ["ai_detector", { text: null, url: null }, false],
      ["ai_detector", { text: "Some words." }, true],
      ["sha256", { text: "a", encoding: "aaaa" }, false],
      ["sha256", { text: "a", encoding: "latin2" }, false],
      ["sha256", { text: "a", encoding: " UTF8 " }, true],
      ["sha256", { text: "a", encoding: "ISO-8859-1" }, true],
    ];
    for (const [id, body, accepted] of cases) {
      const entry = skills.find((s) => s.id === id) as Entry;
      const published = new Validator(entry.input_schema as Schema, "2020-12").validate(body).valid;
      expect(published, `${id} ${JSON.stringify(body)}`).toBe(accepted);
      const res = await call(entry.endpoint, { method: "POST", body: JSON.stringify(body) });
      expect(res.status === 422, `${id} ${JSON.stringify(body)}`).toBe(!accepted);
    }
  });
});
