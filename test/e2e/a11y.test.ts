import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, watchErrors } from "./browser";

/**
 * axe-core on every page in the states a visitor meets, at a desktop and a phone width, and its
 * colour contrast in the dark scheme too (site.css has one; nothing else differs in it). Any
 * serious or critical violation fails. No rule is disabled.
 */
const stack = inject("stack") as { base_url: string; admin_token: string };
const WIDTHS = [1280, 375] as const;
/** Each audit: every rule at both widths; in the dark scheme only colours change, and their contrast is the same at any width. */
const PASSES = [
  { width: WIDTHS[0], colorScheme: "light" },
  { width: WIDTHS[1], colorScheme: "light" },
  { width: WIDTHS[0], colorScheme: "dark", rules: ["color-contrast"] },
] as const;
const FAILING = new Set(["serious", "critical"]);

let browser: Browser;
/** Every violation seen, whatever its impact, written out for whoever reads the run. */
const seen: Record<string, string[]> = {};

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  mkdirSync("test-output", { recursive: true });
  writeFileSync(path.join("test-output", "a11y.json"), JSON.stringify(seen, null, 2));
});

/**
 * Runs axe on the page as it is now, in each pass, and returns the serious and critical
 * violations as "state width scheme: rule (impact) on targets" lines.
 */
async function audit(page: Page, state: string): Promise<string[]> {
  const failing: string[] = [];
  for (const pass of PASSES) {
    await page.setViewportSize({ width: pass.width, height: 900 });
    await page.emulateMedia({ colorScheme: pass.colorScheme });
    const axe = new AxeBuilder({ page });
    const { violations } = await ("rules" in pass ? axe.withRules([...pass.rules]) : axe).analyze();
    for (const v of violations) {
      const targets = v.nodes.map((n) => n.target.join(" ")).join(", ");
      const line = `${state} ${pass.width}px ${pass.colorScheme}: ${v.id} (${v.impact}) on ${targets}`;
      seen[state] = [...(seen[state] ?? []), line];
      if (FAILING.has(v.impact ?? "")) failing.push(line);
    }
  }
  return failing;
}

/** A page in a context of its own: axe reads pages through their context (browser.newPage has none to share). */
async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: WIDTHS[0], height: 900 } });
  return context.newPage();
}
const close = (page: Page) => page.context().close();

async function open(route: string): Promise<{ page: Page; errors: string[] }> {
  const page = await newPage();
  const errors = watchErrors(page);
  await page.goto(`${stack.base_url}${route}`);
  return { page, errors };
}

