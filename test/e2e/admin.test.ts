import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helper shared with the scripts
import { payingFetch } from "../../scripts/lib/buyer.mjs";
import { launch, SCREENSHOTS, watchErrors } from "./browser";

const stack = inject("stack") as {
  base_url: string;
  admin_token: string;
  scheduled_url: string;
  buyers: { privateKey: string; address: string }[];
};
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

/** Revenue of `skill` in the revenue chart's table view, in micro-dollars. */
async function revenueShown(page: import("playwright-core").Page, skill: string) {
  const row = page.locator("#chart-revenue-skill tbody tr", { has: page.locator(`th:text-is("${skill}")`) });
  if ((await row.count()) === 0) return 0;
  const text = (await row.locator("td").first().textContent()) ?? "";
  return Math.round(Number(text.replace("$", "")) * 1_000_000);
}

/** Calls of `skill` the dashboard's reliability table shows (0 when the skill has no row yet). */
async function callsShown(page: import("playwright-core").Page, skill: string) {
  const row = page.locator("#reliability tr", { has: page.locator(`th:text-is("${skill}")`) });
  if ((await row.count()) === 0) return 0;
  return Number(await row.locator("td").first().textContent());
}

describe("/admin in a real browser", () => {
  it("is refused without the token, then signs in and shows the seeded figures as charts and tables", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors = watchErrors(page);
    const urls: string[] = [];
    const consoleLines: string[] = [];
    page.on("request", (r) => urls.push(r.url()));
    page.on("console", (m) => consoleLines.push(m.text()));

    // Without the token: the login form, no figures.
    const anon = await page.goto(`${stack.base_url}/admin`);
    expect(anon?.status()).toBe(401);
    expect(await page.locator("h1").textContent()).toBe("Admin sign-in");
    expect(await page.locator("#reliability").count()).toBe(0);
    await page.fill("#token", "not-the-token");
    await page.click("button[type=submit]");
    await expect.poll(() => page.locator("#login-error").textContent()).toBe("Wrong admin token.");
    expect(await page.locator("#reliability").count()).toBe(0);

    // Sign in and read the baseline for a skill, then seed calls through the real API.
    await page.fill("#token", stack.admin_token);
    await page.click("button[type=submit]");
    await page.waitForSelector("#reliability");
    const skill = "uuid_mint";
    // The page shows the figures the Cron publishes (docs/STATS.md): the baseline is read from a
    // copy that counts every call made so far (other files call uuid_mint too), as the poll's is.
    await (await fetch(stack.scheduled_url)).arrayBuffer();
    await page.reload();
    const before = await callsShown(page, skill);
    const revenueBefore = await revenueShown(page, skill);
    const catalog = (await (await fetch(`${stack.base_url}/api/catalog`)).json()) as {
      skills: { id: string; price_usd: number }[];
    };
    const priceMicro = Math.round((catalog.skills.find((s) => s.id === skill)?.price_usd ?? 0) * 1_000_000);
    // One call paid with x402 on the local chain: measured as x402 revenue at the skill's price.
    const buyer = stack.buyers[stack.buyers.length - 1] as { privateKey: string };
    const paid = await payingFetch(buyer.privateKey)(`${stack.base_url}/api/skills/uuid-mint`, {
      method: "POST",
      body: JSON.stringify({ count: 1 }),
    });
    expect(paid.status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${stack.base_url}/api/skills/uuid-mint`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ count: 1 }),
      });
      expect(res.status).toBe(402); // unpaid: measured as a payment refusal, never as a failure
    }
    // The record is written after the answer (waitUntil): fire the Cron as `npm start` documents
    // and poll until the figures show it.
    await expect
      .poll(
        async () => {
          const cron = await fetch(stack.scheduled_url);
          await cron.arrayBuffer();
          await page.reload();
          return callsShown(page, skill);
        },
        { timeout: 20_000 },
      )
      // 3 unpaid calls, the paying client's own unpaid first attempt (its 402) and the paid call.
      .toBe(before + 5);
    expect(await revenueShown(page, skill)).toBe(revenueBefore + priceMicro);

    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "admin_session");
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict" });
    expect(session?.value).not.toContain(stack.admin_token);

    // The calls chart draws that number and its table view states it.
    const chart = page.locator("#chart-calls-skill");
    expect(await chart.locator("svg rect").count()).toBeGreaterThan(0);
    const row = chart.locator("tbody tr", { has: page.locator(`th:text-is("${skill}")`) });
    expect(await row.locator("td").first().textContent()).toBe(String(before + 5));
    const bar = chart.locator(`rect[data-value="${before + 5}"]`);
    expect(await bar.count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(SCREENSHOTS, "admin-light.png"), fullPage: true });

    // Dark mode: the chart bars and labels take the dark scheme's colours.
    const dark = await browser.newPage({ colorScheme: "dark", viewport: { width: 1200, height: 900 } });
    await dark.context().addCookies(cookies);
    await dark.goto(`${stack.base_url}/admin`);
    const fill = (p: typeof page) =>
      p
        .locator("#chart-calls-skill text.chart-label")
        .first()
        .evaluate((el) => getComputedStyle(el).fill);
    expect(await fill(dark)).not.toBe(await fill(page));
    await dark.screenshot({ path: path.join(SCREENSHOTS, "admin-dark.png"), fullPage: true });
    await dark.close();

    // On a phone the tables scroll inside their own boxes; the page itself never scrolls sideways.
    const phone = await browser.newPage({ viewport: { width: 375, height: 800 } });
    await phone.context().addCookies(cookies);
    await phone.goto(`${stack.base_url}/admin`);
    await phone.waitForSelector("#reliability");
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await phone.screenshot({ path: path.join(SCREENSHOTS, "admin-phone.png"), fullPage: true });
    await phone.close();

    // The token never travelled in a URL, nor in a console line.
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) expect(u).not.toContain(stack.admin_token);
    for (const l of consoleLines) expect(l).not.toContain(stack.admin_token);
    expect(errors.filter((e) => !e.includes("401"))).toEqual([]);
    await page.close();
  });
});
