import { env } from "cloudflare:test";
import { expect } from "vitest";
import { createApp } from "../../src/app";
import type { UpstreamRow } from "../../src/payments/reconcile-store";
import { refundCaller } from "../../src/payments/refunds";

/**
 * Shared set-ups of the refund decision tests (refund-dismiss, refund-rest): a failed partner call
 * whose refund kept its 0.02 share back in doubt, the admin API to decide it, and authorizations of
 * the request turning up.
 */
export const token = "refund-dismiss-t0ken-0123456789abcdefghij";
export const adminEnv = { ...env, ADMIN_TOKEN: token };
export const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);
export const auth = { authorization: `Bearer ${token}` };
export const resolve = (requestId: string, body: unknown) =>
  send(`/api/admin/resolve/refunds/${encodeURIComponent(requestId)}`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
export const hash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
export const PAYER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
// A network of its own: no reconciliation run of another file reads (or sends) these rows.
export const NETWORK = "eip155:930017";
export const NOTE = "wallet paid pricefeed 0.02 at 12:01Z (tx 0xabc…), the whole share";

/**
 * A failed partner call's refund that kept its 0.02 share back in doubt, as the partner proxy writes
 * it (refundCaller with inDoubt): the caller's refund of 0.04 (owed: no operating wallet here) and
 * the share's held listing `<id>:withheld`. With `paid`, a payments row for the request too.
 */
/** That refund of request `requestId`, as the partner proxy hands it to refundCaller. */
export const inDoubtRefund = (requestId: string, payer = PAYER) => ({
  requestId,
  payer,
  network: NETWORK,
  asset: env.USDC_ADDRESS,
  paidMicros: 60000n,
  withheldMicros: 20000n,
  reason: "the partner failed after the caller was charged",
  inDoubt: "test: no authorization record readable",
});
export async function keptInDoubt(paid = false) {
  const requestId = crypto.randomUUID();
  await refundCaller(env, inDoubtRefund(requestId));
  const nonce = hash();
  if (paid)
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at)
         VALUES (?1, ?2, 'partner:pricefeed:price_coin', 'settled', ?3, ?3)`,
      ).bind(nonce, requestId, Date.now()),
      env.DB.prepare(
        `INSERT INTO payments (request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at)
         VALUES (?1, 'partner:pricefeed:price_coin', 60000, ?2, ?3, '0xpayto', ?4, ?5, ?6, ?7)`,
      ).bind(requestId, env.USDC_ADDRESS, PAYER, NETWORK, hash(), nonce, Date.now()),
    ]);
  const listing = `${requestId}:withheld`;
  expect(await row(listing)).toMatchObject({
    status: "owed",
    amount_micro: 20000,
    valid_before: null,
    hold: expect.stringMatching(/^kept back in doubt: /),
  });
  return { requestId, listing };
}
export const row = (requestId: string) =>
  env.DB.prepare(
    `SELECT status, amount_micro, tx_hash, error, hold, valid_before, auth_from, resolved_at, resolved_note
     FROM refunds WHERE request_id = ?1`,
  )
    .bind(requestId)
    .first<Record<string, unknown>>();
export const payouts = async () =>
  (await send("/api/admin/payouts", { headers: auth })).json<{
    refunds: Record<string, unknown>[];
    withheld_not_returned: Record<string, unknown>[];
  }>();

/**
 * An authorization of the operating wallet recorded for the request (upstream_payments), as
 * reconciliation reads it: undecided unless `chain_status` says otherwise, held for a person with
 * `hold`; for the kept 0.02 unless `amount` says otherwise; signed 15 minutes ago (expired) unless
 * `validBefore` (seconds) says otherwise.
 */
export async function authorizationTurnsUp(
  requestId: string,
  o: { amount?: number; chainStatus?: "landed" | "not_landed"; hold?: string; validBefore?: number } = {},
): Promise<UpstreamRow> {
  const created = Date.now() - 900_000;
  const r = await env.DB.prepare(
    `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
       payer, pay_to, asset, network, auth_nonce, valid_before, chain_status, hold)
     VALUES (?1, 'pricefeed', 'price_coin', ?9, 200, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?10, ?11)
     RETURNING id, request_id, payer, pay_to, asset, network, amount_micro, auth_nonce, valid_before, created_at`,
  )
    .bind(
      requestId,
      created,
      `0x${"0a".repeat(20)}`,
      "0x1111111111111111111111111111111111111111",
      env.USDC_ADDRESS,
      NETWORK,
      hash(),
      o.validBefore ?? Math.floor(created / 1000) + 300,
      o.amount ?? 20000,
      o.chainStatus ?? null,
      o.hold ?? null,
    )
    .first<UpstreamRow>();
  return r as UpstreamRow;
}