/** A card-credit key for one skill, bought as a visitor buys it; the pages of the way are audited. */
async function buyKey(skillId: string, failing: string[]): Promise<string> {
  const created = await fetch(`${stack.base_url}/api/cardpay/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ skill_id: skillId }),
  });
  expect(created.status).toBe(200);
  const { checkout_url, session_id } = (await created.json()) as { checkout_url: string; session_id: string };
  const page = await newPage();
  await page.goto(`${stack.base_url}/checkout/success?session_id=${session_id}`);
  expect(await page.textContent("h1")).toBe("Waiting for the payment");
  failing.push(...(await audit(page, `checkout success unpaid (${skillId})`)));
  await page.goto(checkout_url);
  await page.click("#pay");
  await page.waitForURL(/\/checkout\/success\?session_id=/);
  failing.push(...(await audit(page, `checkout success paid (${skillId})`)));
  await page.click("#reveal");
  await page.waitForSelector("#api-key");
  failing.push(...(await audit(page, `checkout success key shown (${skillId})`)));
  const key = (await page.textContent("#api-key"))?.trim() ?? "";
  await close(page);
  return key;
}

// Each test has a browser context of its own: two run side by side (the e2e project's
// maxConcurrency), using the core a serial run leaves idle.
describe.concurrent("accessibility (axe-core): no serious or critical violation", () => {
  it.each([
    ["home", "/"],
    ["docs index", "/docs"],
    ["docs page", "/docs/text-diff"],
    ["MCP docs", "/docs/mcp"],
    ["reliability", "/docs/reliability"],
    ["applet", "/applet"],
    ["checkout cancel", "/checkout/cancel?skill_id=json_sort"],
    ["404", "/no-such-page"],
    ["404 of a docs page", "/docs/no-such-skill"],
    ["unknown checkout", "/checkout/success?session_id=cs_test_unknown"],
    ["admin sign-in", "/admin"],
  ])("%s (%s)", async (state, route) => {
    const { page, errors } = await open(route);
    expect(await audit(page, state)).toEqual([]);
    // Chromium logs the status of a 404 page and of the signed-out /admin (401); nothing else may fail.
    expect(errors.filter((e) => !/\b(401|404)\b/.test(e))).toEqual([]);
    await close(page);
  });

  it("the admin dashboard, signed in", async () => {
    const { page } = await open("/admin");
    await page.fill("#token", stack.admin_token);
    await page.click("button[type=submit]");
    await page.waitForSelector("#chart-revenue-day");
    expect(await audit(page, "admin dashboard")).toEqual([]);
    // A refused form, sent as the browser sends one (its own Accept header): a page, not raw JSON.
    await Promise.all([
      page.waitForNavigation(),
      page.evaluate(() => {
        const form = document.createElement("form");
        form.method = "post";
        form.action = "/admin/refunds/a11y-no-such-refund/resolve";
        for (const [name, value] of [
          ["csrf", (document.querySelector('input[name="csrf"]') as HTMLInputElement).value],
          ["tx_hash", `0x${"ab".repeat(32)}`],
          ["amount_micro", "1"],
        ]) {
          const input = document.createElement("input");
          input.type = "hidden";
          input.name = name as string;
          input.value = value as string;
          form.append(input);
        }
        document.body.append(form);
        form.submit();
      }),
    ]);
    expect(await page.locator("#refusal").textContent()).toContain('Unknown refund "a11y-no-such-refund"');
    expect(await audit(page, "admin form refused")).toEqual([]);
    await close(page);
  });

  it.each([
    ["slugify", { text: "Hello there" }, { text: 42 }],
    ["json_sort", { data: { b: 1, a: 2 } }, { nope: true }],
    ["token_count", { text: "count me" }, { text: 5 }],
  ])(
    "the applet with %s: 402 challenge, paid result, 422 and a body that is not JSON",
    async (skillId, good, bad) => {
      const failing: string[] = [];
      const key = await buyKey(skillId, failing);
      const { page, errors } = await open(`/applet?skill=${skillId}`);
      const send = async (body: unknown, withKey: boolean) => {
        await page.fill("#body", typeof body === "string" ? body : JSON.stringify(body));
        await page.fill("#key", withKey ? key : "");
        await page.click("#send");
        await page.waitForFunction(() => document.getElementById("status")?.textContent !== "Sending…");
      };
      await send(good, false);
      expect(await page.isVisible("#challenge")).toBe(true);
      failing.push(...(await audit(page, `applet ${skillId} 402`)));
      await send(good, true);
      expect(await page.getAttribute("#status", "class")).toBe("status-ok");
      failing.push(...(await audit(page, `applet ${skillId} 200`)));
      await send(bad, true);
      expect(await page.textContent("#status")).toContain("422");
      failing.push(...(await audit(page, `applet ${skillId} 422`)));
      await page.fill("#body", "{ not json");
      await page.click("#send");
      await page.waitForSelector("#body-error", { state: "visible" });
      failing.push(...(await audit(page, `applet ${skillId} body not JSON`)));
      expect(failing).toEqual([]);
      // Chromium logs the 402 and 422 the applet asked for; nothing else may fail.
      expect(errors.filter((e) => !/\b(402|422)\b/.test(e))).toEqual([]);
      await close(page);
    },
  );
});

describe("by keyboard alone, and without JavaScript", () => {
  /** The focused element, named by its id or tag and link target, and whether its focus ring shows. */
  const focused = (page: Page) =>
    page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const name = el.id || `${el.tagName.toLowerCase()}${el.getAttribute("href") ?? ""}`;
      return { name, ring: getComputedStyle(el).outlineStyle !== "none" };
    });

  it("the applet: Tab reaches every control in reading order with a visible ring, Enter sends, the status line says what came back", async () => {
    const { page, errors } = await open("/applet");
    await page.waitForSelector("#send:enabled");
    const order: string[] = [];
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Tab");
      const { name, ring } = await focused(page);
      order.push(name);
      expect(ring, `${name} shows where the focus is`).toBe(true);
    }
    expect(order).toEqual([
      "a#main",
      "a/",
      "a/docs",
      "a/applet",
      "a/llms.txt",
      "a/AGENTS.md",
      "a/openapi.json",
      "skill",
      "body",
      "key",
      "send",
      "summary",
    ]);
    // The skip link leads past the header: the next Tab is the form's first control.
    await page.reload();
    await page.waitForSelector("#send:enabled");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Tab");
    expect((await focused(page)).name).toBe("skill");
    // Screen readers announce the status line (role=status is a polite live region) when it changes.
    expect(await page.getAttribute("#status", "role")).toBe("status");
    await page.focus("#key");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => /402/.test(document.getElementById("status")?.textContent ?? ""));
    expect((await focused(page)).name).toBe("key");
    // A body that is not JSON: the focus goes to it, marked invalid and described by an alert.
    await page.fill("#body", "{ not json");
    await page.focus("#key");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#body-error", { state: "visible" });
    expect((await focused(page)).name).toBe("body");
    expect(await page.getAttribute("#body", "aria-invalid")).toBe("true");
    expect(await page.getAttribute("#body", "aria-describedby")).toBe("body-error");
    expect(await page.getAttribute("#body-error", "role")).toBe("alert");
    expect(errors.filter((e) => !/\b402\b/.test(e))).toEqual([]);
    await close(page);
  });

  it("with scripts off the applet says it needs them and sends nothing; the admin sign-in still works", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(`${stack.base_url}/applet`);
    expect(await page.textContent("noscript p")).toContain("This page sends requests with JavaScript");
    expect(await page.isVisible("noscript p")).toBe(true);
    expect(await page.isDisabled("#send")).toBe(true);
    await page.goto(`${stack.base_url}/admin`);
    await page.fill("#token", stack.admin_token);
    await page.press("#token", "Enter");
    await page.waitForSelector("#chart-revenue-day");
    expect(await page.textContent("h1")).not.toBe("Admin sign-in");
    await context.close();
  });
});
