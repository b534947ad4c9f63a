import { env } from "cloudflare:test";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
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
const bearer = { authorization: `Bearer ${token}` };
const jsonPost = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { ...bearer, "content-type": "application/json" },
  body: JSON.stringify(body),
});
const hash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

/** An owed refund nobody has sent: a hand refund of it is recorded in D1 and copied to KV. */
async function owedRefund() {
  const id = `req-admin-bindings-${crypto.randomUUID()}`;
  await env.DB.prepare(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
     VALUES (?1, ?2, 3000, 0, 'test refund', 'owed', ?3, ?3)`,
  )
    .bind(id, `0x${"12".repeat(20)}`, Date.now())
    .run();
  return id;
}
const refundRow = (id: string) =>
  env.DB.prepare("SELECT status, tx_hash, resolved_at FROM refunds WHERE request_id = ?1").bind(id).first();

afterEach(() => vi.restoreAllMocks());
// Its owed refunds are rows of no network (as before migration 0010), which reconciliation on any
// network reads once they are a minute old: left behind, they were counted by other files' runs on
// a network of their own (refund-by-hand's "checked: 0" found 2).
afterAll(() => env.DB.prepare("DELETE FROM refunds WHERE request_id LIKE 'req-admin-bindings-%'").run());

// Every admin route reads D1 (RPC_URL given so a run of reconciliation gets as far as the database).
const ROUTES: [string, RequestInit][] = [
  ["/api/admin/payments", { headers: bearer }],
  ["/api/admin/payouts", { headers: bearer }],
  ["/api/admin/payouts?format=csv", { headers: bearer }],
  // A transfer of its own: a hash another file recorded (call-stats pays notifyhook with 0xcdcd…)
  // is refused as already recorded before "Nothing is owed" is said.
  ["/api/admin/payouts/pricefeed/settle", jsonPost({ tx_hash: hash() })],
  ["/api/admin/reconcile", { method: "POST", headers: bearer }],
  [
    "/api/admin/resolve/refunds/req-admin-bindings",
    jsonPost({ tx_hash: `0x${"ab".repeat(32)}`, amount_micro: 1000 }),
  ],
  ["/api/admin/resolve/payment_nonces/123", jsonPost({ outcome: "queue" })],
];

describe("admin without the DB binding", () => {
  it("the API answers a maintainer 503 naming it on every route (it was a 500), and a caller without the token 401 as ever", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const e = { ...without("DB"), RPC_URL: "http://127.0.0.1:9" };
    for (const [path, init] of ROUTES) {
      const res = await send(path, init, e);
      expect(res.status, path).toBe(503);
      expect(await res.json(), path).toEqual({ detail: refusal("DB") });
      const anonymous = await send(path, { method: init.method }, e);
      expect(anonymous.status, path).toBe(401);
      expect(await anonymous.text()).not.toContain("DB");
    }
  });
});

describe("admin without the KV binding", () => {
  it("the reads, payout settling, claims and reconciliation answer as they did; a refund decision 503 naming KV, nothing recorded", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const e = { ...without("KV"), RPC_URL: "http://127.0.0.1:9" };
    const answer = async (i: number) => {
      const [path, init] = ROUTES[i] as [string, RequestInit];
      const res = await send(path, init, e);
      return { status: res.status, text: await res.text() };
    };
    expect((await answer(0)).status).toBe(200);
    expect((await answer(1)).status).toBe(200);
    const csv = await answer(2);
    expect(csv.status).toBe(200);
    expect(csv.text.split("\n")[0]).toMatch(/,/);
    // The database is shared with the project's other files: whatever they left owed is settled
    // first (200), so the second settle is the refusal a partner with nothing owed gets.
    const drained = await send("/api/admin/payouts/pricefeed/settle", jsonPost({ tx_hash: hash() }), e);
    expect([200, 409]).toContain(drained.status);
    const settle = await answer(3);
    expect(settle.status).toBe(409);
    expect(settle.text).toContain("Nothing is owed");
    // Reconciliation runs (it reads KV only for a refund's hand-paid copy, and then sends nothing):
    // here its RPC is down, the RPC's 502.
    const reconcile = await answer(4);
    expect(reconcile.status).toBe(502);
    const claim = await answer(6);
    expect(claim.status).toBe(404);
    expect(JSON.parse(claim.text)).toEqual({ detail: 'Unknown payment_nonces row "123"' });

    const id = await owedRefund();
    const res = await send(
      `/api/admin/resolve/refunds/${id}`,
      jsonPost({ tx_hash: hash(), amount_micro: 3000 }),
      e,
    );
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ detail: refusal("KV") });
    expect(await refundRow(id)).toEqual({ status: "owed", tx_hash: null, resolved_at: null });
  });

  it("the dashboard shows a signed-in maintainer the page; its Record refund form answers 503 naming KV, nothing recorded", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const e = without("KV");
    const id = await owedRefund();
    const cookie = await adminCookie((path, init) => send(path, init, e), token);
    const page = await send("/admin", { headers: { ...BROWSER, cookie } }, e);
    expect(page.status).toBe(200);
    const html = await page.text();
    const action = `/admin/refunds/${id}/resolve`;
    const form = html.match(new RegExp(`<form method="post" action="${action}"[\\s\\S]*?</form>`))?.[0] ?? "";
    const csrf = form.match(/name="csrf" value="([^"]*)"/)?.[1];
    expect(csrf).toBeTruthy();
    const res = await send(
      action,
      {
        method: "POST",
        headers: { ...BROWSER, cookie, origin: ORIGIN },
        body: new URLSearchParams({ csrf: csrf as string, tx_hash: hash(), amount_micro: "3000" }),
      },
      e,
    );
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain(refusal("KV"));
    expect(await refundRow(id)).toEqual({ status: "owed", tx_hash: null, resolved_at: null });
  });
});

describe("the dashboard without the DB binding", () => {
  it("shows a signed-in maintainer the 503 page naming it; sign-in and sign-out still work; a signed-out cookie gets the sign-in page", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const e = without("DB");
    // Signing in reads neither binding.
    const cookie = await adminCookie((path, init) => send(path, init, e), token);
    expect(cookie).toMatch(/^admin_session=/);
    const page = await send("/admin", { headers: { ...BROWSER, cookie } }, e);
    expect(page.status).toBe(503);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain(refusal("DB"));
    // A form is refused the same way, before its fields are looked at.
    for (const path of ["/admin/payouts/pricefeed/settle", "/admin/refunds/req-x/resolve"]) {
      const form = await send(
        path,
        { method: "POST", headers: { cookie, origin: ORIGIN }, body: new URLSearchParams({ csrf: "x" }) },
        e,
      );
      expect(form.status, path).toBe(503);
      expect(await form.json()).toEqual({ detail: refusal("DB") });
    }
    // Without a session: the sign-in page, told nothing of the deployment.
    const anonymous = await send("/admin", { headers: BROWSER }, e);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain("storage binding");
    const out = await send("/admin/logout", { method: "POST", headers: { cookie, origin: ORIGIN } }, e);
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/^admin_session=;/);
    // That cookie signed out (its end is in KV): the sign-in page, not the 503.
    const ended = await send("/admin", { headers: { ...BROWSER, cookie } }, e);
    expect(ended.status).toBe(401);
    expect(await ended.text()).not.toContain("storage binding");
  });
});

describe("openapi.json", () => {
  it("declares the 503 a missing binding answers on the admin routes that had none", async () => {
    const doc = await (await send("/openapi.json", {}, full)).json<{
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    }>();
    for (const [path, method] of [
      ["/api/admin/payments", "get"],
      ["/api/admin/payouts", "get"],
      ["/api/admin/payouts/{partner_id}/settle", "post"],
      ["/api/admin/resolve/{table}/{key}", "post"],
      ["/api/admin/reconcile", "post"],
    ] as const)
      expect(doc.paths[path]?.[method]?.responses["503"]?.description, path).toMatch(
        /missing (its|a) (DB )?storage binding|a missing DB binding/,
      );
  });
});
