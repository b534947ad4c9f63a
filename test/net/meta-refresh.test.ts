import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { netConfig } from "../../src/net/config";
import { fetchPublic, metaRefresh, UrlRefused } from "../../src/net/fetcher";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "../skills/timeouts";

/**
 * A "Redirecting…" page that sends the browser on with `<meta http-equiv="refresh" content="0;
 * url=…">` (static hosts' redirects, moved pages) is followed like an HTTP redirect: one more hop,
 * guarded and counted like the others. Shells are served by a stub of fetch on the allow-listed
 * fixture host; their targets are the fixture's real pages.
 */

const cfg = netConfig(env);
const GOOD = `${FIXTURE}/pages/good.html`;

const REAL_FETCH = globalThis.fetch;
const shells = new Map<string, { html: (url: URL) => string; type: string }>();

/** Serves `html(url)` at a fresh fixture path (any query); returns its URL. */
function serveShells(html: (url: URL) => string, type = "text/html; charset=utf-8") {
  const path = `${FIXTURE}/pages/shell-${crypto.randomUUID()}`;
  shells.set(path, { html, type });
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new URL(new Request(input, init).url);
    const served = shells.get(`${url.origin}${url.pathname}`);
    if (!served) return REAL_FETCH(input, init);
    return new Response(served.html(url), { headers: { "content-type": served.type } });
  });
  return path;
}

const shell = (head: string, body = "<h1>Redirecting…</h1>") =>
  `<!doctype html><html><head><meta charset="utf-8"><title>Redirecting…</title>${head}</head><body>${body}</body></html>`;

afterEach(() => {
  vi.restoreAllMocks();
  shells.clear();
});

describe("fetchPublic follows a head's meta refresh", () => {
  it.each([
    ['content="0; url=/pages/good.html"', GOOD],
    [`content="0;URL='${GOOD}'"`, GOOD],
    ['content="3, url = /pages/good.html?a=1&amp;b=2"', `${GOOD}?a=1&b=2`],
    ['CONTENT="5;url=&quot;/pages/good.html&quot;"', GOOD],
    ['content="0.5; /pages/good.html"', GOOD],
  ])(
    "%s goes on to the page",
    async (attrs, final) => {
      const url = serveShells(() => shell(`<meta http-equiv="Refresh" ${attrs}>`));
      const doc = await fetchPublic(url, cfg, "text/html");
      expect(doc.url).toBe(final);
      expect(doc.redirects).toBe(1);
      expect(doc.text).toMatch(/solar/i);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a shell with no <head> tag (the common static-host form) is followed too",
    async () => {
      const url = serveShells(
        () =>
          `<!DOCTYPE html><html lang="en-US"><meta charset="utf-8"><title>Redirecting…</title><link rel="canonical" href="${GOOD}"><script>location="${GOOD}"</script><meta http-equiv="refresh" content="0; url=${GOOD}"><meta name="robots" content="noindex"><h1>Redirecting…</h1><a href="${GOOD}">Click here if you are not redirected.</a></html>`,
      );
      expect((await fetchPublic(url, cfg, "text/html")).url).toBe(GOOD);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([
    ["a delay over 5 s", shell('<meta http-equiv="refresh" content="6; url=/pages/good.html">')],
    ["a refresh of the page itself", shell('<meta http-equiv="refresh" content="0">')],
    [
      "a meta written by a script",
      shell(
        `<script>document.write('<meta http-equiv="refresh" content="0; url=/pages/good.html">')</script>`,
      ),
    ],
    ["a meta in a comment", shell('<!-- <meta http-equiv="refresh" content="0; url=/pages/good.html"> -->')],
    [
      "a meta in <noscript>",
      shell('<noscript><meta http-equiv="refresh" content="0; url=/pages/good.html"></noscript>'),
    ],
    [
      "a meta in the body",
      shell("", '<p>x</p><meta http-equiv="refresh" content="0; url=/pages/good.html">'),
    ],
    ["a meta of another name", shell('<meta name="refresh" content="0; url=/pages/good.html">')],
  ])(
    "%s is not followed",
    async (_what, html) => {
      const url = serveShells(() => html);
      const doc = await fetchPublic(url, cfg, "text/html");
      expect(doc.url).toBe(url);
      expect(doc.redirects).toBe(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a page that is not HTML is not read for one",
    async () => {
      const url = serveShells(
        () => '<meta http-equiv="refresh" content="0; url=/pages/good.html">',
        "text/plain",
      );
      expect((await fetchPublic(url, cfg, "text/html")).url).toBe(url);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "its target goes through the same guard as a Location",
    async () => {
      const url = serveShells(() =>
        shell('<meta http-equiv="refresh" content="0; url=http://127.0.0.1:9/admin">'),
      );
      const err = await fetchPublic(url, cfg, "text/html").catch((e) => e);
      expect(err).toBeInstanceOf(UrlRefused);
      expect(err.reason).toMatch(
        /^redirect to http:\/\/127\.0\.0\.1:9\/admin refused: host 127\.0\.0\.1 is a loopback/,
      );
      // A scheme no browser follows from a web page is no hop at all: the page itself is read.
      for (const target of [
        "file:///etc/passwd",
        "javascript:void(0)",
        "data:text/html,hi",
        "mailto:a@b.c",
      ]) {
        const stays = serveShells(() => shell(`<meta http-equiv="refresh" content="0; url=${target}">`));
        expect((await fetchPublic(stays, cfg, "text/html")).url, target).toBe(stays);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "and counts toward the same cap of 5 redirects",
    async () => {
      const url = serveShells((u) => {
        const n = Number(u.searchParams.get("n") ?? 0);
        return shell(`<meta http-equiv="refresh" content="0; url=?n=${n + 1}">`);
      });
      const err = await fetchPublic(url, cfg, "text/html").catch((e) => e);
      expect(err).toBeInstanceOf(UrlRefused);
      expect(err.reason).toBe("more than 5 redirects");
      // An HTTP redirect and a meta refresh share it: the fixture's redirect-loop after a refresh.
      const mixed = serveShells(() =>
        shell('<meta http-equiv="refresh" content="0; url=/pages/redirect-loop">'),
      );
      expect((await fetchPublic(mixed, cfg, "text/html").catch((e) => e)).reason).toBe(
        "more than 5 redirects",
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "seo audits the page the shell sends the reader to",
    async () => {
      const url = serveShells(() => shell('<meta http-equiv="refresh" content="0; url=/pages/good.html">'));
      const res = await postJson("/api/skills/seo", { url, keywords: ["solar"] });
      expect(res.status).toBe(200);
      expect((await res.json<{ final_url: string }>()).final_url).toBe(GOOD);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("metaRefresh on hostile heads (2 MiB a page can be)", () => {
  it.each([
    ["unclosed tags", "<a".repeat(1_000_000)],
    ["unclosed comments", "<!--".repeat(500_000)],
    ["unclosed scripts", "<script>".repeat(250_000)],
    ["head elements only", '<meta name="x">'.repeat(130_000)],
    // One tag name that never closes: name and attributes could split it every way (quadratic).
    ["one unclosed tag name", `<!doctype html><html><head><a${"b".repeat(2_000_000)}`],
    ["one unclosed tag name after attributes", `<head><meta a${"b ".repeat(1_000_000)}`],
  ])("%s: read once through, no refresh", (_what, html) => {
    expect(metaRefresh(html)).toBeNull();
  });
});
