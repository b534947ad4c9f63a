import { XMLParser, XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { WEB_ONLY_ROUTES } from "../src/discovery/openapi";
import { skills } from "../src/skills/registry";
import { call } from "./helpers";

const B = "https://skills.test";
const text = async (path: string) => {
  const res = await call(path);
  expect(res.status, path).toBe(200);
  return { res, body: await res.text() };
};
const dollars = (p: number) => `$${p}`;

describe("discovery documents", () => {
  it("robots.txt points at the sitemap", async () => {
    const { res, body } = await text("/robots.txt");
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(body).toContain(`Sitemap: ${B}/sitemap.xml`);
  });

  it("sitemap.xml is valid sitemap XML listing every page and docs page", async () => {
    const { res, body } = await text("/sitemap.xml");
    expect(res.headers.get("content-type")).toContain("application/xml");
    expect(XMLValidator.validate(body)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(body);
    expect(doc.urlset["@_xmlns"]).toBe("http://www.sitemaps.org/schemas/sitemap/0.9");
    const locs = (doc.urlset.url as { loc: string }[]).map((u) => u.loc);
    expect(locs).toEqual([`${B}/`, `${B}/docs`, ...skills.map((s) => `${B}/docs/${s.slug}`), `${B}/applet`]);
  });

  it("llms.txt follows llmstxt.org and lists every skill with endpoint, price and docs", async () => {
    const { body } = await text("/llms.txt");
    expect(body.startsWith("# ")).toBe(true);
    expect(body).toMatch(/\n> .+\n/);
    for (const s of skills) {
      expect(body).toContain(
        `- [${s.id}](${B}/docs/${s.slug}): POST ${s.endpoint}, ${dollars(s.price_usd)} per call.`,
      );
    }
    for (const link of ["/AGENTS.md", "/openapi.json", "/api/catalog"]) expect(body).toContain(`${B}${link}`);
  });

  it("AGENTS.md covers discover, call, pay (x402 and card) and errors, with every skill", async () => {
    const { body } = await text("/AGENTS.md");
    for (const h of [
      "## 1. Discover",
      "## 2. Call",
      "## 3. Pay per call with x402 v2",
      "## 4. Or pay with card credits",
      "## 5. Read errors",
    ]) {
      expect(body).toContain(h);
    }
    expect(body).toContain("wrapFetchWithPayment");
    for (const s of skills)
      expect(body).toContain(`| ${s.id} | POST ${s.endpoint} | ${dollars(s.price_usd)} |`);
  });

  it("/.well-known/x402 lists every paid resource as an absolute URL", async () => {
    const doc = JSON.parse((await text("/.well-known/x402")).body);
    expect(doc.version).toBe(1);
    const partners = (
      await (
        await call("/api/partners")
      ).json<{ services: { try_url: string; price_usd: number; listing_status: string }[] }>()
    ).services;
    const paidPartners = partners
      .filter((s) => s.price_usd > 0 && s.listing_status === "paid")
      .map((s) => `${B}${s.try_url}`);
    expect(paidPartners).toHaveLength(21);
    expect(doc.resources).toEqual([
      ...skills.map((s) => `${B}${s.endpoint}`),
      ...paidPartners,
      `${B}/api/skills/refinery-recipes`,
    ]);
    expect(doc.ownershipProofs).toEqual([]);
    expect(typeof doc.instructions).toBe("string");
  });

  it("x402list.txt is text/plain with the configured tokens (none by default)", async () => {
    const { res, body } = await text("/.well-known/x402list.txt");
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(body).toBe("");
    const app = createApp();
    const { env } = await import("cloudflare:test");
    const withTokens = await app.fetch(new Request(`${B}/.well-known/x402list.txt`), {
      ...env,
      X402LIST_TOKENS: "tok-a, tok-b",
    });
    expect(await withTokens.text()).toBe("tok-a\ntok-b\n");
  });

  it("both agent manifests are the same document with every skill", async () => {
    const a = JSON.parse((await text("/.well-known/agents.json")).body);
    const b = JSON.parse((await text("/agents.json")).body);
    expect(a).toEqual(b);
    expect(a.base_url).toBe(B);
    expect(a.payment_methods.map((m: { type: string }) => m.type)).toEqual(["x402", "card_credits"]);
    expect(
      a.skills.map((s: { id: string; price_usd: number; endpoint: string; method: string }) => [
        s.id,
        s.price_usd,
        s.endpoint,
        s.method,
      ]),
    ).toEqual(skills.map((s) => [s.id, s.price_usd, `${B}${s.endpoint}`, "POST"]));
    for (const s of a.skills) expect(s.input_schema.type).toBe("object");
  });

  it("the humanless contract states prices, settlement, refunds, limits, errors and contact", async () => {
    const doc = JSON.parse((await text("/contracts/humanless.json")).body);
    expect(doc.version).toBe("2.7.1");
    expect(doc.pricing.currency).toBe("USD");
    for (const s of skills) expect(doc.pricing.prices[s.id].price_usd).toBe(String(s.price_usd));
    for (const k of ["settlement_rule", "refunds", "limits", "error_formats"]) expect(doc[k]).toBeTruthy();
    expect(doc.provider.support_contact).toContain("@");
  });

  it("each skill has the service description its x-x402 specSource names", async () => {
    for (const s of skills) {
      const doc = JSON.parse((await text(`/services/${s.slug}.json`)).body);
      expect(doc.x402.amount).toBe(s.price_atomic.toString());
    }
    expect((await call("/services/nope.json")).status).toBe(404);
  });
});

describe("OpenAPI", () => {
  const load = async () => JSON.parse((await text("/openapi.json")).body);

  it("is 3.1 with version, contact, guidance and the agentcash llms.txt pointer", async () => {
    const doc = await load();
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("2.7.1");
    expect(doc.info.contact.email).toContain("@");
    expect(typeof doc.info["x-guidance"]).toBe("string");
    expect(doc["x-agentcash-guidance"].llmsTxtUrl).toBe(`${B}/llms.txt`);
  });

  it("annotates every priced skill with x-x402 and x-payment-info from the registry", async () => {
    const doc = await load();
    for (const s of skills) {
      const op = doc.paths[s.endpoint].post;
      expect(op["x-x402"]).toEqual({
        price: dollars(s.price_usd),
        network: "eip155:8453",
        specSource: `services/${s.slug}.json`,
      });
      expect(op["x-payment-info"]).toEqual({
        price: { mode: "fixed", currency: "USD", amount: String(s.price_usd) },
        protocols: [{ x402: {} }],
      });
      expect(op.security).toEqual([]);
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "402", "422"]));
      expect(op.requestBody.content["application/json"].schema.properties).toBeTruthy();
    }
  });

  it("documents every route the app serves, each with an explicit security", async () => {
    const doc = await load();
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(
      doc.paths as Record<string, Record<string, { security: unknown }>>,
    )) {
      for (const [method, op] of Object.entries(ops)) {
        documented.add(`${method.toUpperCase()} ${path}`);
        expect(Array.isArray(op.security), `${method} ${path}`).toBe(true);
      }
    }
    const served = new Set(
      createApp()
        .routes.filter((r) => r.method !== "ALL" && !r.path.endsWith("*"))
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)\{[^}]*\}/g, "{$1}").replace(/:(\w+)/g, "{$1}")}`),
    );
    // The service description route is written with a regex in Hono: /services/:file{...}.
    served.delete("GET /services/{file}");
    served.add("GET /services/{slug}.json");
    const webOnly = new Set<string>(WEB_ONLY_ROUTES);
    expect([...served].filter((r) => !documented.has(r) && !webOnly.has(r))).toEqual([]);
    expect([...documented].filter((r) => !served.has(r))).toEqual([]);
    expect([...webOnly].filter((r) => documented.has(r) || !served.has(r))).toEqual([]);
  });

  it("stays within the 40 operations agent directories accept before warning about token budgets", async () => {
    const doc = await load();
    const operations = Object.values(doc.paths as Record<string, object>).flatMap((ops) => Object.keys(ops));
    expect(operations.length).toBeGreaterThanOrEqual(skills.length);
    expect(operations.length).toBeLessThanOrEqual(40);
  });
});

describe("pages", () => {
  it.each(["/", "/docs", "/applet", "/docs/json-flatten"])("%s is HTML with a strict CSP", async (path) => {
    const res = await call(path);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=/);
    expect(html).not.toMatch(/https?:\/\/(?!skills\.test)[^"'\s]*\.(js|css)/);
  });

  it("the home page and docs list every skill with its price", async () => {
    const home = await (await call("/")).text();
    const docs = await (await call("/docs")).text();
    for (const s of skills) {
      expect(home).toContain(`href="/docs/${s.slug}"`);
      expect(home).toContain(dollars(s.price_usd));
      expect(docs).toContain(`href="/docs/${s.slug}"`);
    }
  });

  it("a skill page has the schema table, examples, curl, @x402/fetch, card credits and errors", async () => {
    const html = await (await call("/docs/token-count")).text();
    for (const needle of [
      "<table",
      "curl -s -X POST",
      "wrapFetchWithPayment",
      "Bearer mk_your_key",
      "422",
      "402",
      "$0.004",
    ]) {
      expect(html).toContain(needle);
    }
  });

  it("unknown slug is a 404 page; a malformed slug is 422", async () => {
    const missing = await call("/docs/no-such-skill");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain("No skill called");
    const bad = await call("/docs/%3Cscript%3E");
    expect(bad.status).toBe(422);
    const body = await bad.json<{ detail: { loc: string[]; type: string }[] }>();
    expect(body.detail[0]).toMatchObject({
      loc: ["path", "slug"],
      type: "string_pattern_mismatch",
      input: "<script>",
    });
  });
});
