import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie } from "../helpers";

const token = "dash-reconcile-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);

it("Settlements to reconcile lists what GET /api/admin/payments lists: stale running claims and held claims and upstream authorizations, with the hold and the resolve path", async () => {
  const rid = crypto.randomUUID();
  const now = Date.now();
  const insertClaim = (suffix: string, status: string, updatedAt: number, hold: string | null) =>
    env.DB.prepare(
      "INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, hold) VALUES (?1, ?2, 'research', ?3, ?4, ?4, ?5)",
    ).bind(`n-${suffix}-${rid}`, `req-${suffix}-${rid}`, status, updatedAt, hold);
  await env.DB.batch([
    insertClaim("failed", "failed", now, null),
    // Running past its authorization's validity (5 min): reconciliation decides it.
    insertClaim("stale", "running", now - 10 * 60_000, null),
    // Running and young: its own request is still settling it, nothing to reconcile.
    insertClaim("young", "running", now, null),
    insertClaim("held", "running", now - 2 * 86_400_000, "spent with no log for a day"),
    // Judged "used, no log" twice: read only every 2 h (reconcile-store.ts), the page says when.
    env.DB.prepare(
      "INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, no_log_runs, checked_at) VALUES (?1, ?2, 'research', 'failed', ?3, ?3, 2, ?3)",
    ).bind(`n-spaced-${rid}`, `req-spaced-${rid}`, now),
    // Running, its request gone, but its authorization still valid: not read until it expires.
    env.DB.prepare(
      "INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, valid_before) VALUES (?1, ?2, 'research', 'running', ?3, ?3, ?4)",
    ).bind(`n-notdue-${rid}`, `req-notdue-${rid}`, now - 10 * 60_000, Math.floor(now / 1000) + 120),
    env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at, hold)
       VALUES (?1, 'pricefeed', 'quote', 1000, 0, ?2, 'upstream spent with no log')`,
    ).bind(`req-up-${rid}`, now),
  ]);
  const upstreamId = (
    await env.DB.prepare("SELECT id FROM upstream_payments WHERE request_id = ?1")
      .bind(`req-up-${rid}`)
      .first<{ id: number }>()
  )?.id;

  const cookie = await adminCookie(send, token);
  const res = await send("/admin", { headers: { cookie } });
  expect(res.status).toBe(200);
  const html = await res.text();
  const table = html.slice(
    html.indexOf('id="unconfirmed"'),
    html.indexOf("</table>", html.indexOf('id="unconfirmed"')),
  );
  expect(table).toContain(`<th scope="row">req-failed-${rid}</th><td>research</td>`);
  expect(table).toContain(
    `<th scope="row">req-stale-${rid}</th><td>research</td><td>n-stale-${rid}</td><td>running past its validity`,
  );
  expect(table).not.toContain(`req-young-${rid}`);
  expect(table).toContain(
    `<td>n-spaced-${rid}</td><td>spent with no log found 2 times: read again at ${new Date(now + 2 * 3_600_000).toISOString()}; POST /api/admin/resolve/payment_nonces/n-spaced-${rid} {&quot;outcome&quot;:&quot;queue&quot;} to read it on the next run</td>`,
  );
  expect(table).toContain(
    `<td>n-notdue-${rid}</td><td>running, not yet due: read once its authorization has expired and its request is 5 minutes old</td>`,
  );
  expect(table).toContain(
    `<th scope="row">req-held-${rid}</th><td>x402 claim</td><td>n-held-${rid}</td><td>needs a person: spent with no log for a day. Resolve: POST /api/admin/resolve/payment_nonces/n-held-${rid}</td>`,
  );
  expect(table).toContain(
    `<th scope="row">req-up-${rid}</th><td>upstream authorization (partner)</td><td>${upstreamId}</td><td>needs a person: upstream spent with no log. Resolve: POST /api/admin/resolve/upstream_payments/${upstreamId}</td>`,
  );

  // The same claims as the API's view of the ledger.
  const api = await send("/api/admin/payments?limit=1000", { headers: { authorization: `Bearer ${token}` } });
  const ledger = await api.json<{
    unconfirmed: { request_id: string }[];
    needs_person: { request_id: string }[];
  }>();
  const listed = [...ledger.unconfirmed, ...ledger.needs_person]
    .map((r) => r.request_id)
    .filter((r) => r.endsWith(rid));
  expect(listed.sort()).toEqual(
    [
      `req-failed-${rid}`,
      `req-stale-${rid}`,
      `req-held-${rid}`,
      `req-up-${rid}`,
      `req-spaced-${rid}`,
      `req-notdue-${rid}`,
    ].sort(),
  );
});
