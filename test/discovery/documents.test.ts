import { env } from "cloudflare:test";
import { type Schema, Validator } from "@cfworker/json-schema";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { WEB_ONLY_ROUTES } from "../../src/discovery/openapi";
import { MAX_BODY_BYTES } from "../../src/http/limits";
import { hashKey } from "../../src/payments/credits";
import { skillById, skills } from "../../src/skills/registry";
import { responseSchema, validationExample } from "../../src/skills/schema-docs";
import { FIXTURE } from "../fixtures/upstream-requests";
import { call, postJson } from "../helpers";

const B = "https://skills.test";
const text = async (path: string) => {
  const res = await call(path);
  expect(res.status, path).toBe(200);
  return { res, body: await res.text() };
};
const dollars = (p: number) => `$${p}`;
/** Hono's JSX text escaping, to find generated text inside a page. */
const html = (s: string) =>
  s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");

interface ListedService {
  partner_id: string;
  listing_status: string;
  price_usd: number;
  cost_multiplier: number;
}
/** The app with some vars overridden, as a deployment with those vars would answer. */
async function withVars(vars: Record<string, string>) {
  const { env } = await import("cloudflare:test");
  const app = createApp();
  return (path: string, init?: RequestInit) =>
    app.fetch(new Request(`${B}${path}`, init), { ...env, ...vars });
}
/** Price bounds a crawler should be quoted, computed from the partner listing the app serves. */
function bounds(services: ListedService[], which: (s: ListedService) => boolean) {
  const prices = services.filter((s) => s.listing_status === "paid" && s.price_usd > 0 && which(s));
  const usd = prices.map((s) => s.price_usd);
  return { min: String(Math.min(...usd)), max: String(Math.max(...usd)) };
}

