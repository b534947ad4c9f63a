import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { isCorsPath } from "../../src/http/cors";
import { DOCUMENT_ONLY_HEADERS, NON_DOCUMENT_TYPES } from "../../src/http/security-headers";
import { skills } from "../../src/skills/registry";
import { BROWSER, ORIGIN, paidEnv } from "../helpers";

const B = ORIGIN;
const ADMIN_TOKEN = "headers-admin-0123456789abcdef";

/** A concrete path for a route pattern: the sample for each parameter, or a junk value. */
function concrete(pattern: string, valid: boolean): string {
  const samples: Record<string, string> = valid
    ? { slug: "json-sort", file: "json-sort.json", partner_id: "textkit", service_id: "word_count" }
    : { slug: "NO_such_Thing!", file: "nope.json", partner_id: "nope", service_id: "../x" };
  return pattern
    .replace(/:(\w+)\{[^}]*\}/g, (_, name: string) => samples[name] ?? "x")
    .replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(samples[name] ?? "x"));
}

/** Every kind of answer the app gives: each route with valid and invalid inputs, and the misses. */
function requests(): { label: string; req: Request; e?: Record<string, unknown> }[] {
  const app = createApp();
  const out: { label: string; req: Request; e?: Record<string, unknown> }[] = [];
  const seen = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL" || seen.has(`${r.method} ${r.path}`)) continue;
    seen.add(`${r.method} ${r.path}`);
    for (const valid of [true, false]) {
      const path = concrete(r.path, valid);
      const skill = skills.find((s) => s.endpoint === path);
      const body =
        r.method === "POST"
          ? valid
            ? JSON.stringify(skill?.example_request ?? { skill_id: "json_sort" })
            : '{"text": <script>alert(1)</script>'
          : undefined;
      const query = r.path === "/checkout/success" && valid ? "?session_id=cs_test_nope" : "";
      out.push({
        label: `${r.method} ${path}${query} (${valid ? "valid" : "invalid"})`,
        req: new Request(`${B}${path}${query}`, {
          method: r.method,
          body,
          headers: { "content-type": "application/json" },
        }),
      });
    }
  }
  out.push(
    { label: "404 JSON", req: new Request(`${B}/nope`) },
    { label: "404 HTML", req: new Request(`${B}/nope`, { headers: BROWSER }) },
    { label: "405", req: new Request(`${B}/api/catalog`, { method: "POST" }) },
    { label: "308 alias", req: new Request(`${B}/api/skills/json_sort`, { method: "POST", body: "{}" }) },
    { label: "301 docs alias", req: new Request(`${B}/docs/json_sort`) },
    { label: "preflight", req: new Request(`${B}/api/skills/sha256`, { method: "OPTIONS" }) },
    {
      label: "402 JSON",
      req: new Request(`${B}/api/skills/sha256`, { method: "POST", body: '{"text":"a"}' }),
      e: paidEnv(),
    },
    {
      label: "402 HTML page for browsers",
      req: new Request(`${B}/api/skills/sha256`, { method: "POST", body: '{"text":"a"}', headers: BROWSER }),
      e: paidEnv(),
    },
    {
      label: "admin CSV export",
      req: new Request(`${B}/api/admin/payouts?format=csv`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      }),
      e: { ...env, ADMIN_TOKEN },
    },
    {
      label: "413",
      req: new Request(`${B}/api/skills/sha256`, { method: "POST", body: "x".repeat(6 << 20) }),
    },
  );
  return out;
}

/** What every answer carries, whatever it holds (the OWASP REST cheat sheet's set, and ours). */
function expectEveryAnswersHeaders(h: Headers, path: string, label: string) {
  expect(h.get("x-content-type-options"), label).toBe("nosniff");
  expect(h.get("x-frame-options"), label).toBe("DENY");
  const csp = h.get("content-security-policy") ?? "";
  expect(csp, label).toContain("default-src 'none'");
  expect(csp, label).toContain("frame-ancestors 'none'");
  expect(csp, label).not.toContain("unsafe-inline");
  expect(h.get("strict-transport-security"), label).toMatch(/max-age=\d+/);
  expect(h.get("cross-origin-resource-policy"), label).toBe(
    isCorsPath(path) ? "cross-origin" : "same-origin",
  );
  expect(h.get("x-request-id"), label).toBeTruthy();
}

/**
 * Whether a browser may render this answer as a document, decided here without the code under
 * test: no Content-Type (a browser sniffs), or HTML, XML or SVG of any kind. Everything else the
 * walk meets is JSON, text, CSV or an event stream.
 */
const mayBeDocument = (type: string | null) => !type || /html|xml|svg/i.test(type);

