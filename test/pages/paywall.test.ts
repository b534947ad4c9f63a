import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { BROWSER, ORIGIN, paidEnv } from "../helpers";

const B = ORIGIN;

async function paywall(path: string, body: string, over: Record<string, string> = {}) {
  const res = await createApp().fetch(
    new Request(`${B}${path}`, { method: "POST", body, headers: BROWSER }),
    { ...paidEnv(), ...over },
  );
  return { res, html: await res.text() };
}

describe("the 402 page a browser gets", () => {
  it("offers no card checkout where card payments are off (no Stripe key)", async () => {
    const { res, html } = await paywall("/api/skills/slugify", '{"text":"a"}', { STRIPE_SECRET_KEY: "" });
    expect(res.status).toBe(402);
    expect(html).toContain('<a href="/docs/slugify">How to call Slugify</a>');
    expect(html).not.toContain("by card");
    // And the same deployment with card payments on links it (the gate is built per configuration).
    expect((await paywall("/api/skills/slugify", '{"text":"a"}')).html).toContain(
      "Buy a pack of calls by card",
    );
  });

  it("is a whole small page: lang, viewport, the price the 402 offers, the skill's docs and its card checkout", async () => {
    const { res, html } = await paywall("/api/skills/slugify", '{"text":"a"}');
    expect(res.status).toBe(402);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(html).toMatch(/^<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">/);
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(html).toContain("<title>Payment required · Agent Skills Marketplace</title>");
    // The price as the PAYMENT-REQUIRED header offers it.
    const offer = JSON.parse(atob(res.headers.get("payment-required") ?? "")) as {
      accepts: { amount: string; network: string }[];
    };
    expect(offer.accepts[0]?.amount).toBe("3000");
    expect(html).toContain(
      `<strong>$0.003</strong> (3000 atomic units of USDC on ${offer.accepts[0]?.network})`,
    );
    expect(html).toContain('<a href="/docs/slugify">How to call Slugify</a>');
    expect(html).toContain('<a href="/docs/slugify#card-credits">Buy a pack of calls by card</a>');
    // Under the pages' CSP: no script, no inline style.
    expect(html).not.toMatch(/<script|\sstyle=|\son\w+=/i);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    // The docs page has the section the card link opens.
    const docs = await (await createApp().fetch(new Request(`${B}/docs/slugify`), paidEnv())).text();
    expect(docs).toContain('<h3 id="card-credits">With card credits</h3>');
  });

  it("a partner try route (x402 only) links the docs and offers no card", async () => {
    const { res, html } = await paywall("/api/partners/textkit/try/pii-redactor", '{"text":"a"}');
    expect(res.status).toBe(402);
    expect(html).toContain('<html lang="en">');
    expect(html).toMatch(/<strong>\$0\.\d+<\/strong>/);
    expect(html).toContain('<a href="/docs">The docs</a>');
    expect(html).not.toContain("by card");
  });
});
