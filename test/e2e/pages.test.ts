import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, SCREENSHOTS, watchErrors } from "./browser";

const stack = inject("stack") as { base_url: string; pay_to: string; stripe_api_base: string };
let browser: Browser;

interface CatalogSkill {
  id: string;
  doc_slug: string;
  endpoint: string;
  price_usd: number;
}
let catalog: CatalogSkill[];

beforeAll(async () => {
  browser = await launch();
  catalog = ((await (await fetch(`${stack.base_url}/api/catalog`)).json()) as { skills: CatalogSkill[] })
    .skills;
});
afterAll(async () => {
  await browser?.close();
});

/** WCAG contrast ratio of two computed CSS colours ("rgb(r, g, b)"). */
function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const [r = 0, g = 0, bl = 0] = (css.match(/\d+(\.\d+)?/g) ?? []).map(Number).map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** A key for card credits, bought the way a visitor does: checkout, pay on the hosted page, read it once. */
async function buyKey(skillId: string): Promise<string> {
  const created = await fetch(`${stack.base_url}/api/cardpay/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ skill_id: skillId }),
  });
  expect(created.status).toBe(200);
  const { checkout_url } = (await created.json()) as { checkout_url: string };
  const page = await browser.newPage();
  await page.goto(checkout_url);
  await page.click("#pay");
  await page.waitForURL(/\/checkout\/success\?session_id=/);
  const key = (await page.textContent("#api-key"))?.trim() ?? "";
  await page.close();
  expect(key).toMatch(/^mk_[A-Za-z0-9_-]{20,}$/);
  return key;
}

const priceOf = (s: CatalogSkill) => `$${s.price_usd}`;

async function open(route: string, viewport = { width: 1100, height: 900 }) {
  const page = await browser.newPage({ viewport });
  const errors = watchErrors(page);
  const res = await page.goto(`${stack.base_url}${route}`);
  return { page, errors, res };
}

async function expectOneH1(page: Page) {
  expect(await page.locator("h1").count()).toBe(1);
}

describe("pages in a real browser", () => {
  it.each([
    ["/", "home"],
    ["/docs", "docs-index"],
    ["/docs/text-diff", "docs-text-diff"],
    ["/docs/mcp", "docs-mcp"],
    ["/applet", "applet"],
  ])("%s loads without console errors, on desktop and phone widths", async (route, name) => {
    for (const [width, label] of [
      [1280, "desktop"],
      [390, "phone"],
    ] as const) {
      const { page, errors, res } = await open(route, { width, height: 900 });
      expect(res?.status()).toBe(200);
      await expectOneH1(page);
      expect(await page.locator("link[rel=stylesheet]").count()).toBe(1);
      // Nothing overflows the viewport sideways on a phone.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${route} ${label}`).toBeLessThanOrEqual(1);
      await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${label}.png`), fullPage: true });
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it("the home table has one row per skill, each with its own price and endpoint", async () => {
    const { page } = await open("/");
    expect(await page.locator("table tbody tr").count()).toBe(catalog.length);
    for (const s of catalog) {
      const row = page.locator("tbody tr", { has: page.locator(`a[href="/docs/${s.doc_slug}"]`) });
      expect(await row.count(), s.id).toBe(1);
      expect(await row.locator("td.num").textContent(), s.id).toBe(priceOf(s));
      expect(await row.textContent(), s.id).toContain(`POST ${s.endpoint}`);
    }
    await page.close();
  });

  it("the docs index shows each skill's price on its card", async () => {
    const { page } = await open("/docs");
    for (const s of catalog) {
      const card = page.locator(`a[href="/docs/${s.doc_slug}"]`);
      expect(await card.count(), s.id).toBe(1);
      expect(await card.locator(".price").textContent(), s.id).toBe(priceOf(s));
    }
    await page.close();
  });

  it("the 404 page is a page like the others, with the same CSP", async () => {
    const { page, errors, res } = await open("/docs/no-such-skill");
    expect(res?.status()).toBe(404);
    const csp = (await res?.allHeaders())?.["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    const docs = await fetch(`${stack.base_url}/docs`);
    expect(csp).toBe(docs.headers.get("content-security-policy"));
    await expectOneH1(page);
    expect(await page.textContent("h1")).toContain("no-such-skill");
    // Chromium logs the 404 status of the document itself; nothing else may fail.
    expect(errors.filter((e) => !e.includes("404"))).toEqual([]);
    await page.close();
  });

  it("status colours keep 4.5:1 contrast on the page background, light and dark", async () => {
    for (const colorScheme of ["light", "dark"] as const) {
      const page = await browser.newPage({ colorScheme });
      await page.goto(`${stack.base_url}/applet`);
      for (const cls of ["status-ok", "status-pay", "status-err"]) {
        const [fg, bg] = await page.evaluate((c) => {
          const status = document.getElementById("status") as HTMLElement;
          status.className = c;
          return [getComputedStyle(status).color, getComputedStyle(document.body).backgroundColor];
        }, cls);
        expect(contrast(fg, bg), `${cls} ${colorScheme}: ${fg} on ${bg}`).toBeGreaterThanOrEqual(4.5);
      }
      await page.close();
    }
  });

  it("the applet sends a request and shows the decoded 402 challenge", async () => {
    const { page, errors } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/token-count");
    expect(await page.inputValue("#body")).toContain('"encoding"');
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    expect(await page.textContent("#status")).toContain("402");
    expect(await page.textContent("#c-price")).toContain("$0.004");
    expect(await page.textContent("#c-network")).toBe("eip155:8453");
    expect(await page.textContent("#c-payto")).toBe(stack.pay_to);
    await page.screenshot({ path: path.join(SCREENSHOTS, "applet-402.png"), fullPage: true });
    expect(errors.filter((e) => !e.includes("402"))).toEqual([]);
    await page.close();
  });

  it("with a pasted card-credit key the applet makes the paid call and shows the 200 result", async () => {
    const key = await buyKey("slugify");
    const { page, errors } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/slugify");
    await page.fill("#body", JSON.stringify({ text: "Paid From The Applet" }));
    await page.fill("#key", key);
    await page.click("#send");
    await page.waitForFunction(() => document.getElementById("status")?.className === "status-ok");
    expect(await page.textContent("#status")).toMatch(/^200\b/);
    expect(await page.isHidden("#challenge")).toBe(true);
    const shown = JSON.parse((await page.textContent("#output")) ?? "{}");
    expect(shown).toMatchObject({ skill: "slugify", ok: true, slug: "paid-from-the-applet" });
    await page.screenshot({ path: path.join(SCREENSHOTS, "applet-paid-200.png"), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
