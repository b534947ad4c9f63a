import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ChainView } from "../../src/payments/reconcile-chain";
import { decide, type Terms } from "../../src/payments/reconcile-decide";
import {
  applyPayment,
  applyUpstream,
  type NonceRow,
  type UpstreamRow,
} from "../../src/payments/reconcile-store";

// Reconciliation decisions the suite did not pin down (found by mutating reconcile-decide.ts).
const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const now = () => Math.floor(Date.now() / 1000);
const terms = (over: Partial<Terms> = {}): Terms => ({
  payer: hex(20),
  payTo: env.PAY_TO,
  asset: env.USDC_ADDRESS,
  amountAtomic: 3000n,
  nonce: hex(32),
  validBefore: now() + 300,
  ...over,
});
const view = (over: Partial<ChainView>): ChainView => ({
  used: false,
  found: undefined,
  headTime: now(),
  ...over,
});

describe("decide, at the edges the suite left open", () => {
  it("a Transfer of the promised amount to us but from another address is not this payment: unpaid", () => {
    // A mutant that did not compare the Transfer's sender survived: a payer's nonce spent in a
    // transaction whose Transfer came from someone else was recorded as this payer's payment.
    const t = terms();
    const d = decide(
      t,
      view({
        used: true,
        found: { txHash: hex(32), blockNumber: 4, transfer: { from: hex(20), to: t.payTo, value: 3000n } },
      }),
    );
    expect(d.outcome).toBe("unpaid");
    expect(d.evidence).toMatch(/different transfer/);
  });

  it("an unused authorization whose valid_before the latest block has reached is expired (EIP-3009 takes only now < validBefore)", () => {
    const t = terms({ validBefore: now() - 10 });
    expect(decide(t, view({ headTime: t.validBefore })).outcome).toBe("unpaid");
    expect(decide(t, view({ headTime: t.validBefore - 1 })).outcome).toBe("wait");
  });
});

describe("what an upstream authorization that expired unused gives back", () => {
  /** A refund recorded for `requestId` that kept `withheld` back, and the upstream row it kept it for. */
  async function refundAndUpstream(withheld: number, upstreamMicros: number) {
    const requestId = `mut-${crypto.randomUUID()}`;
    const payer = hex(20);
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
         auth_nonce, asset, network)
       VALUES (?1, ?2, ?3, ?4, 'test', 'refunded', 0, 0, ?5, ?6, ?7)`,
    )
      .bind(requestId, payer, 60_000 - withheld, withheld, hex(32), env.USDC_ADDRESS, env.X402_NETWORK)
      .run();
    const row = await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, tx_hash, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before)
       VALUES (?1, 'pricefeed', 'price_coin', ?2, NULL, 0, 0, ?3, ?4, ?5, ?6, ?7, ?8)
       RETURNING id, request_id, payer, pay_to, asset, network, amount_micro, auth_nonce, valid_before, created_at`,
    )
      .bind(
        requestId,
        upstreamMicros,
        hex(20),
        hex(20),
        env.USDC_ADDRESS,
        env.X402_NETWORK,
        hex(32),
        now() - 3600,
      )
      .first<UpstreamRow>();
    return { requestId, row: row as UpstreamRow };
  }
  const expired = { outcome: "unpaid", evidence: "authorizationState: unused, past valid_before" } as const;
  const returnRow = (requestId: string) =>
    env.DB.prepare("SELECT amount_micro, status FROM refunds WHERE request_id = ?1")
      .bind(`${requestId}:withheld`)
      .first<{ amount_micro: number; status: string }>();

  it("a refund that kept nothing back records no return (no $0 refund listed as owed)", async () => {
    // A mutant that skipped the "kept nothing" check survived: every such decision added an owed
    // refund of $0 to GET /api/admin/payouts.
    const { requestId, row } = await refundAndUpstream(0, 20_000);
    expect(await applyUpstream(env.DB, row, expired)).toBeUndefined();
    expect(await returnRow(requestId)).toBeNull();
  });

  it("a refund that kept the share back records its return, once", async () => {
    const { requestId, row } = await refundAndUpstream(20_000, 20_000);
    expect(await applyUpstream(env.DB, row, expired)).toMatchObject({ paidMicros: 20_000n });
    expect(await returnRow(requestId)).toEqual({ amount_micro: 20_000, status: "owed" });
    expect(await applyUpstream(env.DB, row, expired)).toBeUndefined();
  });

  it("an authorization another run found landed returns nothing on a stale view that reads it expired", async () => {
    // A mutant whose return did not require the upstream row to be still undecided survived: the
    // partner collected the share, and the caller was sent it as well (more out than collected).
    const { requestId, row } = await refundAndUpstream(20_000, 20_000);
    await env.DB.prepare("UPDATE upstream_payments SET chain_status = 'landed' WHERE id = ?1")
      .bind(row.id)
      .run();
    expect(await applyUpstream(env.DB, row, expired)).toBeUndefined();
    expect(await returnRow(requestId)).toBeNull();
  });
});

