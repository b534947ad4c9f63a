import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { noneMatch, serveDocument } from "../../src/http/conditional-get";
import { skills } from "../../src/skills/registry";
import { call, ORIGIN } from "../helpers";

const app = createApp();
const get = (path: string, headers: Record<string, string> = {}, vars: object = {}, method = "GET") =>
  app.fetch(new Request(`${ORIGIN}${path}`, { method, headers }), { ...env, ...vars });

/** Every document the Worker builds for discovery, with a validator. */
const DOCUMENTS = [
  "/openapi.json",
  "/api/catalog",
  "/api/partners",
  "/api/partners/pricefeed",
  "/.well-known/agents.json",
  "/agents.json",
  "/AGENTS.md",
  "/llms.txt",
  "/contracts/humanless.json",
  "/.well-known/x402",
  "/.well-known/x402list.txt",
  "/.well-known/did.json",
  "/.well-known/jwks.json",
  "/robots.txt",
  "/sitemap.xml",
  "/services/sha256.json",
];

describe("conditional GET of the discovery documents", () => {
  it.each(DOCUMENTS)("%s: strong ETag, 304 on If-None-Match with the 200's validators", async (path) => {
    const first = await get(path);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag") ?? "";
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(first.headers.get("cache-control")).toBe("public, max-age=300");
    const body = await first.text();

    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await get(path, { "if-none-match": inm });
      expect(again.status, inm).toBe(304);
      expect(again.headers.get("etag")).toBe(etag);
      expect(again.headers.get("cache-control")).toBe("public, max-age=300");
      expect(await again.text()).toBe("");
    }
    const head = await get(path, { "if-none-match": etag }, {}, "HEAD");
    expect(head.status).toBe(304);
    expect(head.headers.get("etag")).toBe(etag);

    // Another tag: the whole document, byte for byte the same as the first answer.
    const changed = await get(path, { "if-none-match": '"0000"' });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).toBe(etag);
    expect(await changed.text()).toBe(body);
  });

  it("the ETag follows the document: another BASE_URL, or the partners left out, is another tag", async () => {
    const tag = async (path: string, vars: object) => (await get(path, {}, vars)).headers.get("etag");
    for (const path of ["/openapi.json", "/api/catalog", "/llms.txt", "/.well-known/did.json"]) {
      const here = await tag(path, { BASE_URL: "https://a.example" });
      expect(await tag(path, { BASE_URL: "https://a.example" })).toBe(here);
      expect(await tag(path, { BASE_URL: "https://b.example" }), path).not.toBe(here);
    }
    const withPartners = await get("/openapi.json");
    const without = await get(
      "/openapi.json",
      { "if-none-match": withPartners.headers.get("etag") ?? "" },
      {
        PARTNERS_ENABLED: "false",
      },
    );
    // The old tag names the document with partners: the client gets the new one whole.
    expect(without.status).toBe(200);
    expect(without.headers.get("etag")).not.toBe(withPartners.headers.get("etag"));
    expect(await without.text()).not.toContain("/api/partners/");
  });

  it("an error is never a 304 and carries no ETag", async () => {
    const cases: [string, object, number][] = [
      ["/.well-known/did.json", { RECEIPT_SIGNING_KEY: "" }, 503],
      ["/.well-known/jwks.json", { RECEIPT_SIGNING_KEY: "" }, 503],
      ["/services/no-such-skill.json", {}, 404],
      ["/api/partners", { PARTNERS_ENABLED: "false" }, 503],
      ["/api/partners/nobody", {}, 404],
    ];
    for (const [path, vars, status] of cases) {
      const res = await get(path, { "if-none-match": "*" }, vars);
      expect(res.status, path).toBe(status);
      expect(res.headers.get("etag"), path).toBeNull();
    }
  });

  it("renders and hashes a document once per configuration, not per request", async () => {
    let renders = 0;
    const scope = {};
    const probe = new Hono().get("/doc", (c) =>
      serveDocument(c, { scope, name: "/doc", contentType: "text/plain" }, () => `document ${++renders}`),
    );
    const tags = new Set<string | null>();
    for (let i = 0; i < 5; i++) tags.add((await probe.request("/doc")).headers.get("etag"));
    expect(renders).toBe(1);
    expect(tags.size).toBe(1);
    // A changed input (the published figures) renders it again, with a new tag.
    const figures = {};
    const withInputs = new Hono().get("/doc", (c) =>
      serveDocument(
        c,
        { scope, name: "/doc", contentType: "text/plain", inputs: [figures] },
        () => `v${++renders}`,
      ),
    );
    const res = await withInputs.request("/doc");
    expect(renders).toBe(2);
    expect(await res.text()).toBe("v2");
    expect(tags.has(res.headers.get("etag"))).toBe(false);
  });

  it("the real routes answer from the cache: a render's input changed later does not show", async () => {
    // The real default export, its own bindings (one env object across requests), one origin.
    const paths = ["/api/catalog", "/llms.txt"];
    const first = new Map<string, string>();
    for (const path of paths) first.set(path, await (await call(path)).text());
    const skill = skills[0] as { description: string };
    const original = skill.description;
    const marker = "Changed after the first render.";
    expect(first.get("/api/catalog")).not.toContain(marker);
    try {
      skill.description = `${marker} ${original}`;
      for (const path of paths) {
        const again = await call(path);
        expect(again.status, path).toBe(200);
        // A route that passed a fresh scope per request would render the marker here.
        expect(await again.text(), path).toBe(first.get(path));
      }
      // The change is seen by a render with another scope (another origin): so the sameness above
      // is the cache's, not a copy of the registry the Worker does not share with this test.
      for (const path of paths) {
        const other = await exports.default.fetch(new Request(`https://other-origin.test${path}`));
        expect(await other.text(), path).toContain(marker);
      }
    } finally {
      skill.description = original;
    }
  });

  it("If-None-Match: weak comparison over a list; quoted commas are part of a tag", () => {
    expect(noneMatch(undefined, '"a"')).toBe(false);
    expect(noneMatch('"a"', '"a"')).toBe(true);
    expect(noneMatch('W/"a"', '"a"')).toBe(true);
    expect(noneMatch(' "b" ,W/"a"', '"a"')).toBe(true);
    expect(noneMatch('"a,b"', '"a"')).toBe(false);
    expect(noneMatch('"b"', '"a"')).toBe(false);
    expect(noneMatch(" * ", '"a"')).toBe(true);
  });
});
