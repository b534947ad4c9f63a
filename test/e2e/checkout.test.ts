import { createHash } from "node:crypto";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launch, SCREENSHOTS, watchErrors } from "./browser";
import { d1, stripeEmulator } from "./stack-tools";

const stack = inject("stack") as { base_url: string; stripe_api_base: string; stack_dir: string };
let browser: Browser;

beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

/** A checkout of sha256's smallest pack, created through the app. */
async function newCheckout() {
  const created = await fetch(`${stack.base_url}/api/cardpay/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ skill_id: "sha256" }),
  });
  return (await created.json()) as { session_id: string; checkout_url: string };
}

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
    // Showing the page reveals nothing: the key waits for the button.
    expect(await page.locator("#api-key").count()).toBe(0);
    expect(await page.textContent("#reveal")).toContain("Reveal my key");
    // A link scanner's HEAD and a prefetcher's GET before the click change nothing.
    const successUrl = page.url();
    const head = await fetch(successUrl, { method: "HEAD" });
    expect(head.status).toBe(200);
    const prefetch = await fetch(successUrl, { headers: { "sec-purpose": "prefetch" } });
    expect(await prefetch.text()).not.toContain('id="api-key"');
    await page.screenshot({
      path: path.join(SCREENSHOTS, "checkout-success-before-reveal.png"),
      fullPage: true,
    });

    // A second tab on the same page, opened before the reveal, to click the button a second time.
    const other = await browser.newPage();
    await other.goto(successUrl);

    await page.click("#reveal");
    await page.waitForSelector("#api-key");
    const key = (await page.textContent("#api-key"))?.trim() ?? "";
    expect(key).toMatch(/^mk_[A-Za-z0-9_-]{20,}$/);
    // The payload ran as the first call (after the webhook's answer) and spent one credit.
    expect(await page.textContent("main")).toContain("paid-by-card");
    expect(await page.textContent("#calls-left")).toBe("169");
    await page.screenshot({ path: path.join(SCREENSHOTS, "checkout-success.png"), fullPage: true });

    // The second click says it was already shown.
    await other.click("#reveal");
    await other.waitForSelector("#key-gone");
    expect(await other.textContent("#key-gone")).toContain("already shown once");
    expect(await other.locator("#api-key").count()).toBe(0);
    await other.close();
    // And a reload of the success page no longer offers it.
    await page.goto(successUrl);
    expect(await page.locator("#api-key").count()).toBe(0);
    expect(await page.locator("#reveal").count()).toBe(0);
    expect(errors).toEqual([]);
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

  it("the success page waits for the payment without reloading: it updates in place and focuses Reveal once paid", async () => {
    const { session_id, checkout_url } = await newCheckout();
    const successUrl = `${stack.base_url}/checkout/success?session_id=${session_id}`;
    const page = await browser.newPage();
    const errors = watchErrors(page);
    // Loads of the page itself (a reload sent a screen reader back to the top every 3 s), and the
    // page's own checks: fetches of the same GET page, whose answers must never carry the key.
    let loads = 0;
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) loads++;
    });
    const checks: Promise<string>[] = [];
    page.on("response", (r) => {
      if (r.request().resourceType() === "fetch" && r.url().includes("/checkout/success"))
        checks.push(r.text());
    });
    const res = await page.goto(successUrl);
    expect(res?.headers().refresh).toBeUndefined();
    expect(await page.textContent("h1")).toBe("Waiting for the payment");
    expect(await page.textContent("#refresh-status")).toBe("Checking for updates every 3 seconds.");
    expect(await page.textContent("#refresh-stop")).toBe("Stop checking");
    // A keyboard user's place survives the checks.
    await page.focus("#refresh-stop");
    await page.waitForTimeout(8_000);
    expect(loads).toBe(1);
    expect(checks.length).toBeGreaterThanOrEqual(2);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("refresh-stop");

    // The buyer pays in another tab; this one finds out by itself.
    const payer = await browser.newPage();
    await payer.goto(checkout_url);
    await payer.click("#pay");
    await payer.waitForURL(/\/checkout\/success/);
    await payer.close();
    await page.waitForSelector("#reveal", { timeout: 20_000 });
    expect(loads).toBe(1);
    expect(await page.textContent("h1")).toBe("Payment received");
    expect(await page.title()).toContain("Payment received");
    // The buyer's next action appeared: it has the focus, and the status line says what changed.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("reveal");
    expect(await page.textContent("#refresh-status")).toBe("Updated: Payment received");
    expect(await page.isVisible("#refresh-stop")).toBe(false);
    // Final: no more checks.
    const checked = checks.length;
    await page.waitForTimeout(4_000);
    expect(checks.length).toBe(checked);
    for (const body of await Promise.all(checks)) expect(body).not.toContain('id="api-key"');
    await page.screenshot({ path: path.join(SCREENSHOTS, "checkout-success-updated.png"), fullPage: true });
    // The Reveal button that came with the update is guarded (sent once) and shows the key.
    await page.keyboard.press("Enter");
    await page.waitForSelector("#api-key");
    expect(((await page.textContent("#api-key")) ?? "").trim()).toMatch(/^mk_/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("the checks can be stopped and resumed; without JavaScript the page reloads itself instead", async () => {
    const { session_id } = await newCheckout();
    const successUrl = `${stack.base_url}/checkout/success?session_id=${session_id}`;
    const page = await browser.newPage();
    const errors = watchErrors(page);
    let checks = 0;
    page.on("request", (r) => {
      if (r.resourceType() === "fetch" && r.url().includes("/checkout/success")) checks++;
    });
    await page.goto(successUrl);
    await page.click("#refresh-stop");
    expect(await page.textContent("#refresh-stop")).toBe("Resume checking");
    expect(await page.textContent("#refresh-status")).toContain("Stopped checking");
    const stopped = checks;
    await page.waitForTimeout(7_000);
    expect(checks).toBe(stopped);
    await page.click("#refresh-stop");
    expect(await page.textContent("#refresh-stop")).toBe("Stop checking");
    await expect.poll(() => checks, { timeout: 10_000 }).toBeGreaterThan(stopped);
    expect(errors).toEqual([]);
    await page.close();

    // Scripts off: the <noscript> meta refresh reloads the page every 3 s, as the header did.
    const context = await browser.newContext({ javaScriptEnabled: false });
    const plain = await context.newPage();
    let loads = 0;
    plain.on("framenavigated", (f) => {
      if (f === plain.mainFrame()) loads++;
    });
    await plain.goto(successUrl);
    expect(await plain.isVisible("#refresh-bar")).toBe(false);
    expect(await plain.textContent("h1")).toBe("Waiting for the payment");
    await expect.poll(() => loads, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await context.close();
  });

  it("a refund and a dispute delivered by the emulator take back, freeze and restore the pack's credits", async () => {
    const { session_id, checkout_url } = await newCheckout();
    const page = await browser.newPage();
    await page.goto(checkout_url);
    await page.click("#pay");
    await page.waitForURL(/\/checkout\/success/);
    await page.click("#reveal");
    const key = ((await page.textContent("#api-key")) ?? "").trim();
    await page.close();
    const auth = { authorization: `Bearer ${key}` };
    const balance = async () =>
      (await (await fetch(`${stack.base_url}/api/credits`, { headers: auth })).json()) as {
        calls_left: number;
        status: string;
      };
    const until = async (ok: (b: { calls_left: number; status: string }) => boolean) => {
      for (let i = 0; i < 100; i++) {
        const b = await balance();
        if (ok(b)) return b;
        await new Promise((r) => setTimeout(r, 100));
      }
      return balance();
    };
    const emulator = (p: string, form: Record<string, string>) =>
      stripeEmulator(stack.stripe_api_base, "POST", p, form);
    const session = await stripeEmulator(stack.stripe_api_base, "GET", `/v1/checkout/sessions/${session_id}`);
    const pi = String(session.payment_intent);
    expect(pi).toMatch(/^pi_/);
    const call = () =>
      fetch(`${stack.base_url}/api/skills/sha256`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ text: "x" }),
      });

    // $0.17 of $0.51 refunded: a third of the 170 calls (57, rounded up) is taken back.
    await emulator("/v1/refunds", { payment_intent: pi, amount: "17" });
    expect(await until((b) => b.calls_left < 170)).toMatchObject({ calls_left: 113, status: "active" });

    const dispute = await emulator("/_emulator/disputes", { payment_intent: pi });
    expect(await until((b) => b.status === "frozen")).toMatchObject({ status: "frozen" });
    expect((await call()).status).toBe(403);
    await emulator(`/_emulator/disputes/${dispute.id}/close`, { status: "won" });
    expect(await until((b) => b.status === "active")).toMatchObject({ calls_left: 113 });
    const paid = await call();
    expect(paid.status).toBe(200);
    expect(paid.headers.get("x-credits-remaining")).toBe("112");
  });

  it("a key with no credits left gets a 402 that also offers x402", async () => {
    // Seed an exhausted key straight into the stack's local D1, as a spent pack would leave it.
    const key = "mk_e2e_exhausted_key_000000000000";
    const hash = createHash("sha256").update(key).digest("hex");
    d1(
      stack.stack_dir,
      `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES ('e2e-empty', '${hash}', 'sha256', 1, 0, 0)`,
    );
    const res = await fetch(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ text: "x" }),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as { error: string; accepts: { maxAmountRequired: string }[] };
    expect(body.error).toMatch(/no sha256 credits left/);
    expect(body.accepts[0]?.maxAmountRequired).toBe("3000");
    expect(res.headers.get("payment-required")).toBeTruthy();
  });
});