describe("discovery documents", () => {
  it("robots.txt points at the sitemap", async () => {
    const { res, body } = await text("/robots.txt");
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(body).toContain(`Sitemap: ${B}/sitemap.xml`);
  });

  it("checkout results and the dashboard are kept out of search indexes: robots.txt and X-Robots-Tag", async () => {
    const { body } = await text("/robots.txt");
    expect(body.split("\n")).toContain("Disallow: /admin");
    // Not /checkout/: a crawler reads the pages' noindex only where robots.txt lets it fetch them.
    expect(body).not.toMatch(/Disallow: \/checkout/);
    // A success URL opens the buyer's first answer and the key's Reveal; a crawler that reads it anyway is told not to index it.
    for (const path of [
      "/checkout/success?session_id=cs_test_unknown",
      "/checkout/cancel?skill_id=sha256",
      "/admin",
    ]) {
      const res = await call(path, { headers: { accept: "text/html" } });
      expect(res.headers.get("x-robots-tag"), path).toBe("noindex, nofollow");
      await res.arrayBuffer();
    }
    // Refusals before the page's own work carry it too: the dashboard's body cap.
    const admin = await withVars({ ADMIN_TOKEN: "documents-test-token-0123456789abcdefghij" });
    const big = await admin("/admin/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${"a".repeat(9000)}`,
    });
    expect(big.status).toBe(413);
    expect(big.headers.get("x-robots-tag")).toBe("noindex, nofollow");
    expect(big.headers.get("cache-control")).toBe("no-store");
  });

  it("sitemap.xml is valid sitemap XML listing every page and docs page", async () => {
    const { res, body } = await text("/sitemap.xml");
    expect(res.headers.get("content-type")).toContain("application/xml");
    expect(XMLValidator.validate(body)).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(body);
    expect(doc.urlset["@_xmlns"]).toBe("http://www.sitemaps.org/schemas/sitemap/0.9");
    const locs = (doc.urlset.url as { loc: string }[]).map((u) => u.loc);
    expect(locs).toEqual([
      `${B}/`,
      `${B}/docs`,
      `${B}/docs/mcp`,
      ...skills.map((s) => `${B}/docs/${s.slug}`),
      `${B}/applet`,
    ]);
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
    // Hosted partners are llmstxt.org link items too.
    const partners = await (await call("/api/partners")).json<{ partners: { id: string; name: string }[] }>();
    for (const p of partners.partners) expect(body).toContain(`- [${p.name}](${B}/api/partners/${p.id}): `);
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
    // A copy-paste checkout, then a call and a balance check with the key.
    const blocks = [...body.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
    const checkout = blocks.find((b) => b.includes("/api/cardpay/checkout"));
    expect(checkout).toMatch(
      /^curl -s -X POST \S+\/api\/cardpay\/checkout -H 'content-type: application\/json' -d '\{"skill_id":"\w+"\}'$/m,
    );
    expect(checkout).toMatch(/^curl -s -X POST \S+\/api\/skills\/\S+ -H "authorization: Bearer \$MK_KEY"/m);
    expect(checkout).toMatch(/^curl -s \S+\/api\/credits -H "authorization: Bearer \$MK_KEY"$/m);
  });

  it("OpenAPI's PaymentRequired describes the 402 every skill really answers, body and header", async () => {
    const openapi = JSON.parse((await text("/openapi.json")).body);
    const validator = new Validator(openapi.components.schemas.PaymentRequired as Schema, "2020-12");
    const paid = await withVars({ FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` });
    for (const skill of skills) {
      const res = await paid(skill.endpoint, { method: "POST", body: "{}" });
      expect(res.status, skill.id).toBe(402);
      const body = await res.json<{ x402Version: number; accepts: { network: string }[] }>();
      expect(validator.validate(body).errors, skill.id).toEqual([]);
      expect(body.x402Version).toBe(1);
      // The v2 offer of the header fits the same schema.
      const header = JSON.parse(atob(res.headers.get("payment-required") as string));
      expect(validator.validate({ ...header, error: "x", reason: "x" }).errors, skill.id).toEqual([]);
      expect(header.accepts[0].network).toBe(env.X402_NETWORK);
    }
  });

  it("AGENTS.md and the humanless contract list the errors the service really answers", async () => {
    const agents = (await text("/AGENTS.md")).body;
    const contract = JSON.parse((await text("/contracts/humanless.json")).body);
    // Card-credit keys are checked only when calls are paid (unit tests run in free beta).
    const paid = await withVars({ FREE_BETA: "false" });
    const r401 = await paid("/api/skills/slugify", {
      method: "POST",
      body: '{"text":"a"}',
      headers: {
        "content-type": "application/json",
        authorization: "Bearer mk_unknown_key_0000000000000000",
      },
    });
    expect(r401.status).toBe(401);
    expect(r401.headers.get("www-authenticate")).toBe("Bearer");
    expect(agents).toContain(JSON.stringify(await r401.json()));
    // A key bought for slugify (AGENTS.md's example) spent on the skill its 403 line names.
    const key = "mk_discovery_test_slugify_key_000";
    const { env } = await import("cloudflare:test");
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?, ?, 'slugify', 5, 5, 0)",
    )
      .bind("discovery-test-key", await hashKey(key))
      .run();
    const other = /it cannot pay for (\w+)\./.exec(agents)?.[1] ?? "";
    const r403 = await paid(skillById(other)?.endpoint ?? "/nope", {
      method: "POST",
      body: JSON.stringify(skillById(other)?.example_request ?? {}),
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    });
    expect(r403.status).toBe(403);
    expect(agents).toContain(JSON.stringify(await r403.json()));
    const r405 = await call("/api/skills/slugify");
    expect(r405.status).toBe(405);
    expect(r405.headers.get("allow")).toContain("POST");
    expect(agents).toContain(JSON.stringify(await r405.json()));
    const r413 = await postJson("/api/skills/slugify", `{"text":"${"x".repeat(MAX_BODY_BYTES)}"}`);
    expect(r413.status).toBe(413);
    const big = await r413.json();
    expect(agents).toContain(JSON.stringify(big));
    expect(contract.error_formats.body_too_large.body).toBe(JSON.stringify(big));
    expect(contract.limits.body_bytes).toBe(MAX_BODY_BYTES);
    for (const needle of ["`403`", "`502`/`504`", '"charged":false', "`Allow`"])
      expect(agents).toContain(needle);
    expect(contract.error_formats.card_credit_key.status).toBe("401, 403");
    expect(contract.error_formats.upstream.body).toContain('"charged":false');
    expect(contract.error_formats.method_not_allowed.status).toBe(405);
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
    // What is kept of a call's input: a keyed call's answer, for its retries (idempotent-results.ts).
    expect(doc.data_handling).toMatch(
      /Idempotency-Key has its answer \(which may repeat its input\) kept for 24 hours/,
    );
    expect(doc.data_handling).not.toMatch(/keep nothing/);
    // The network skills' shared cache shows a hit to anyone who asks the same input (skills/lib/cache.ts).
    expect(doc.data_handling).toMatch(/cache shared by every caller/);
    expect(doc.data_handling).toMatch(
      /osint_graph calls are logged \(request id, depth, graph size\), not their seed/,
    );
    expect(doc.provider.support_contact).toContain("@");
    // The tests' bindings switch rate limits off (RATE_LIMITS=off), and the contract says so.
    expect(doc.limits.rate_limits).toMatch(/^None enforced by the marketplace \(RATE_LIMITS is off\)/);
  });

  it("with rate limits on, the contract states what the deployment enforces (test/payments/quotas.test.ts)", async () => {
    const res = await createApp().fetch(new Request(`${B}/contracts/humanless.json`), {
      ...env,
      RATE_LIMITS: "on",
      FREE_BETA: "false",
    });
    const limits = (await res.json<{ limits: { rate_limits: string } }>()).limits.rate_limits;
    expect(limits).toContain("600 requests per client IP");
    expect(limits).toContain(`30 for ${env.RATE_LIMIT_HEAVY.split(",").join(", ")}`);
    expect(limits).toContain("429 with Retry-After");
    // One routed /48 holds 65,536 /64s: the terms say what its /56 and /48 get (quotas.test.ts).
    expect(limits).toContain(
      "an IPv6 caller's /56 and /48 are also limited, to 4 and 16 times each per-IP limit",
    );
    expect(limits).not.toContain("free beta");
    // In free beta the heavy skills are free routes limited per IP (quota's freeInBeta); the
    // refinery and partner tries stay paid, so they are not named.
    const beta = await createApp().fetch(new Request(`${B}/contracts/humanless.json`), {
      ...env,
      RATE_LIMITS: "on",
      FREE_BETA: "true",
    });
    const betaLimits = (await beta.json<{ limits: { rate_limits: string } }>()).limits.rate_limits;
    const freeSkills = env.RATE_LIMIT_HEAVY.split(",").filter((r) => skillById(r));
    expect(freeSkills.length).toBeGreaterThan(0);
    expect(betaLimits).toContain(
      `20 per client IP and route on free routes that cost an upstream request or a Stripe session (free beta: calls of ${freeSkills.join(", ")} too)`,
    );
    expect(betaLimits).not.toMatch(/free beta: calls of [^)]*(refinery|partner)/);
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
      // The 200 schema is generated from the skill's zod output schema, example alongside.
      const ok = op.responses["200"].content["application/json"];
      expect(ok.schema).toEqual(responseSchema(s));
      expect(ok.schema.properties.skill.const).toBe(s.id);
      expect(ok.example).toEqual(s.example_response);
    }
  });

  it("declares every tag its operations use", async () => {
    const doc = await load();
    const declared = (doc.tags as { name: string; description: string }[]).map((t) => t.name);
    expect(new Set(declared).size).toBe(declared.length);
    const used = Object.values(doc.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap(
      (ops) => Object.values(ops).flatMap((op) => op.tags ?? []),
    );
    expect(used.length).toBeGreaterThan(0);
    expect([...new Set(used)].filter((t) => !declared.includes(t))).toEqual([]);
    for (const t of doc.tags) expect(t.description).toBeTruthy();
  });

  it("the try operation declares every upstream path value a listed service takes, with the pattern the route enforces", async () => {
    const get = await withVars({});
    const { services } = await (await get("/api/partners")).json<{
      services: (ListedService & { path: string; service_id: string })[];
    }>();
    const wanted = new Set(services.flatMap((s) => [...s.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])));
    expect(wanted.size).toBeGreaterThan(0);
    const doc = JSON.parse(await (await get("/openapi.json")).text());
    for (const method of ["get", "post"]) {
      const op = doc.paths["/api/partners/{partner_id}/try/{service_id}"][method];
      const query = (op.parameters as { name: string; in: string; schema: { pattern: string } }[]).filter(
        (p) => p.in === "query",
      );
      expect(new Set(query.map((p) => p.name))).toEqual(wanted);
      for (const p of query) {
        const pattern = new RegExp(p.schema.pattern);
        expect(pattern.test("btc")).toBe(true);
        // What the document refuses, the route refuses with a 422 naming the same parameter.
        expect(pattern.test("BTC/../admin")).toBe(false);
        const user = services.find((s) => s.path.includes(`{${p.name}}`));
        const res = await get(
          `/api/partners/${user?.partner_id}/try/${user?.service_id}?${p.name}=${encodeURIComponent("BTC/../admin")}`,
        );
        expect(res.status).toBe(422);
        expect((await res.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual(["query", p.name]);
      }
      expect(Boolean(op.requestBody)).toBe(method === "post");
    }
  });

  it.each([
    ["3", {}],
    ["4", { PARTNER_PRICE_MULTIPLIER: "4" }],
  ])(
    "partner prices and the %sx multiplier come from the partner data and configuration",
    async (m, vars) => {
      const get = await withVars(vars);
      const { services } = await (await get("/api/partners")).json<{ services: ListedService[] }>();
      for (const s of services) expect(s.cost_multiplier).toBe(Number(m));
      const tryRange = bounds(services, () => true);
      const refinery = bounds(services, (s) => s.partner_id === "refinery");
      const doc = JSON.parse(await (await get("/openapi.json")).text());
      for (const method of ["get", "post"]) {
        expect(doc.paths["/api/partners/{partner_id}/try/{service_id}"][method]["x-payment-info"]).toEqual({
          price: { mode: "dynamic", currency: "USD", ...tryRange },
          protocols: [{ x402: {} }],
        });
      }
      const recipes = doc.paths["/api/skills/refinery-recipes"].post;
      expect(recipes["x-payment-info"].price).toEqual({ mode: "dynamic", currency: "USD", ...refinery });
      expect(recipes["x-x402"]).toEqual({
        price: `$${refinery.max}`,
        network: "eip155:8453",
        specSource: "services/refinery-recipes.json",
      });
      expect(doc.paths["/api/partners"].get.summary).toContain(`${m}x the partner's price`);
      const spec = JSON.parse(await (await get("/services/refinery-recipes.json")).text());
      expect(spec.price).toEqual({ mode: "dynamic", currency: "USD", ...refinery });
      const atomic = (usd: string) => String(Math.round(Number(usd) * 1e6));
      expect(Object.values(spec.x402.amount_by_recipe).sort()).toContain(atomic(refinery.min));
      expect(spec.x402.amount).toBe(atomic(refinery.max));
      const llms = await (await get("/llms.txt")).text();
      expect(llms).toContain(`at ${m}x the partner's price ($${tryRange.min} to $${tryRange.max} per call)`);
      expect(llms).toContain(`$${refinery.min} to $${refinery.max} per call depending on the recipe`);
      const home = await (await get("/")).text();
      expect(home).toContain(
        html(`${m}× the partner's own price ($${tryRange.min} to $${tryRange.max} per call)`),
      );
    },
  );

  // A refused partner configuration leaves the partners out of every document (never a 503):
  // test/discovery/partners-left-out.test.ts.
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

  it("every operation has a unique operationId and its 4xx answers; info has a license", async () => {
    const doc = await load();
    expect((doc.info as { license?: { name?: string } }).license?.name).toBeTruthy();
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(
      doc.paths as Record<
        string,
        Record<string, { operationId?: string; responses: Record<string, unknown> }>
      >,
    )) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][a-z0-9_]*$/);
        ids.push(op.operationId as string);
        expect(
          Object.keys(op.responses).some((code) => code.startsWith("4")),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    // Analytic skills document their uncharged upstream failures.
    for (const s of skills.filter((k) => k.kind === "analytic")) {
      const responses = (doc.paths as Record<string, { post: { responses: Record<string, unknown> } }>)[
        s.endpoint
      ]?.post.responses;
      expect(Object.keys(responses ?? {}), s.id).toEqual(expect.arrayContaining(["502", "504"]));
    }
  });

  it("stays within the 40 operations agent directories accept before warning about token budgets", async () => {
    const doc = await load();
    const operations = Object.values(doc.paths as Record<string, object>).flatMap((ops) => Object.keys(ops));
    expect(operations.length).toBeGreaterThanOrEqual(skills.length);
    expect(operations.length).toBeLessThanOrEqual(40);
  });

  it("every non-skill route refuses what its documented request schema refuses (one declaration feeds both)", async () => {
    interface Bounded {
      maximum?: number;
      maxLength?: number;
      enum?: unknown[];
      pattern?: string;
    }
    /** A value the schema rejects, derived from the document (never hard-coded per route). */
    const outside = (s: Bounded): unknown =>
      s.maximum !== undefined
        ? s.maximum + 1
        : s.maxLength !== undefined
          ? "x".repeat(s.maxLength + 1)
          : s.enum
            ? `not-${String(s.enum[0])}`
            : s.pattern
              ? "\u0000"
              : undefined;
    interface Op {
      responses: Record<string, unknown>;
      parameters?: { name: string; in: string; schema: Bounded }[];
      requestBody?: {
        content: Record<string, { schema: { properties?: Record<string, Bounded> }; example?: object }>;
      };
    }
    const doc = await load();
    const get = await withVars({ ADMIN_TOKEN: "doc-t0ken-0123456789abcdefghij" });
    const headers = {
      authorization: "Bearer doc-t0ken-0123456789abcdefghij",
      "content-type": "application/json",
    };
    const refused: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Op>>)) {
      if (skills.some((s) => s.endpoint === path)) continue; // registry skills: validation.test.ts
      const url = path.replace(/\{\w+\}/g, "x");
      for (const [method, op] of Object.entries(ops)) {
        // Paid routes validate after the payment is verified: partners.test.ts pays for those 422s.
        if (op.responses["402"]) continue;
        const cases: { init: RequestInit; query?: string; loc: string[] }[] = [];
        for (const p of op.parameters ?? []) {
          const bad = outside(p.schema);
          if (p.in === "query" && bad !== undefined)
            cases.push({
              init: {},
              query: `${p.name}=${encodeURIComponent(String(bad))}`,
              loc: ["query", p.name],
            });
        }
        const media = op.requestBody?.content["application/json"];
        for (const [name, s] of Object.entries(media?.schema.properties ?? {})) {
          const bad = outside(s);
          if (bad !== undefined)
            cases.push({
              init: { body: JSON.stringify({ ...media?.example, [name]: bad }) },
              loc: ["body", name],
            });
        }
        for (const { init, query, loc } of cases) {
          const res = await get(`${url}${query ? `?${query}` : ""}`, {
            method: method.toUpperCase(),
            headers,
            ...init,
          });
          const what = `${method} ${path} ${loc.join(".")}`;
          expect(res.status, what).toBe(422);
          expect((await res.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc, what).toEqual(loc);
          refused.push(what);
        }
      }
    }
    // Admin queries and bodies and the checkout body are all covered.
    expect(refused).toEqual(
      expect.arrayContaining([
        "get /api/admin/payments query.limit",
        "get /api/admin/payouts query.format",
        "post /api/admin/payouts/{partner_id}/settle body.tx_hash",
        "post /api/cardpay/checkout body.skill_id",
        "post /api/cardpay/checkout body.quantity",
      ]),
    );
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

  it("each docs page's 422 example is what the skill answers to the body it names", async () => {
    for (const s of skills) {
      const example = validationExample(s);
      const res = await postJson(s.endpoint, example.body);
      expect(res.status, s.id).toBe(422);
      expect(await res.json(), s.id).toEqual({ detail: example.detail });
      const page = await (await call(`/docs/${s.slug}`)).text();
      expect(page).toContain(html(JSON.stringify({ detail: example.detail }, null, 2)));
      expect(page).toContain(html(JSON.stringify(example.body)));
    }
    // Bodies with nothing required do not claim a field is required.
    for (const id of ["uuid_mint", "ai_detector"]) {
      const skill = skillById(id);
      if (!skill) throw new Error(id);
      expect(validationExample(skill).detail.map((d) => d.type)).not.toContain("missing");
    }
  });

  it("unknown slug is a 404 page with the same CSP; a malformed slug is 422", async () => {
    const missing = await call("/docs/no-such-skill");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toContain("text/html");
    expect(missing.headers.get("content-security-policy")).toBe(
      (await call("/docs")).headers.get("content-security-policy"),
    );
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
