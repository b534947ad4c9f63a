import { env } from "cloudflare:test";
import { DomUtils, parseDocument } from "htmlparser2";
import { describe, expect, it } from "vitest";
import { call } from "../helpers";
import {
  deliver,
  firstCallResult,
  keyIn,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
} from "../payments/checkout-helpers";

/** What Chromium sends for the page itself, and for the page's own fetch of it. */
const DOCUMENT = { accept: "text/html", "sec-fetch-dest": "document", "sec-fetch-mode": "navigate" };
const FETCH = { accept: "text/html", "sec-fetch-dest": "empty", "sec-fetch-mode": "cors" };
const get = (id: string, headers: Record<string, string> = DOCUMENT) =>
  call(`/checkout/success?session_id=${encodeURIComponent(id)}`, { headers });

/** How a served success page checks again, if it does. */
function refreshOf(html: string) {
  const doc = parseDocument(html);
  const head = DomUtils.findOne((el) => el.name === "head", doc.children);
  const state = DomUtils.getElementById("checkout-state", doc.children);
  const bar = DomUtils.getElementById("refresh-bar", doc.children);
  return {
    // A meta refresh in the head reloads every browser, scripts or not.
    headRefresh: /http-equiv="refresh"/i.test(head ? DomUtils.getOuterHTML(head) : ""),
    noscript: /<noscript><meta http-equiv="refresh" content="(\d+)"><\/noscript>/.exec(html)?.[1],
    every: state?.attribs["data-refresh"],
    bar: bar && {
      hidden: "hidden" in bar.attribs,
      status: DomUtils.getElementById("refresh-status", [bar])?.attribs.role,
      button: DomUtils.textContent(DomUtils.getElementById("refresh-stop", [bar]) ?? []),
    },
    script: html.includes('<script src="/assets/buy.js" defer="">'),
  };
}

const NOT_REFRESHING = { headRefresh: false, noscript: undefined, every: undefined, bar: null };

describe("the success page checks again in place, not by reloading (WCAG 2.2.1)", () => {
  it("a browser waiting for the payment gets no Refresh header: the page checks every 3 s itself, and reloads only without scripts", async () => {
    const id = await seedSession("sha256", 170, undefined, false);
    const res = await get(id);
    expect(res.status).toBe(200);
    // The reload every 3 s (for up to 30 minutes) sent a screen reader back to the top each time.
    expect(res.headers.get("refresh")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store");
    // The page's script is allowed as the applet's is: from this origin, nothing inline.
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain("unsafe-inline");
    const html = await res.text();
    expect(refreshOf(html)).toEqual({
      headRefresh: false,
      noscript: "3",
      every: "3",
      bar: { hidden: true, status: "status", button: "Stop checking" },
      script: true,
    });
    expect(html).toContain('<h1 id="checkout-heading">Waiting for the payment</h1>');
    expect(html).toContain("This page updates by itself for a while");
    // No inline script anywhere: the CSP would refuse it.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)/);
  });

  it("HTTP clients and agents, which run no page script, still get Refresh: 3 while it is pending", async () => {
    const id = await seedSession("sha256", 170, undefined, false);
    const res = await get(id, { accept: "text/html" });
    expect(res.headers.get("refresh")).toBe("3");
    // The page's own fetch of itself needs no header: it reads data-refresh.
    const polled = await get(id, FETCH);
    expect(polled.headers.get("refresh")).toBeNull();
    expect(refreshOf(await polled.text()).every).toBe("3");
  });

  it("a running first call is checked the same way; once its answer is stored the page is final and checks no more", async () => {
    const id = await seedSession("slugify", 170, { text: "Checked In Place" });
    await deliver(await sessionEvent("checkout.session.completed", id));
    await firstCallResult(id);
    // Made to look held by a live run in another isolate.
    await env.DB.prepare(
      "UPDATE checkout_sessions SET payload_result = NULL, payload_started_at = ?2 WHERE id = ?1",
    )
      .bind(id, Date.now())
      .run();
    const running = await get(id);
    expect(running.headers.get("refresh")).toBeNull();
    const runningHtml = await running.text();
    expect(refreshOf(runningHtml)).toMatchObject({ noscript: "3", every: "3", bar: { hidden: true } });
    expect(runningHtml).toContain("Running… this page updates when its answer is here.");
    // The Reveal button is inside what an update replaces: it appears there, focused, once offered.
    expect(runningHtml).toMatch(/<div id="checkout-state" data-refresh="3">[\s\S]*id="reveal"/);

    await env.DB.prepare("UPDATE checkout_sessions SET payload_started_at = 1 WHERE id = ?1").bind(id).run();
    const token = (await revealTokenFromPage(id)) as string;
    // The Reveal POST runs the stalled call: its answer carries the key and never checks again.
    const post = await revealPost(id, token);
    const postHtml = await post.text();
    expect(keyIn(postHtml)).toBeTruthy();
    expect(post.headers.get("refresh")).toBeNull();
    expect(refreshOf(postHtml)).toMatchObject(NOT_REFRESHING);
    // The GET page, the one the script fetches, is final now and never holds the key.
    for (const headers of [DOCUMENT, FETCH]) {
      const after = await get(id, headers);
      const html = await after.text();
      expect(after.headers.get("refresh")).toBeNull();
      expect(refreshOf(html)).toMatchObject(NOT_REFRESHING);
      expect(keyIn(html)).toBeUndefined();
      expect(html).toContain('id="key-gone"');
    }
  }, 30_000);

  it("buy.js, which the page loads, carries the checking (src/browser/checkout-refresh.ts)", async () => {
    const buyJs = await (await env.ASSETS.fetch("https://skills.test/assets/buy.js")).text();
    for (const text of ["checkout-state", "refresh-stop", "dataset.refresh", "Resume checking"])
      expect(buyJs, text).toContain(text);
  });
});