/** A claim of 3000 for `resource` with the share `payout` kept with it (as a request records it), and its row as a run reads it. */
async function claimRow(status: "failed" | "running", payout: string, resource = "sha256") {
  const t = terms();
  const nonce = `${env.X402_NETWORK}:${t.asset}:${t.payer}:${t.nonce}`.toLowerCase();
  const requestId = `mut-${crypto.randomUUID()}`;
  const row = await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout)
     VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, 3000, ?10, ?11, 2, ?12)
     RETURNING nonce, request_id, resource, status, payer, pay_to, asset, network, amount_atomic, auth_nonce,
               valid_before, created_at, payout`,
  )
    .bind(
      nonce,
      requestId,
      resource,
      status,
      Date.now() - 600_000,
      t.payer,
      t.payTo,
      t.asset,
      env.X402_NETWORK,
      t.nonce,
      t.validBefore,
      payout,
    )
    .first<NonceRow>();
  return row as NonceRow;
}
const landedNow = () => ({ outcome: "paid", txHash: hex(32), blockNumber: 9, evidence: "landed" }) as const;
const count = (table: string, requestId: string) =>
  env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE request_id = ?1`)
    .bind(requestId)
    .first<number>("n");
const SHARE = JSON.stringify({
  partnerId: "pricefeed",
  serviceId: "price_coin",
  shareMicros: "1000",
  feeMicros: "2000",
});

describe("a stale view of a claim another run released", () => {
  it("records no refund and owes no partner when this run sees it landed", async () => {
    // Two mutants survived the suite (its stale-view test has the other run settle the claim,
    // where the refund's own ON CONFLICT stops a second one): a refund that did not require the
    // claim to be still 'failed', and a partner's payout row that did not require this batch to
    // have settled it. From a stale 'failed' view, a run sent the caller a refund, and owed the
    // partner a share, for a payment the ledger had released and never recorded.
    const row = await claimRow("failed", SHARE);
    await env.DB.prepare("UPDATE payment_nonces SET status = 'released' WHERE nonce = ?1")
      .bind(row.nonce)
      .run();
    expect(await applyPayment(env, row, landedNow())).toEqual({});
    expect(await count("refunds", row.request_id)).toBe(0);
    expect(await count("payout_ledger", row.request_id)).toBe(0);
    expect(await count("payments", row.request_id)).toBe(0);
  });
});

describe("a reconciled partner call's payout row", () => {
  const upstream = (requestId: string, chainStatus: string | null) =>
    env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before, chain_status)
       VALUES (?1, 'pricefeed', 'price_coin', 1000, 200, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
      .bind(
        requestId,
        hex(20),
        hex(20),
        env.USDC_ADDRESS,
        env.X402_NETWORK,
        hex(32),
        now() - 3600,
        chainStatus,
      )
      .run();
  const paidUpstream = (requestId: string) =>
    env.DB.prepare("SELECT paid_upstream FROM payout_ledger WHERE request_id = ?1")
      .bind(requestId)
      .first<number>("paid_upstream");

  it("is owed to the partner when the wallet's authorization to it is known not to have landed", async () => {
    // A mutant that counted any upstream authorization as paying the partner survived: one
    // reconciliation had found expired unused made the reconciled call's share read paid
    // upstream, so the partner was never owed what it served.
    const row = await claimRow("running", SHARE, "partner:pricefeed/price_coin");
    await upstream(row.request_id, "not_landed");
    await applyPayment(env, row, landedNow());
    expect(await paidUpstream(row.request_id)).toBe(0);
  });

  it("reads paid upstream while the wallet's authorization may still land", async () => {
    const row = await claimRow("running", SHARE, "partner:pricefeed/price_coin");
    await upstream(row.request_id, null);
    await applyPayment(env, row, landedNow());
    expect(await paidUpstream(row.request_id)).toBe(1);
  });
});
