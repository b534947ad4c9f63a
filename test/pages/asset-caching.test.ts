import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BROWSER, call } from "../helpers";

/*
 * The pages load their scripts and stylesheet under fixed names (static/assets/). Cached for an
 * hour, a browser ran the old script against a new page for that long after a deploy; revalidated
 * on each load, it gets a 304 (no body) while the file is unchanged and the new file once it is.
 */
describe("the pages' assets are revalidated on every load", () => {
  it("each asset a page references: max-age=0, must-revalidate, an ETag, and a 304 for it", async () => {
    const referenced = new Set<string>();
    for (const page of ["/", "/applet", "/docs/sha256"]) {
      const html = await (await call(page, { headers: BROWSER })).text();
      for (const [, url] of html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) referenced.add(url ?? "");
    }
    expect([...referenced].sort()).toEqual(["/assets/applet.js", "/assets/buy.js", "/assets/site.css"]);
    for (const url of referenced) {
      const first = await env.ASSETS.fetch(`https://skills.test${url}`);
      expect(first.status, url).toBe(200);
      expect(first.headers.get("cache-control"), url).toBe("public, max-age=0, must-revalidate");
      const etag = first.headers.get("etag") ?? "";
      expect(etag, url).not.toBe("");
      const again = await env.ASSETS.fetch(`https://skills.test${url}`, {
        headers: { "if-none-match": etag },
      });
      expect(again.status, url).toBe(304);
    }
  });
});
