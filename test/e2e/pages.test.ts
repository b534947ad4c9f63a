import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { erc20Abi } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, SCREENSHOTS, watchErrors } from "./browser";

const stack = inject("stack") as {
  base_url: string;
  admin_token: string;
  pay_to: string;
  stripe_api_base: string;
  rpc_url: string;
  usdc_address: string;
  buyers: { address: string; privateKey: string }[];
};
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

/** A key for card credits, bought the way a visitor does: checkout, pay on the hosted page, reveal it once. */
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
  // The key is shown once, by the page's "Reveal my key" button (a POST), never on the GET.
  await page.click("#reveal");
  await page.waitForSelector("#api-key");
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
    ["/docs/reliability", "docs-reliability"],
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
      // The doctype keeps the page out of quirks mode.
      expect(await page.evaluate(() => document.compatMode)).toBe("CSS1Compat");
      // Nothing overflows the viewport sideways on a phone.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `${route} ${label}`).toBeLessThanOrEqual(1);
      await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${label}.png`), fullPage: true });
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it("every docs page fits a 320 px screen: no sideways scroll (WCAG 1.4.10)", async () => {
    // Inline code with no space in it (`params._meta["marketplace/idempotency-key"]` on /docs/mcp,
    // `{"skill_id":"json_schema_validate"}`) scrolled the page sideways until it could break anywhere.
    const page = await browser.newPage({ viewport: { width: 320, height: 800 } });
    const errors = watchErrors(page);
    const routes = ["/docs", "/docs/mcp", "/docs/reliability", ...catalog.map((s) => `/docs/${s.doc_slug}`)];
    for (const route of routes) {
      await page.goto(`${stack.base_url}${route}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, route).toBeLessThanOrEqual(1);
    }
    await page.goto(`${stack.base_url}/docs/mcp`);
    await page.screenshot({ path: path.join(SCREENSHOTS, "docs-mcp-320.png"), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("the admin revenue chart's day labels never overlap and stay 12 px or more, at 320 px and on a desktop", async () => {
    const page = await browser.newPage({ viewport: { width: 320, height: 800 } });
    const errors = watchErrors(page);
    await page.goto(`${stack.base_url}/admin`);
    await page.fill("#token", stack.admin_token);
    await page.click("button[type=submit]");
    await page.waitForSelector("#chart-revenue-day");
    for (const width of [320, 1200]) {
      await page.setViewportSize({ width, height: 800 });
      const seen = await page.evaluate(() => {
        const chart = document.getElementById("chart-revenue-day") as HTMLElement;
        // The first two texts are the value scale; the rest label the days.
        const labels = [...chart.querySelectorAll("svg text.chart-label")].slice(2);
        const boxes = labels.map((t) => t.getBoundingClientRect());
        const scroll = chart.querySelector(".chart-scroll") as HTMLElement;
        return {
          texts: labels.map((t) => t.textContent),
          overlaps: boxes.slice(1).filter((b, i) => b.left < (boxes[i] as DOMRect).right).length,
          // 12 px text is ~14 px tall: each label's rendered height.
          smallest: Math.min(...boxes.map((b) => b.height)),
          scrolls: scroll.scrollWidth > scroll.clientWidth,
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          rows: chart.querySelectorAll("tbody tr").length,
        };
      });
      // 14 days: every other one labelled, the latest included; every day has its table row.
      expect(seen.texts, `${width}`).toHaveLength(7);
      expect(seen.overlaps, `${width}`).toBe(0);
      expect(seen.smallest, `${width}`).toBeGreaterThanOrEqual(13);
      expect(seen.rows).toBe(14);
      // A phone scrolls the chart inside its box, not the page.
      expect(seen.scrolls, `${width}`).toBe(width === 320);
      expect(seen.overflow, `${width}`).toBeLessThanOrEqual(1);
    }
    await page.setViewportSize({ width: 320, height: 800 });
    await page
      .locator("#chart-revenue-day")
      .screenshot({ path: path.join(SCREENSHOTS, "admin-chart-320.png") });
    // Chromium logs the sign-in page's 401; nothing else may fail.
    expect(errors.filter((e) => !e.includes("401"))).toEqual([]);
    await page.close();
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

  it("what the applet hides stays hidden: no wallet, no wallet button; no card pack, no card button", async () => {
    const { page, errors } = await open("/applet");
    /** Elements with the hidden attribute that still take up room on the page (none may). */
    const shownWhileHidden = () =>
      page.evaluate(() =>
        [...document.querySelectorAll("[hidden]")]
          .filter((e) => e.getClientRects().length > 0)
          .map((e) => e.id || e.tagName),
      );
    expect(await shownWhileHidden()).toEqual([]);
    await page.selectOption("#skill", "/api/skills/slugify");
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    // This browser has no window.ethereum: the page says so instead of offering a button that does
    // nothing (.button's display: inline-block showed it while hidden).
    expect(await page.getAttribute("#pay-wallet", "hidden")).not.toBeNull();
    expect(await page.isVisible("#pay-wallet")).toBe(false);
    expect(await page.isVisible("#no-wallet")).toBe(true);
    expect(await page.isVisible("#buy")).toBe(true);
    expect(await shownWhileHidden()).toEqual([]);
    // A deployment without card payments renders no pack on the options: the card button hides.
    await page.evaluate(() => {
      const skill = document.getElementById("skill") as HTMLSelectElement;
      for (const o of skill.options) delete o.dataset.pack;
      skill.dispatchEvent(new Event("change"));
    });
    await page.click("#send");
    await page.waitForFunction(() => !document.getElementById("challenge")?.hidden);
    expect(await page.getAttribute("#buy", "hidden")).not.toBeNull();
    expect(await page.isVisible("#buy")).toBe(false);
    expect(await shownWhileHidden()).toEqual([]);
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
    // The balance left on the key, from X-Credits-Remaining: a fresh 170-call pack minus this call.
    expect(await page.textContent("#credits")).toBe("Calls left on this key: 169");
    expect(await page.isVisible("#credits")).toBe(true);
    await page.screenshot({ path: path.join(SCREENSHOTS, "applet-paid-200.png"), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a broken JSON body is caught before sending, with where it is broken", async () => {
    const { page, errors } = await open("/applet");
    let sent = 0;
    page.on("request", (r) => {
      if (r.url().includes("/api/skills/")) sent++;
    });
    await page.selectOption("#skill", "/api/skills/slugify");
    await page.fill("#body", '{\n  "text": "a",\n  "max_len": 10,\n}');
    await page.click("#send");
    await page.waitForSelector("#body-error:not([hidden])");
    expect(await page.textContent("#body-error")).toMatch(/line 4, column 1/);
    expect(await page.getAttribute("#body", "aria-invalid")).toBe("true");
    await page.fill("#body", "[1, 2]");
    await page.click("#send");
    expect(await page.textContent("#body-error")).toContain("must be a JSON object");
    expect(sent).toBe(0);
    expect(await page.textContent("#status")).toBe("Nothing sent yet.");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("the raw 402 JSON is folded behind a details toggle; a 200 shows open", async () => {
    const { page } = await open("/applet");
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    expect(await page.getAttribute("#raw", "open")).toBeNull();
    expect(await page.isVisible("#output")).toBe(false);
    await page.click("#raw summary");
    expect(await page.isVisible("#output")).toBe(true);
    // The body is the v1 form of the offer (the v2 one is in the PAYMENT-REQUIRED header).
    expect(JSON.parse((await page.textContent("#output")) ?? "{}")).toMatchObject({ x402Version: 1 });
    await page.close();
  });

  it("a 402's offer is dropped once the skill or the body changes (paying it would run the old request)", async () => {
    const { page, errors } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/slugify");
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    // A key typed now still pays this same request: the offer stays.
    await page.fill("#key", "mk_typed_but_unused");
    expect(await page.isVisible("#challenge")).toBe(true);
    await page.fill("#key", "");
    await page.fill("#body", JSON.stringify({ text: "Another Text" }));
    expect(await page.isHidden("#challenge")).toBe(true);
    expect(await page.textContent("#status")).toBe("The request changed: send it to see its price.");
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    await page.selectOption("#skill", "/api/skills/sha256");
    expect(await page.isHidden("#challenge")).toBe(true);
    expect(errors.filter((e) => !e.includes("402"))).toEqual([]);
    await page.close();
  });

  it("a body edited while its request is on the way gets no offer for the old text", async () => {
    const { page } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/slugify");
    // Hold the answer until the body has been edited.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    await page.route("**/api/skills/slugify", async (route) => {
      await held;
      await route.continue();
    });
    await page.click("#send");
    await page.fill("#body", JSON.stringify({ text: "Edited Meanwhile" }));
    release();
    await page.waitForFunction(() => document.querySelector("#status")?.textContent?.startsWith("402"));
    expect(await page.isHidden("#challenge")).toBe(true);
    await page.close();
  });

  it("each docs page's Buy button shows the server's pack and opens Stripe's page for it", async () => {
    for (const id of ["slugify", "osint_graph"]) {
      const s = catalog.find((x) => x.id === id) as CatalogSkill;
      // The server's numbers for this pack, from the API the button calls.
      const quote = (await (
        await fetch(`${stack.base_url}/api/cardpay/checkout`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ skill_id: id }),
        })
      ).json()) as { calls: number; amount_usd: number };
      const { page, errors } = await open(`/docs/${s.doc_slug}`);
      const label = `Buy ${quote.calls} calls for $${quote.amount_usd.toFixed(2)}`;
      expect(await page.textContent("#buy")).toBe(label);
      await page.click("#buy");
      await page.waitForURL((u) => u.href.startsWith(stack.stripe_api_base));
      expect(await page.textContent("#pay")).toContain(`$${quote.amount_usd.toFixed(2)}`);
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it("next to a 402 the applet offers the card pack; buying it runs the request first and shows the result", async () => {
    const { page, errors } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/slugify");
    await page.fill("#body", JSON.stringify({ text: "Bought In The Applet" }));
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    expect(await page.textContent("#buy")).toBe("Buy 170 calls for $0.51");
    await page.click("#buy");
    await page.waitForURL((u) => u.href.startsWith(stack.stripe_api_base));
    await page.click("#pay");
    await page.waitForURL(/\/checkout\/success\?session_id=/);
    await page.click("#reveal");
    expect(await page.textContent("#api-key")).toMatch(/^\s*mk_/);
    expect(await page.textContent("body")).toContain("bought-in-the-applet");
    // Chromium logs the 402 the applet asked for; nothing else may fail.
    expect(errors.filter((e) => !e.includes("402"))).toEqual([]);
    await page.close();
  });

  it("a checkout cancelled on Stripe's page leads back to the applet with the body as typed", async () => {
    const { page, errors } = await open("/applet");
    await page.selectOption("#skill", "/api/skills/slugify");
    const typed = '{\n  "text": "Typed Before The Checkout"\n}';
    await page.fill("#body", typed);
    await page.click("#send");
    await page.waitForSelector("#challenge:not([hidden])");
    await page.click("#buy");
    await page.waitForURL((u) => u.href.startsWith(stack.stripe_api_base));
    await page.click("#cancel");
    await page.waitForURL(/\/checkout\/cancel\?skill_id=slugify/);
    await page.click("text=Back to the applet");
    await page.waitForURL(/\/applet\?skill=slugify/);
    expect(await page.inputValue("#skill")).toBe("/api/skills/slugify");
    expect(await page.inputValue("#body")).toBe(typed);
    // The draft is spent: opening the applet for the skill again shows its example.
    await page.reload();
    expect(JSON.parse(await page.inputValue("#body"))).toEqual({
      text: "Crème Brûlée: Straße & Smørrebrød!",
      max_len: 80,
    });
    expect(errors.filter((e) => !e.includes("402"))).toEqual([]);
    await page.close();
  });

  it("pays one call with an injected EIP-1193 wallet (anvil key): the buyer's USDC drops by the price", async () => {
    const buyer = stack.buyers[7] as { address: string };
    const rpc = async (method: string, params: unknown[] = []) => {
      const res = await fetch(stack.rpc_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      const out = (await res.json()) as { result?: unknown; error?: { message: string } };
      if (out.error) throw new Error(out.error.message);
      return out.result;
    };
    const { encodeFunctionData, decodeFunctionResult } = await import("viem");
    const balance = async () =>
      decodeFunctionResult({
        abi: erc20Abi,
        functionName: "balanceOf",
        data: (await rpc("eth_call", [
          {
            to: stack.usdc_address,
            data: encodeFunctionData({
              abi: erc20Abi,
              functionName: "balanceOf",
              args: [buyer.address as `0x${string}`],
            }),
          },
          "latest",
        ])) as `0x${string}`,
      });
    const seen: string[] = [];
    const page = await browser.newPage();
    const errors = watchErrors(page);
    // The wallet: accounts are the anvil test buyer; every other call, signing included
    // (eth_signTypedData_v4), goes to the local chain's RPC, where anvil holds that test key.
    await page.exposeFunction("__wallet", async (method: string, params: unknown[]) => {
      seen.push(method);
      if (method === "eth_requestAccounts" || method === "eth_accounts") return [buyer.address];
      return rpc(method, params);
    });
    await page.addInitScript(() => {
      const w = window as unknown as {
        __wallet: (m: string, p: unknown[]) => Promise<unknown>;
        ethereum: unknown;
      };
      w.ethereum = {
        request: ({ method, params }: { method: string; params?: unknown[] }) =>
          w.__wallet(method, params ?? []),
        on: () => {},
        removeListener: () => {},
      };
    });
    await page.goto(`${stack.base_url}/applet`);
    await page.selectOption("#skill", "/api/skills/token-count");
    await page.fill("#body", JSON.stringify({ text: "paid by a browser wallet" }));
    await page.click("#send");
    await page.waitForSelector("#pay-wallet:not([hidden])");
    expect(await page.textContent("#pay-wallet")).toBe("Pay $0.004 with browser wallet");
    const before = await balance();
    await page.click("#pay-wallet");
    await page.waitForFunction(() => document.getElementById("status")?.className === "status-ok", null, {
      timeout: 60_000,
    });
    expect(seen).toContain("eth_signTypedData_v4");
    const shown = JSON.parse((await page.textContent("#output")) ?? "{}");
    expect(shown).toMatchObject({ skill: "token_count", ok: true });
    const tx = ((await page.textContent("#r-tx")) ?? "").trim();
    expect(tx).toMatch(/^0x[0-9a-f]{64}$/);
    expect(((await page.textContent("#r-payer")) ?? "").toLowerCase()).toBe(buyer.address.toLowerCase());
    const receipt = (await rpc("eth_getTransactionReceipt", [tx])) as { status: string };
    expect(receipt.status).toBe("0x1");
    expect(before - (await balance())).toBe(4000n);
    await page.screenshot({ path: path.join(SCREENSHOTS, "applet-wallet-paid.png"), fullPage: true });
    expect(errors.filter((e) => !e.includes("402"))).toEqual([]);
    await page.close();
  });

  it("a page on another origin can read the catalog and get a skill's 402 with its headers (CORS)", async () => {
    const page = await browser.newPage();
    // Another origin: a blank page from a server of this test on another loopback port (a page
    // Playwright fulfils itself counts as a public address, and Chromium's local-network rules
    // would then block it before CORS is even asked).
    const { createServer } = await import("node:http");
    const server = createServer((_, res) => res.end("<h1>other origin</h1>")).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const { port } = server.address() as { port: number };
    await page.goto(`http://127.0.0.1:${port}/`);
    const out = await page.evaluate(async (base) => {
      const catalog = await fetch(`${base}/api/catalog`).catch((e) => {
        throw new Error(`catalog: ${e}`);
      });
      const paid = await fetch(`${base}/api/skills/sha256`, {
        method: "POST",
        headers: { "content-type": "application/json", "payment-signature": "bm90LWEtcGF5bWVudA==" },
        body: '{"text":"a"}',
      }).catch((e) => {
        throw new Error(`paid: ${e}`);
      });
      const unpaid = await fetch(`${base}/api/skills/sha256`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"text":"a"}',
      });
      let admin = "readable";
      try {
        await fetch(`${base}/api/admin/payments`, { headers: { authorization: "Bearer x" } });
      } catch {
        admin = "blocked";
      }
      return {
        catalog: catalog.status,
        paid: paid.status,
        required: unpaid.headers.get("payment-required") !== null,
        admin,
      };
    }, stack.base_url);
    expect(out).toEqual({ catalog: 200, paid: 402, required: true, admin: "blocked" });
    await page.close();
    server.close();
  });
});
