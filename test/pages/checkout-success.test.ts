import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call } from "../helpers";
import { deliver, seedSession, sessionEvent } from "../payments/checkout-helpers";

const page = async (id: string) => (await call(`/checkout/success?session_id=${id}`)).text();

describe("the Reveal my key form", () => {
  it("is sent once: the page loads buy.js, which disables the button and says Revealing… on submit", async () => {
    const id = await seedSession("sha256", 170);
    await deliver(await sessionEvent("checkout.session.completed", id));
    const html = await page(id);
    const form = /<form method="post"[^>]*>[\s\S]*?<\/form>/.exec(html)?.[0] ?? "";
    expect(form).toContain('id="reveal"');
    expect(form).toContain('data-once="Revealing…"');
    expect(html).toContain('<script src="/assets/buy.js" defer="">');
    // The script as Workers Assets serves it guards every data-once form (src/browser/once-form.ts).
    const buyJs = await (await env.ASSETS.fetch("https://skills.test/assets/buy.js")).text();
    expect(buyJs).toContain("form[data-once]");
  });
});
