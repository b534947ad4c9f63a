import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
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
