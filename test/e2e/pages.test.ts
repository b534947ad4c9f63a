import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, SCREENSHOTS, watchErrors } from "./browser";

const stack = inject("stack");
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe("pages in a real browser", () => {
  it.each([
    ["/", "home"],
    ["/docs", "docs-index"],
    ["/docs/text-diff", "docs-text-diff"],
  ])("%s loads without console errors, on desktop and phone widths", async (route, name) => {
    for (const [width, label] of [
      [1280, "desktop"],
      [390, "phone"],
    ] as const) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      const errors = watchErrors(page);
      const res = await page.goto(`${stack.base_url}${route}`);
      expect(res?.status()).toBe(200);
      await expect(page.locator("h1").first()).toBeTruthy();
      expect(await page.locator("link[rel=stylesheet]").count()).toBe(1);
      // Nothing overflows the viewport sideways on a phone.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${route} ${label}`).toBeLessThanOrEqual(1);
      await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${label}.png`), fullPage: true });
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it("the applet sends a request and shows the decoded 402 challenge", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const errors = watchErrors(page);
    await page.goto(`${stack.base_url}/applet`);
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
});
