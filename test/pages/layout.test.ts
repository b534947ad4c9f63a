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
      ADMIN_TOKEN: "t0ken-admin",
    });
    for (const [p, res] of [...responses, ["/admin (sign-in)", admin] as const]) {
      expect(res.headers.get("content-type"), p).toContain("text/html");
      expect((await res.text()).slice(0, 31), p).toBe('<!DOCTYPE html><html lang="en">');
    }
  }, 30_000);
});
