import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie, BROWSER, ORIGIN } from "../helpers";

const token = "admin-bindings-t0ken-0123456789abcdef";
const full = { ...env, ADMIN_TOKEN: token };
const without = (name: string) => {
  const e: Record<string, unknown> = { ...full };
  delete e[name];
  return e;
};
const send = (path: string, init: RequestInit, e: object) =>
  createApp().fetch(new Request(`${ORIGIN}${path}`, { redirect: "manual", ...init }), e);
const refusal = (name: string) =>
  `This deployment is missing its ${name} storage binding: admin reads and decisions are refused until the operator restores it; nothing was changed`;

afterEach(() => vi.restoreAllMocks());

describe.each(["DB", "KV"])("admin without the %s binding", (name) => {
  it("the API answers a maintainer 503 naming it (it was a 500), and a caller without the token 401 as ever", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const bearer = { authorization: `Bearer ${token}` };
    const requests: [string, RequestInit][] = [
      ["/api/admin/payments", { headers: bearer }],
      ["/api/admin/payouts", { headers: bearer }],
      // With an RPC to read: the run itself would have failed on the database, a generic 503.
      ["/api/admin/reconcile", { method: "POST", headers: bearer }],
      [
        "/api/admin/resolve/refunds/req-admin-bindings",
        {
          method: "POST",
          headers: { ...bearer, "content-type": "application/json" },
          body: JSON.stringify({ tx_hash: `0x${"ab".repeat(32)}`, amount_micro: 1000 }),
        },
      ],
    ];
    const e = { ...without(name), RPC_URL: "http://127.0.0.1:9" };
    for (const [path, init] of requests) {
      const res = await send(path, init, e);
      expect(res.status, path).toBe(503);
      expect(await res.json(), path).toEqual({ detail: refusal(name) });
      const anonymous = await send(path, { method: init.method }, e);
      expect(anonymous.status, path).toBe(401);
      expect(await anonymous.text()).not.toContain(name);
    }
  });

  it("the dashboard shows a signed-in maintainer the 503 page naming it; sign-in and sign-out still work", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const e = without(name);
    // Signing in reads neither binding.
    const cookie = await adminCookie((path, init) => send(path, init, e), token);
    expect(cookie).toMatch(/^admin_session=/);
    const page = await send("/admin", { headers: { ...BROWSER, cookie } }, e);
    expect(page.status).toBe(503);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain(refusal(name));
    // A form is refused the same way, before its fields are looked at.
    const form = await send(
      "/admin/payouts/pricefeed/settle",
      { method: "POST", headers: { cookie, origin: ORIGIN }, body: new URLSearchParams({ csrf: "x" }) },
      e,
    );
    expect(form.status).toBe(503);
    expect(await form.json()).toEqual({ detail: refusal(name) });
    // Without a session: the sign-in page, told nothing of the deployment.
    const anonymous = await send("/admin", { headers: BROWSER }, e);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain("storage binding");
    const out = await send("/admin/logout", { method: "POST", headers: { cookie, origin: ORIGIN } }, e);
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/^admin_session=;/);
  });
});
