import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, watchErrors } from "./browser";

// A first-time card buyer's whole way, as one walk: home, a skill's docs, "try it", the 402, the
// card checkout, the success page, the key, a call with it; and every link of every page on the way
// answers (no 404, no anchor to nothing). Each route's own tests check the pieces; this checks the
// joins, where the docs page's "try it" opened the applet on another skill.
const stack = inject("stack") as { base_url: string; stripe_api_base: string };
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

/** The page's same-origin links (their targets fetched later) and its in-page anchors that point nowhere. */
async function linksOf(page: Page) {
  return page.$$eval("a[href]", (as) => {
    const here = `${location.origin}${location.pathname}${location.search}`;
    const links: string[] = [];
    const deadAnchors: string[] = [];
    for (const a of as as HTMLAnchorElement[]) {
      if (a.protocol === "mailto:") continue;
      const url = new URL(a.href);
      if (url.origin !== location.origin) continue;
      if (url.hash && `${url.origin}${url.pathname}${url.search}` === here) {
        if (!document.getElementById(decodeURIComponent(url.hash.slice(1)))) deadAnchors.push(a.href);
        continue;
      }
      url.hash = "";
      links.push(url.href);
    }
    return { links, deadAnchors };
  });
}

describe("a card buyer's journey, end to end", () => {
  it("home -> docs -> try it -> 402 -> card checkout -> key -> paid call, every link on the way answering", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    const links = new Set<string>();
    const deadAnchors: string[] = [];
    const collect = async () => {
      const found = await linksOf(page);
      for (const l of found.links) links.add(l);
      deadAnchors.push(...found.deadAnchors);
    };

    await page.goto(`${stack.base_url}/`);
    await collect();
    await page.click('a[href="/docs/slugify"]');
    expect(await page.textContent("h1")).toBe("Slugify");
    await collect();
    await page.click('main >> text="try it"');
    await page.waitForSelector("#send:not([disabled])");
    await collect();
    // The applet opens on the skill the buyer was reading, with its example body.
    expect(await page.$eval("#skill", (s) => (s as HTMLSelectElement).value)).toBe("/api/skills/slugify");
    expect(await page.inputValue("#body")).toContain("Crème Brûlée");
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    expect(await page.textContent("#buy")).toMatch(/^Buy \d+ calls for \$\d+\.\d\d$/);
    await page.click("#buy");
    await page.waitForURL((u) => u.href.startsWith(stack.stripe_api_base));
    await page.click("#pay");
    await page.waitForURL(/\/checkout\/success\?session_id=/);
    expect(await page.textContent("h1")).toBe("Payment received");
    await collect();
    await page.click("#reveal");
    await page.waitForSelector("#api-key");
    const key = ((await page.textContent("#api-key")) ?? "").trim();
    await collect();
    // The key's page, loaded again, says what to do about a lost key, with an address to write to.
    await page.reload();
    expect(await page.textContent("#key-gone")).toContain("Lost it?");
    expect(await page.getAttribute("#key-gone a", "href")).toMatch(/^mailto:\S+@\S+$/);
    await collect();

    // The key pays in the applet, as the success page says.
    await page.goto(`${stack.base_url}/applet?skill=slugify`);
    await page.waitForSelector("#send:not([disabled])");
    await page.fill("#key", key);
    await page.click("#send");
    await page.waitForSelector("#credits:not([hidden])");
    expect(await page.textContent("#status")).toBe("200 OK");
    expect(await page.textContent("#credits")).toMatch(/^Calls left on this key: \d+$/);
    await page.close();

    expect(deadAnchors).toEqual([]);
    const answers = await Promise.all(
      [...links].map(async (l) => `${(await fetch(l, { redirect: "follow" })).status} ${l}`),
    );
    expect(answers.filter((a) => !a.startsWith("200 "))).toEqual([]);
    expect(links.size).toBeGreaterThan(20);
    // The applet's unpaid 402s are logged by the browser as failed loads; nothing else.
    expect(errors.filter((e) => !/status of 402/.test(e))).toEqual([]);
  });
});