/** A document (HTML, XML, SVG, anything not known to be data) carries the whole set. */
function expectDocumentHeaders(h: Headers, label: string) {
  const csp = h.get("content-security-policy") ?? "";
  for (const directive of [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ])
    expect(csp, `${label}: ${directive}`).toContain(directive);
  expect(h.get("cross-origin-opener-policy"), label).toBe("same-origin");
  expect(h.get("permissions-policy"), label).toContain("camera=()");
  expect(h.get("referrer-policy"), label).toBe("no-referrer");
  for (const name of DOCUMENT_ONLY_HEADERS) expect(h.get(name), `${label}: ${name}`).not.toBeNull();
}

/** Data (JSON, text, an event stream) carries none of the headers that act only on a document. */
function expectDataHeaders(h: Headers, status: number, label: string) {
  for (const name of DOCUMENT_ONLY_HEADERS) expect(h.get(name), `${label}: ${name}`).toBeNull();
  // A redirect's Referrer-Policy governs the request it leads to; on data it would govern nothing.
  expect(h.get("referrer-policy"), label).toBe(status >= 300 && status < 400 ? "no-referrer" : null);
}

describe("security headers on every response type", () => {
  it("each route, valid and invalid, and every error answer: the headers every answer needs, and a document's only on documents", async () => {
    const app = createApp();
    const kinds = new Set<string>();
    let htmlAnswers = 0;
    for (const { label, req, e } of requests()) {
      // Partner routes build the x402 middleware even in free beta: point it at the fixture.
      const res = await app.fetch(req, e ?? { ...env, FACILITATOR_URL: paidEnv().FACILITATOR_URL });
      await res.arrayBuffer();
      const h = res.headers;
      const type = h.get("content-type");
      kinds.add(`${res.status} ${(type ?? "none").split(";")[0]}`);
      expectEveryAnswersHeaders(h, new URL(req.url).pathname, label);
      if (mayBeDocument(type)) expectDocumentHeaders(h, label);
      else expectDataHeaders(h, res.status, label);
      if (type?.toLowerCase().startsWith("text/html")) htmlAnswers++;
    }
    // The walk met every response type the issue names.
    for (const kind of [
      "200 application/json",
      "200 text/plain",
      "200 text/html",
      "402 application/json",
      "402 text/html",
      "404 application/json",
      "404 text/html",
      "405 application/json",
      "422 application/json",
      "401 application/json",
      "413 application/json",
      "308 application/json",
      "204 none",
      "301 none",
      "200 application/did+json",
      "200 text/csv",
      "200 application/xml",
    ]) {
      expect([...kinds], kind).toContain(kind);
    }
    // Pages, /docs, the checkout pages, the browser 402 page, the HTML 404: all held to the whole set.
    expect(htmlAnswers).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it.each([
    ["HTML", "text/html; charset=UTF-8", "<p>x"],
    ["an SVG", "image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'/>"],
    ["XML", "application/xml; charset=utf-8", "<a/>"],
    ["XHTML", "application/xhtml+xml", "<html xmlns='http://www.w3.org/1999/xhtml'/>"],
    ["an unknown type", "application/x-unknown", "?"],
    ["no Content-Type", undefined, "<b>sniffable</b>"],
    // A browser reads a list by its last valid type (Fetch, "extract a MIME type"): HTML here.
    ["a JSON type followed by an HTML one", "application/json; a=b, text/html", "<p>x"],
  ])("%s is answered as a document: the whole set", async (_what, type, body) => {
    const app = createApp();
    // Bytes, so the Response adds no Content-Type of its own (a string body would be text/plain).
    const bytes = new TextEncoder().encode(body);
    app.get("/test-kind", () => new Response(bytes, { headers: type ? { "content-type": type } : {} }));
    const res = await app.fetch(new Request(`${B}/test-kind`), env);
    expect(res.headers.get("content-type")).toBe(type ?? null);
    expectEveryAnswersHeaders(res.headers, "/test-kind", "document");
    expectDocumentHeaders(res.headers, "document");
  });

  it.each([
    ["JSON", "application/json", '{"a":1}', 200],
    ["JSON in any case, with parameters", "Application/JSON ; charset=UTF-8", '{"a":1}', 200],
    ["plain text", "text/plain; charset=utf-8", "ok", 200],
    // The walk meets no event stream (every MCP answer the app sends it is JSON): checked here only.
    ["an event stream", "text/event-stream", "data: {}\n\n", 200],
    ["a JSON error", "application/json", '{"detail":"x"}', 422],
    ["a JSON redirect", "application/json", '{"did_you_mean":"/x"}', 308],
  ])("%s is answered as data: no document-only header", async (_what, type, body, status) => {
    const app = createApp();
    app.get("/api/test-kind", () => new Response(body, { status, headers: { "content-type": type } }));
    const res = await app.fetch(new Request(`${B}/api/test-kind`), env);
    expectEveryAnswersHeaders(res.headers, "/api/test-kind", "data");
    expectDataHeaders(res.headers, status, "data");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("the non-document types are data formats, never one a browser renders as a page", () => {
    for (const type of NON_DOCUMENT_TYPES) expect(type, type).not.toMatch(/html|xml|svg/);
  });

  it("an unexpected failure's 500 carries them too", async () => {
    const app = createApp();
    app.get("/test-boom", () => {
      throw new Error("boom");
    });
    const res = await app.fetch(new Request(`${B}/test-boom`), env);
    expect(res.status).toBe(500);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });

  it("the browser 402 page is HTML under the strict CSP, with nothing inline", async () => {
    const res = await createApp().fetch(
      new Request(`${B}/api/skills/sha256`, { method: "POST", body: '{"text":"a"}', headers: BROWSER }),
      paidEnv(),
    );
    expect(res.status).toBe(402);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("cross-origin-opener-policy")).toBe("same-origin");
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son\w+=/);
  });
});

describe("CORS", () => {
  const preflight = (path: string, method = "POST") =>
    createApp().fetch(
      new Request(`${B}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: "https://agent.example",
          "access-control-request-method": method,
          "access-control-request-headers": "payment-signature, content-type, authorization, x-payment",
        },
      }),
      env,
    );

  it.each([
    ["@x402/fetch and @x402/axios (v2)", "PAYMENT-RESPONSE,X-PAYMENT-RESPONSE", "payment-signature"],
    ["x402-fetch and x402-axios (v1)", "X-PAYMENT-RESPONSE", "x-payment"],
  ])(
    "the paid retry of %s passes the preflight: it adds Access-Control-Expose-Headers as a request header",
    async (_client, _value, payment) => {
      const res = await createApp().fetch(
        new Request(`${B}/api/skills/sha256`, {
          method: "OPTIONS",
          headers: {
            origin: "https://agent.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": `access-control-expose-headers,content-type,${payment}`,
          },
        }),
        env,
      );
      expect(res.status).toBe(204);
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(",");
      for (const h of ["access-control-expose-headers", "content-type", payment])
        expect(allowed).toContain(h);
    },
  );

  it.each([
    "/api/skills/token-count",
    "/api/catalog",
    "/api/cardpay/checkout",
    "/api/partners/textkit/try/word_count",
  ])("a browser on another origin may call %s with payment headers", async (path) => {
    const res = await preflight(path);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toBe("GET,POST,OPTIONS");
    const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(",");
    for (const h of ["payment-signature", "x-payment", "authorization", "content-type", "idempotency-key"])
      expect(allowed).toContain(h);
  });

  it.each(["/openapi.json", "/llms.txt", "/AGENTS.md", "/.well-known/x402", "/api/catalog", "/health"])(
    "%s can be read from another origin",
    async (path) => {
      const res = await createApp().fetch(
        new Request(`${B}${path}`, { headers: { origin: "https://agent.example" } }),
        env,
      );
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    },
  );

  it("the payment and credit headers of a skill answer are exposed to the calling page", async () => {
    const res = await createApp().fetch(
      new Request(`${B}/api/skills/sha256`, {
        method: "POST",
        body: '{"text":"a"}',
        headers: { origin: "https://agent.example" },
      }),
      paidEnv(),
    );
    expect(res.status).toBe(402);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",");
    for (const h of [
      "payment-required",
      "payment-response",
      "x-payment-response",
      "x-credits-remaining",
      "x-payment-receipt",
      "x-idempotent-replay",
    ])
      expect(exposed).toContain(h);
  });

  it("a page on another origin can read where /api/stats's figures came from (X-Stats-Cache)", async () => {
    const res = await createApp().fetch(
      new Request(`${B}/api/stats`, { headers: { origin: "https://dashboard.example" } }),
      env,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("x-stats-cache")).toMatch(/^(hit|miss)$/);
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",");
    expect(exposed).toContain("x-stats-cache");
  });

  it.each([
    ["/api/admin/payments", "GET"],
    ["/api/admin/payouts", "GET"],
    ["/api/admin/payouts/textkit/settle", "POST"],
    ["/admin", "GET"],
    ["/applet", "GET"],
    ["/checkout/success", "GET"],
  ])("never on %s", async (path, method) => {
    const pre = await preflight(path, method);
    expect(pre.status).not.toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const res = await createApp().fetch(
      new Request(`${B}${path}`, { method, headers: { origin: "https://agent.example" } }),
      env,
    );
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("an agent's first mistakes", () => {
  it.each([
    "/api/skills/token_count",
    "/api/skills/Token-Count",
    "/api/skills/token-count/",
    "/API/SKILLS/TOKEN_COUNT/",
  ])("POST %s is a 308 to the canonical slug URL, with did_you_mean", async (path) => {
    const res = await createApp().fetch(
      new Request(`${B}${path}`, { method: "POST", body: '{"text":"a"}' }),
      env,
    );
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe(`${B}/api/skills/token-count`);
    const body = await res.json<{ detail: string; did_you_mean: string }>();
    expect(body.did_you_mean).toBe(`${B}/api/skills/token-count`);
    expect(body.detail).toContain("/api/skills/token-count");
  });

  it("the 308 stays on the host the request came to (a workers.dev or preview host too: a cross-origin redirect would drop a card key's Authorization)", async () => {
    const res = await createApp().fetch(
      new Request("https://other.workers.dev/api/skills/token_count?x=1", { method: "POST", body: "{}" }),
      env,
    );
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("https://other.workers.dev/api/skills/token-count?x=1");
  });

  it("fetch follows the alias to the skill with the body (FREE_BETA here, so it runs)", async () => {
    // The Worker's own fetch follows 308 with method and body, as agents' HTTP clients do.
    const app = createApp();
    const first = await app.fetch(
      new Request(`${B}/api/skills/token_count`, { method: "POST", body: '{"text":"hello world"}' }),
      env,
    );
    const again = await app.fetch(
      new Request(first.headers.get("location") ?? "", { method: "POST", body: '{"text":"hello world"}' }),
      env,
    );
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ skill: "token_count", ok: true });
  });

  it("an unknown skill stays a plain 404 with no redirect", async () => {
    const res = await createApp().fetch(new Request(`${B}/api/skills/no_such`, { method: "POST" }), env);
    expect(res.status).toBe(404);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.json()).toEqual({ detail: "Not Found" });
  });

  it.each([
    ["/docs/token_count", "/docs/token-count"],
    ["/docs/Token-Count", "/docs/token-count"],
    ["/docs/token-count/", "/docs/token-count"],
  ])("%s redirects to %s", async (path, to) => {
    const res = await createApp().fetch(new Request(`${B}${path}`, { headers: BROWSER }), env);
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get("location") ?? "", B).pathname).toBe(to);
  });

  it("an unknown path is the HTML 404 page for a browser and JSON for everyone else", async () => {
    const page = await createApp().fetch(new Request(`${B}/no/such/page`, { headers: BROWSER }), env);
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain("<h1>");
    expect(html).toContain("/no/such/page");
    expect(html).toContain('href="/docs"');
    const api = await createApp().fetch(new Request(`${B}/no/such/page`), env);
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ detail: "Not Found" });
    // One URL, two bodies by Accept: a cache must key on Accept, and none keeps a 404.
    for (const res of [page, api]) {
      expect(res.headers.get("vary")).toBe("Accept");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
  });

  it.each([
    ["/docs/", "/docs"],
    ["/docs//", "/docs"],
    ["/api/catalog/?x=1", "/api/catalog?x=1"],
    ["/openapi.json/", "/openapi.json"],
  ])("GET %s redirects to %s (301, the path without its trailing slash)", async (path, to) => {
    for (const method of ["GET", "HEAD"]) {
      const res = await createApp().fetch(new Request(`${B}${path}`, { method, headers: BROWSER }), env);
      expect(res.status, method).toBe(301);
      expect(res.headers.get("location")).toBe(`${B}${to}`);
      // Not for ever (a browser keeps a 301 without freshness information): it can be taken back.
      expect(res.headers.get("cache-control"), method).toBe("public, max-age=3600");
    }
  });

  it("a trailing slash redirects only a method the path without it takes", async () => {
    const path = "/api/partners/pricefeed/try/price/";
    // A try route refuses HEAD (405): a 301 there would only lead to it.
    const head = await createApp().fetch(new Request(`${B}${path}`, { method: "HEAD" }), env);
    expect(head.status).toBe(404);
    expect(head.headers.get("location")).toBeNull();
    const get = await createApp().fetch(new Request(`${B}${path}`), env);
    expect(get.status).toBe(301);
    expect(get.headers.get("location")).toBe(`${B}${path.slice(0, -1)}`);
  });

  it("a trailing slash redirects only to a GET route on the same origin", async () => {
    for (const path of ["/no/such/page/", "//evil.example/", "/api/cardpay/webhook/"]) {
      const res = await createApp().fetch(new Request(`${B}${path}`), env);
      expect(res.status, path).toBe(404);
      expect(res.headers.get("location"), path).toBeNull();
    }
    // A POST keeps its 404: a 301 would turn it into a GET.
    const post = await createApp().fetch(new Request(`${B}/docs/`, { method: "POST" }), env);
    expect(post.status).toBe(404);
  });

  it("/AGENTS.md is text/plain; charset=utf-8 (interface 2.7.1 §4.1)", async () => {
    const res = await createApp().fetch(new Request(`${B}/AGENTS.md`), env);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
  });
});
