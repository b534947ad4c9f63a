import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { publicConfig } from "../../src/config";
import { signed } from "./checkout-helpers";

// A TOML table or array (or JSON set in the dashboard) in a Stripe secret is no secret: card
// payments read it as unset everywhere, as config.ts's cardpay switch does (src/var-text.ts).
const NOT_TEXT: unknown[] = [[], { key: "x" }];

async function cardRoutes(e: object) {
  const app = createApp();
  const checkout = await app.fetch(
    new Request("https://skills.test/api/cardpay/checkout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"skill_id":"sha256"}',
    }),
    e,
  );
  const { payload, header } = await signed({ id: "evt_x", type: "ping", data: { object: {} } });
  const webhook = await app.fetch(
    new Request("https://skills.test/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    }),
    e,
  );
  return { checkout, webhook };
}

describe("a Stripe secret that is not text is unset", () => {
  it.each(["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"])(
    "%s as a table or array: cards off in the catalog, checkout and webhook 503 not configured",
    async (name) => {
      for (const value of NOT_TEXT) {
        const e = { ...env, CARDPAY_ENABLED: "true", [name]: value } as typeof env;
        expect(publicConfig(e, "https://skills.test/").cardpayEnabled, JSON.stringify(value)).toBe(false);
        const { checkout, webhook } = await cardRoutes(e);
        expect(checkout.status).toBe(503);
        expect((await checkout.json<{ detail: string }>()).detail).toMatch(
          /^Card payments are not configured/,
        );
        expect(webhook.status).toBe(503);
        expect((await webhook.json<{ detail: string }>()).detail).toMatch(
          /^Card payments are not configured/,
        );
      }
    },
  );

  it("the configured secrets (a control): cards on", () => {
    expect(publicConfig(env, "https://skills.test/").cardpayEnabled).toBe(true);
  });
});
