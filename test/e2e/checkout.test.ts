import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, SCREENSHOTS, watchErrors } from "./browser";

const stack = inject("stack") as { base_url: string; stripe_api_base: string; stack_dir: string };
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe("card checkout in a real browser, against the Stripe emulator", () => {
  it("cancel page links back to the skill's docs", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    await page.goto(`${stack.base_url}/checkout/cancel?skill_id=json_sort`);
    expect(await page.textContent("h1")).toBe("Checkout cancelled");
    await page.click("text=Back to JSON key sort");
    expect(new URL(page.url()).pathname).toBe("/docs/json-sort");
    await page.screenshot({ path: path.join(SCREENSHOTS, "checkout-cancel.png") });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("pay on the hosted page, land on success, read the key once and spend it on a call", async () => {
    const created = await fetch(`${stack.base_url}/api/cardpay/checkout`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ skill_id: "slugify", payload: { text: "Paid By Card" } }),
    });
    expect(created.status).toBe(200);
    const checkout = (await created.json()) as {
      session_id: string;
      checkout_url: string;
      calls: number;
      amount_usd: number;
    };
    expect(checkout).toMatchObject({ calls: 170, amount_usd: 0.51 });
    expect(checkout.checkout_url.startsWith(stack.stripe_api_base)).toBe(true);

    const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    const errors = watchErrors(page);
    await page.goto(checkout.checkout_url);
    expect(await page.textContent("#pay")).toContain("$0.51");
    await page.screenshot({ path: path.join(SCREENSHOTS, "checkout-stripe-emulator.png") });
    await page.click("#pay");
    await page.waitForURL(/\/checkout\/success\?session_id=/);
    expect(new URL(page.url()).searchParams.get("session_id")).toBe(checkout.session_id);
    expect(await page.textContent("h1")).toBe("Payment received");
    const key = (await page.textContent("#api-key"))?.trim() ?? "";
    expect(key).toMatch(/^mk_[A-Za-z0-9_-]{20,}$/);
    // The payload ran as the first call and spent one credit.
    expect(await page.textContent("main")).toContain("paid-by-card");
    expect(await page.textContent("#calls-left")).toBe("169");
    await page.screenshot({ path: path.join(SCREENSHOTS, "checkout-success.png"), fullPage: true });
    expect(errors).toEqual([]);

    // Shown once: a reload no longer shows it.
    await page.reload();
    expect(await page.locator("#api-key").count()).toBe(0);
    await page.close();

    const call = await fetch(`${stack.base_url}/api/skills/slugify`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ text: "Card Credits Work" }),
    });
    expect(call.status).toBe(200);
    expect(((await call.json()) as { slug: string }).slug).toBe("card-credits-work");
    expect(call.headers.get("x-credits-remaining")).toBe("168");
    const balance = await fetch(`${stack.base_url}/api/credits`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(await balance.json()).toMatchObject({ skill_id: "slugify", calls_total: 170, calls_left: 168 });
  });

  it("a key with no credits left gets a 402 that also offers x402", async () => {
    // Seed an exhausted key straight into the stack's local D1, as a spent pack would leave it.
    const key = "mk_e2e_exhausted_key_000000000000";
    const hash = createHash("sha256").update(key).digest("hex");
    execFileSync(
      "node_modules/.bin/wrangler",
      [
        "d1",
        "execute",
        "DB",
        "--local",
        "--persist-to",
        path.join(stack.stack_dir, "state"),
        "--command",
        `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES ('e2e-empty', '${hash}', 'sha256', 1, 0, 0)`,
      ],
      { stdio: "ignore" },
    );
    const res = await fetch(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ text: "x" }),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { error: string; accepts: { amount: string }[] };
    expect(body.error).toMatch(/no sha256 credits left/);
    expect(body.accepts[0]?.amount).toBe("3000");
    expect(res.headers.get("payment-required")).toBeTruthy();
  });
});
