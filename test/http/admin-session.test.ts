import { env } from "cloudflare:test";
import { afterEach, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie } from "../helpers";

const token = "dash-session-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);
const csrfOf = async (cookie: string) =>
  (await (await send("/admin", { headers: { cookie } })).text()).match(/name="csrf" value="([^"]*)"/)?.[1];
// A form that changes nothing when its fields are refused: the refusal shows which check spoke.
const postForm = (cookie: string, csrf: string) =>
  send("/admin/payouts/pricefeed/settle", {
    method: "POST",
    headers: { cookie, origin: "https://skills.test" },
    body: new URLSearchParams({ csrf, tx_hash: "not-a-hash" }),
  });

afterEach(() => vi.restoreAllMocks());

it("Sign out ends the session on the server: the same cookie, sent again, opens nothing", async () => {
  const cookie = await adminCookie(send, token);
  expect((await send("/admin", { headers: { cookie } })).status).toBe(200);
  const csrf = (await csrfOf(cookie)) as string;
  const out = await send("/admin/logout", {
    method: "POST",
    headers: { cookie, origin: "https://skills.test" },
  });
  expect(out.status).toBe(303);
  // A copy of the cookie kept elsewhere (another tab's jar, a leaked header) is refused.
  expect((await send("/admin", { headers: { cookie } })).status).toBe(401);
  expect((await postForm(cookie, csrf)).status).toBe(401);
  // Signing in again works.
  const again = await adminCookie(send, token);
  expect((await send("/admin", { headers: { cookie: again } })).status).toBe(200);
});

it("each session has its own CSRF token: one read from another session's page is refused", async () => {
  const now = Date.now();
  vi.spyOn(Date, "now").mockReturnValue(now);
  const first = await adminCookie(send, token);
  vi.spyOn(Date, "now").mockReturnValue(now + 1000);
  const second = await adminCookie(send, token);
  expect(second).not.toBe(first);
  const [a, b] = [(await csrfOf(first)) as string, (await csrfOf(second)) as string];
  expect(a).toMatch(/^[0-9a-f]{64}$/);
  expect(a).not.toBe(b);
  // A page of the first session posted after the second sign-in: back to the page, nothing recorded.
  const stale = await postForm(second, a);
  expect(stale.status).toBe(303);
  expect(stale.headers.get("location")).toBe("/admin?notice=stale-form");
  expect(await (await send("/admin?notice=stale-form", { headers: { cookie: second } })).text()).toContain(
    "that form&#39;s token was not this sign-in&#39;s",
  );
  expect((await postForm(second, "forged")).status).toBe(403);
  // Its own token passes the check and reaches the form's validation (422 for the bad hash).
  expect((await postForm(second, b)).status).toBe(422);
});

it("admin API answers are kept out of caches, refusals too (the body caps' included)", async () => {
  const ok = await send("/api/admin/payments", { headers: { authorization: `Bearer ${token}` } });
  expect(ok.status).toBe(200);
  const refused = await send("/api/admin/payouts?format=csv");
  expect(refused.status).toBe(401);
  const settle = "/api/admin/payouts/pricefeed/settle";
  const tooBig = await send(settle, { method: "POST", body: "x".repeat(6 * 1024 * 1024) });
  expect(tooBig.status).toBe(413);
  const encoded = await send(settle, { method: "POST", headers: { "content-encoding": "gzip" }, body: "{}" });
  expect(encoded.status).toBe(415);
  for (const res of [ok, refused, tooBig, encoded]) {
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-robots-tag")).toBe("noindex, nofollow");
  }
});

it("Sign out still signs the browser out when KV cannot be written, and a KV that cannot be read does not lock the dashboard", async () => {
  const cookie = await adminCookie(send, token);
  const failing = {
    ...adminEnv,
    KV: {
      get: () => Promise.reject(new Error("KV down")),
      put: () => Promise.reject(new Error("KV down")),
    } as unknown as KVNamespace,
  };
  const viaFailing = (path: string, init: RequestInit = {}) =>
    createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), failing);
  const warn = vi.spyOn(console, "error").mockImplementation(() => {});
  expect((await viaFailing("/admin", { headers: { cookie } })).status).toBe(200);
  const out = await viaFailing("/admin/logout", {
    method: "POST",
    headers: { cookie, origin: "https://skills.test" },
  });
  expect(out.status).toBe(303);
  expect(out.headers.get("set-cookie")).toMatch(/^admin_session=;/);
  expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])).msg)).toEqual(
    expect.arrayContaining([
      expect.stringContaining("admin sign out: the session's end could not be written"),
    ]),
  );
});
