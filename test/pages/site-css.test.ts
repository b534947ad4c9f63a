import { env } from "cloudflare:test";
import { DomUtils, parseDocument } from "htmlparser2";
import { describe, expect, it } from "vitest";
import { skills } from "../../src/skills/registry";
import { call } from "../helpers";

/** The stylesheet as Workers Assets serves it (static/assets/site.css). */
const siteCss = async () => (await env.ASSETS.fetch("https://skills.test/assets/site.css")).text();
const html = { headers: { accept: "text/html" } };

describe("hidden means hidden", () => {
  it("the stylesheet hides every [hidden] element, whatever class sets its display", async () => {
    const css = await siteCss();
    // .button sets display: inline-block, which beat the UA's [hidden] { display: none }: the applet
    // showed "Pay … with browser wallet" without a wallet, and its card button with card payments off.
    expect(css).toMatch(/\.button \{ display: inline-block;/);
    expect(css).toMatch(/^\[hidden\] \{ display: none !important; \}$/m);
  });

  it("the applet's wallet and card buttons are .button elements hidden by the attribute alone", async () => {
    const page = await (await call("/applet", html)).text();
    expect(page).toMatch(/<button id="pay-wallet" type="button" class="button" hidden="">/);
    expect(page).toMatch(/<button id="buy" type="button" class="button secondary" hidden="">/);
  });
});

describe("every docs page fits a 320 px screen", () => {
  /** Where code may break anywhere (site.css): running text. Tables and pre scroll in their own box. */
  const RUNNING = ["p", "li", "h1", "h2", "h3", "summary", "figcaption", "dd"];

  it("code in running text may break anywhere, and every docs page's inline code is in running text", async () => {
    const css = await siteCss();
    expect(css).toContain(":is(p, li, h1, h2, h3, summary, figcaption) code { overflow-wrap: anywhere; }");
    expect(css).toMatch(/\.facts dd \{[^}]*overflow-wrap: anywhere;/);
    const paths = ["/docs", "/docs/mcp", "/docs/reliability", ...skills.map((s) => `/docs/${s.slug}`)];
    let seen = 0;
    for (const p of paths) {
      const doc = parseDocument(await (await call(p, html)).text());
      for (const code of DomUtils.findAll((el) => el.name === "code", doc.children)) {
        const names: string[] = [];
        for (let n = code.parent; n && "name" in n; n = n.parent) names.push(n.name);
        if (names.includes("pre") || names.includes("table")) continue;
        const text = DomUtils.textContent(code);
        expect(
          names.some((n) => RUNNING.includes(n)),
          `${p}: <code>${text}</code> in ${names.join(" < ")}`,
        ).toBe(true);
        seen++;
      }
    }
    // The two that scrolled sideways at 320 px are among them.
    const mcp = await (await call("/docs/mcp", html)).text();
    expect(mcp).toMatch(/<p>[\s\S]*?<code>params\._meta\[&quot;marketplace\/idempotency-key&quot;\]<\/code>/);
    expect(seen).toBeGreaterThan(100);
  }, 30_000);
});
