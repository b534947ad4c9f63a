import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { skills } from "../../src/skills/registry";
import { call } from "../helpers";
import { seedSession } from "../payments/checkout-helpers";

const html = { headers: { accept: "text/html" } };

describe("every page is a standards-mode HTML document", () => {
  it("starts with <!DOCTYPE html> (without it browsers render in quirks mode)", async () => {
    const paths = [
      "/",
      "/applet",
      "/docs",
      "/docs/mcp",
      "/docs/reliability",
      ...skills.map((s) => `/docs/${s.slug}`),
      "/checkout/cancel?skill_id=sha256",
      `/checkout/success?session_id=${await seedSession("sha256", 170)}`,
      "/checkout/success?session_id=cs_test_unknown",
      "/no-such-page",
    ];
    const responses = await Promise.all(paths.map(async (p) => [p, await call(p, html)] as const));
    const admin = await createApp().fetch(new Request("https://skills.test/admin", html), {
      ...env,
      ADMIN_TOKEN: "t0ken-admin-0123456789abcdefghij",
    });
    for (const [p, res] of [...responses, ["/admin (sign-in)", admin] as const]) {
      expect(res.headers.get("content-type"), p).toContain("text/html");
      expect((await res.text()).slice(0, 31), p).toBe('<!DOCTYPE html><html lang="en">');
    }
  }, 30_000);
});

describe("nothing widens a phone's page", () => {
  it("the reliability table scrolls inside .table-wrap; a checkout session id in running text may break anywhere", async () => {
    const reliability = await (await call("/docs/reliability", html)).text();
    // A keyboard scrolls only what has the focus: the box is a named tab stop.
    expect(reliability).toMatch(
      /<section class="table-wrap" tabindex="0" aria-label="[^"]+"><table class="admin-table" id="figures">/,
    );
    const open = await seedSession("sha256", 170, undefined, false);
    for (const id of [open, "cs_test_unknown_session_id_as_long_as_a_real_one_000000000000000000"]) {
      const page = await (await call(`/checkout/success?session_id=${id}`, html)).text();
      expect(page, id).toContain(`<code class="long-id">${id}</code>`);
      expect(page, id).not.toContain(`<code>${id}</code>`);
    }
    // The stylesheet as Workers Assets serves it (static/assets/site.css).
    const css = await (await env.ASSETS.fetch("https://skills.test/assets/site.css")).text();
    expect(css).toMatch(/code\.long-id \{ overflow-wrap: anywhere; \}/);
  });
});
