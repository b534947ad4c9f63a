import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { BROWSER, mcpToolCall, paidEnv, type ToolResult } from "../helpers";
import { signed } from "../payments/checkout-helpers";

const without = (name: string, base: Record<string, unknown> = paidEnv()) => {
  const e = { ...base };
  delete e[name];
  return e;
};
const sha = () =>
  new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' });

describe("a storage binding missing from the deployment", () => {
  it.each(["DB", "KV"])(
    "without %s a call is a 503 naming it, paid or free, over HTTP and MCP",
    async (name) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      // The line is logged once per isolate and missing set (http/log-once.ts), and the files of
      // this project share one isolate: a call missing both first makes `name` alone a new set,
      // whatever an earlier file logged.
      await createApp().fetch(sha(), without("KV", without("DB")));
      errors.mockClear();
      for (const e of [without(name), without(name, { ...env, FREE_BETA: "true" })]) {
        const res = await createApp().fetch(sha(), e);
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({
          detail: `This deployment is missing its ${name} storage binding: calls are refused until the operator restores it; nothing was charged`,
        });
        const mcp = await createApp().fetch(mcpToolCall("sha256", { text: "a" }), e);
        const tool = (await mcp.json<{ result: ToolResult }>()).result;
        expect(tool.isError).toBe(true);
        expect(tool.content[0]?.text).toContain(`HTTP 503): This deployment is missing its ${name}`);
      }
      const tryCall = await createApp().fetch(
        new Request("https://skills.test/api/partners/pricefeed/try/price_coin?coin=bitcoin"),
        without(name),
      );
      expect(tryCall.status).toBe(503);
      const lines = errors.mock.calls.map((c) => String(c[0]));
      errors.mockRestore();
      expect(lines.some((l) => l.includes("storage binding missing: calls refused"))).toBe(true);
    },
  );

  it.each(["DB", "KV"])(
    "without %s no card pack is sold (its keyed session lives in KV) and the webhook asks Stripe to deliver again: 503",
    async (name) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const checkout = await createApp().fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"skill_id":"sha256"}',
        }),
        without(name, { ...env }),
      );
      expect(checkout.status).toBe(503);
      expect(await checkout.json()).toEqual({
        detail: `This deployment is missing its ${name} storage binding: calls are refused until the operator restores it; nothing was charged`,
      });
      const { payload, header } = await signed({ id: "evt_bindings", type: "ping", data: { object: {} } });
      const webhook = await createApp().fetch(
        new Request("https://skills.test/api/cardpay/webhook", {
          method: "POST",
          headers: { "stripe-signature": header },
          body: payload,
        }),
        without(name, { ...env }),
      );
      errors.mockRestore();
      expect(webhook.status).toBe(503);
      expect((await webhook.json<{ detail: string }>()).detail).toBe(
        `This deployment is missing its ${name} storage binding: events are refused until the operator restores it; Stripe delivers them again`,
      );
    },
  );

  it.each(["DB", "KV"])(
    "without %s a buyer's reads (GET /api/credits and the success page without DB, its Reveal) are a 503 naming it, never a 500",
    async (name) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const credits = () =>
        new Request("https://skills.test/api/credits", {
          headers: { authorization: `Bearer mk_${"a".repeat(40)}` },
        });
      const page = () => new Request("https://skills.test/checkout/success?session_id=cs_test_abc");
      // A balance and the page read D1 only: without KV an unknown key or session is still told so.
      if (name === "KV") {
        expect((await createApp().fetch(credits(), without(name, { ...env }))).status).toBe(401);
        expect((await createApp().fetch(page(), without(name, { ...env }))).status).toBe(404);
      }
      const requests = [
        ...(name === "DB" ? [credits(), page()] : []),
        new Request("https://skills.test/checkout/success?session_id=cs_test_abc", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "token=abc",
        }),
      ];
      for (const req of requests) {
        const res = await createApp().fetch(req, without(name, { ...env }));
        expect(res.status, `${req.method} ${req.url}`).toBe(503);
        expect(await res.json()).toEqual({
          detail: `This deployment is missing its ${name} storage binding: it cannot be read until the operator restores it; credits already bought are kept`,
        });
      }
      errors.mockRestore();
    },
  );

  it.each([
    ["TEXT/HTML", "html"],
    ["text/html;q=0", "json"],
    ["application/json, text/html;q=0.1", "json"],
    ["text/html;q=0.5, application/json;q=0.4", "html"],
    ["*/*", "json"],
    ["", "json"],
  ])(
    "without DB the success page's choice of a page or JSON reads Accept %j's q-values and case: %s",
    async (accept, kind) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await createApp().fetch(
        new Request("https://skills.test/checkout/success?session_id=cs_test_abc", {
          headers: accept ? { accept } : {},
        }),
        without("DB", { ...env }),
      );
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toMatch(kind === "html" ? /^text\/html/ : /^application\/json/);
      errors.mockRestore();
    },
  );

  it.each(["DB", "KV"])(
    "without %s the success page a card buyer's browser lands on is a 503 page saying the payment is safe, naming no binding; JSON clients keep the JSON",
    async (name) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const url = "https://skills.test/checkout/success?session_id=cs_test_abc";
      const reveal = (headers: Record<string, string>) =>
        new Request(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
          body: "token=abc",
        });
      // The view reads D1 only; the Reveal needs both (it may run the first call).
      const browser = [...(name === "DB" ? [new Request(url, { headers: BROWSER })] : []), reveal(BROWSER)];
      for (const req of browser) {
        const res = await createApp().fetch(req, without(name, { ...env }));
        expect(res.status, req.method).toBe(503);
        expect(res.headers.get("content-type")).toMatch(/^text\/html/);
        expect(res.headers.get("cache-control")).toBe("no-store");
        expect(res.headers.get("x-robots-tag")).toBe("noindex, nofollow");
        const page = await res.text();
        // The site's layout (its stylesheet and header), the reassurance and the way back.
        expect(page).toContain('<link rel="stylesheet" href="/assets/site.css"/>');
        expect(page).toContain("Your payment is safe");
        expect(page).toContain('href="/checkout/success?session_id=cs_test_abc"');
        expect(page).not.toMatch(/binding|\bDB\b|\bKV\b/);
        // The page says to try again in a few minutes: so does the header.
        expect(res.headers.get("retry-after")).toBe("120");
      }
      const json = await createApp().fetch(reveal({ accept: "application/json" }), without(name, { ...env }));
      expect(json.status).toBe(503);
      expect(json.headers.get("retry-after")).toBe("120");
      expect((await json.json<{ detail: string }>()).detail).toMatch(
        new RegExp(`^This deployment is missing its ${name} storage binding`),
      );
      errors.mockRestore();
    },
  );
});
