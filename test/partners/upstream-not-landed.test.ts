import { env } from "cloudflare:test";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { reconcile } from "../../src/payments/reconcile";
import type { ChainReader } from "../../src/payments/reconcile-chain";
import { applyUpstream, type UpstreamRow } from "../../src/payments/reconcile-store";
import { refundNonce } from "../../src/payments/refunds";
import {
  CALLER_TX,
  paidCall,
  payoutRows,
  send,
  stubNetwork,
  tryEnv,
  upstreamRows,
  x402Partner,
} from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A chain on which the authorizations of these requests' upstream rows were never used and have
 * expired (its clock is well past their valid_before). Every other nonce reads as used with no log
 * found, so other files' rows in the shared D1 only wait.
 */
async function expiredUnused(...requestIds: string[]) {
  const nonces = new Set<string>();
  for (const id of requestIds)
    for (const u of await upstreamRows(id)) nonces.add(String(u.auth_nonce).toLowerCase());
  const reader: ChainReader = {
    chainId: async () => Number(env.X402_NETWORK.split(":")[1]),
    head: async () => ({ number: 1e7, timestamp: Math.floor(Date.now() / 1000) + 10_000, blockSeconds: 2 }),
    blockTime: async (n) => Math.floor(Date.now() / 1000) + 10_000 - (1e7 - n) * 2,
    authorizationUsed: async (_asset, _who, nonce) => !nonces.has(nonce.toLowerCase()),
    findUse: async () => undefined,
  };
  return reader;
}

/** Runs reconciliation until these requests' upstream rows are decided (a run takes 40 rows). */
async function reconcileUntilDecided(reader: ChainReader, ...requestIds: string[]) {
  for (let run = 0; run < 20; run++) {
    const summary = await reconcile(tryEnv as never, reader);
    expect(summary.errors).toEqual([]);
    const rows = (await Promise.all(requestIds.map(upstreamRows))).flat();
    if (rows.every((u) => u.chain_status !== null)) return;
  }
  throw new Error("upstream rows still undecided after 20 runs");
}

const refundRow = (requestId: string) =>
  env.DB.prepare(
    "SELECT payer, amount_micro, withheld_micro, status, tx_hash, hold, auth_nonce FROM refunds WHERE request_id = ?1",
  )
    .bind(requestId)
    .first<Record<string, unknown>>();

type Authorization = { from: string; to: string; value: string; nonce: string };
const authorizationOf = (p: PaymentPayload) => (p.payload as { authorization: Authorization }).authorization;

/** Refunds the facilitator was asked to settle, to this payer. */
const refundsTo = (settled: PaymentPayload[], payer: unknown) =>
  settled.map(authorizationOf).filter((a) => a.to.toLowerCase() === String(payer).toLowerCase());

const payoutsReport = async () =>
  (
    await send("/api/admin/payouts", { headers: { authorization: "Bearer t0ken-0123456789abcdefghij" } })
  ).json<{
    services: { partner_id: string; service_id: string; owed_micro: number }[];
    withheld_not_returned: Record<string, unknown>[];
    refunds: Record<string, unknown>[];
  }>();

/** A paid pricefeed call whose partner took our authorization of 0.02 and then dropped the connection. */
async function partnerTookAuthorizationAndFailed() {
  const network = stubNetwork(
    x402Partner("20000", () => {
      throw new TypeError("Network connection lost.");
    }),
  );
  const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
  expect(res.status).toBe(502);
  expect(await res.json()).toMatchObject({ charged: true, refund: { status: "refunded", amount_usd: 0.04 } });
  const requestId = res.headers.get("x-request-id") ?? "";
  return { ...network, requestId };
}

describe("a share kept back from a refund goes back to the caller once the partner can no longer collect it", () => {
  it("the authorization expires unused: reconciliation records and sends the 0.02 it kept, with its own derived nonce, once", async () => {
    const { settled, requestId } = await partnerTookAuthorizationAndFailed();
    const first = await refundRow(requestId);
    expect(first).toMatchObject({ amount_micro: 40000, withheld_micro: 20000, status: "refunded" });
    expect(refundsTo(settled, first?.payer)).toHaveLength(1);

    const reader = await expiredUnused(requestId);
    await reconcileUntilDecided(reader, requestId);
    expect(await upstreamRows(requestId)).toEqual([
      expect.objectContaining({ amount_micro: 20000, chain_status: "not_landed" }),
    ]);
    const nonce = await refundNonce(`${requestId}:withheld`);
    expect(await refundRow(`${requestId}:withheld`)).toEqual({
      payer: first?.payer,
      amount_micro: 20000,
      withheld_micro: 0,
      status: "refunded",
      tx_hash: CALLER_TX,
      hold: null,
      auth_nonce: nonce,
    });
    // The first refund stands as it was; the second is its own authorization of what was kept.
    expect(await refundRow(requestId)).toMatchObject({ amount_micro: 40000, withheld_micro: 20000 });
    const sent = refundsTo(settled, first?.payer);
    expect(sent.map((a) => a.value)).toEqual(["40000", "20000"]);
    expect(sent[1]?.nonce).toBe(nonce);

    // Another run (or the admin trigger racing the cron) returns nothing more.
    await reconcile(tryEnv as never, reader);
    expect(refundsTo(settled, first?.payer)).toHaveLength(2);
    // Nothing kept back is left unreturned.
    const report = await payoutsReport();
    expect(report.withheld_not_returned.filter((w) => w.request_id === requestId)).toEqual([]);
    expect(report.refunds.find((r) => r.request_id === `${requestId}:withheld`)).toMatchObject({
      amount_micro: 20000,
      status: "refunded",
    });
    // The payments view reads this payment net of both refunds.
    const payments = await (
      await send(`/api/admin/payments?request_id=${requestId}`, {
        headers: { authorization: "Bearer t0ken-0123456789abcdefghij" },
      })
    ).json<{ totals: { amount_atomic: number }; refunds: { count: number; refunded_atomic: number } }>();
    expect(payments.totals.amount_atomic).toBe(60000);
    expect(payments.refunds).toMatchObject({ count: 2, refunded_atomic: 60000 });
  });

  it("a nonce the chain shows spent on a transfer other than ours gives nothing back: money moved somewhere", async () => {
    const { requestId } = await partnerTookAuthorizationAndFailed();
    const [row] = await upstreamRows(requestId);
    const spentElsewhere = {
      outcome: "unpaid" as const,
      txHash: `0x${"ee".repeat(32)}`,
      blockNumber: 9,
      evidence: "authorizationState: used by tx 0xee… for a different transfer",
    };
    expect(await applyUpstream(env.DB, row as unknown as UpstreamRow, spentElsewhere)).toBeUndefined();
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ chain_status: "not_landed" })]);
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });

  it("reconciliation leaves a nonce spent on another transfer undecided and reports it for a person", async () => {
    const { requestId } = await partnerTookAuthorizationAndFailed();
    const [row] = await upstreamRows(requestId);
    const nonce = String(row?.auth_nonce).toLowerCase();
    const reader: ChainReader = {
      chainId: async () => Number(env.X402_NETWORK.split(":")[1]),
      head: async () => ({ number: 1e7, timestamp: Math.floor(Date.now() / 1000) + 10_000, blockSeconds: 2 }),
      blockTime: async (n) => Math.floor(Date.now() / 1000) + 10_000 - (1e7 - n) * 2,
      // Every other file's rows read as used with no log found: they only wait.
      authorizationUsed: async () => true,
      findUse: async (_asset, who, n) =>
        n.toLowerCase() === nonce
          ? {
              txHash: `0x${"ee".repeat(32)}`,
              blockNumber: 9,
              transfer: { from: who, to: `0x${"99".repeat(20)}`, value: 1n },
            }
          : undefined,
    };
    const summary = await reconcile(tryEnv as never, reader);
    expect(summary.errors.join("\n")).toMatch(
      new RegExp(`upstream ${row?.id}: .*different transfer.*left undecided for a person`),
    );
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ chain_status: null })]);
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });

  it("a stale view of a row another run already decided returns nothing twice", async () => {
    const { settled, requestId } = await partnerTookAuthorizationAndFailed();
    const [row] = await upstreamRows(requestId);
    const notLanded = { outcome: "unpaid" as const, evidence: "expired unused" };
    const firstRun = await applyUpstream(env.DB, row as unknown as UpstreamRow, notLanded);
    expect(firstRun).toMatchObject({ requestId: `${requestId}:withheld`, paidMicros: 20000n });
    const secondRun = await applyUpstream(env.DB, row as unknown as UpstreamRow, notLanded);
    expect(secondRun).toBeUndefined();
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM refunds WHERE request_id LIKE ?1")
      .bind(`${requestId}%`)
      .first<number>("n");
    expect(rows).toBe(2);
    // Recorded owed by the first run (applyUpstream records; the run that recorded it sends it).
    expect(await refundRow(`${requestId}:withheld`)).toMatchObject({ amount_micro: 20000, status: "owed" });
    expect(refundsTo(settled, (await refundRow(requestId))?.payer)).toHaveLength(1);
  });

  it("while the return is owed (its send refused), the admin report shows what was kept; a landed authorization keeps it", async () => {
    const failed = await partnerTookAuthorizationAndFailed();
    vi.restoreAllMocks();
    const refused = stubNetwork(() => new Response("unused", { status: 500 }), { settles: false });
    await reconcileUntilDecided(await expiredUnused(failed.requestId), failed.requestId);
    expect(await refundRow(`${failed.requestId}:withheld`)).toMatchObject({
      amount_micro: 20000,
      status: "owed",
    });
    const payer = (await refundRow(failed.requestId))?.payer;
    expect(refundsTo(refused.settled, payer).map((a) => a.value)).toEqual(["20000"]);
    const report = await payoutsReport();
    expect(report.withheld_not_returned.find((w) => w.request_id === failed.requestId)).toMatchObject({
      partner_id: "pricefeed",
      service_id: "price_coin",
      withheld_micro: 20000,
      withheld_usd: 0.02,
      return_request_id: `${failed.requestId}:withheld`,
      return_status: "owed",
    });

    // A share whose authorization landed was the partner's: nothing goes back.
    vi.restoreAllMocks();
    const kept = await partnerTookAuthorizationAndFailed();
    const [upstream] = await upstreamRows(kept.requestId);
    const landed = await applyUpstream(env.DB, upstream as unknown as UpstreamRow, {
      outcome: "paid",
      txHash: `0x${"44".repeat(32)}`,
      blockNumber: 9,
      evidence: "landed",
    });
    expect(landed).toBeUndefined();
    expect(await refundRow(`${kept.requestId}:withheld`)).toBeNull();
  });

  it("a share kept back by a decision taken before this return existed is listed, not hidden", async () => {
    const requestId = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at, chain_status)
         VALUES (?1, 'pricefeed', 'price_coin', 20000, 0, ?2, 'not_landed')`,
      ).bind(requestId, Date.now()),
      env.DB.prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, '0x5555555555555555555555555555555555555555', 40000, 20000, 'the partner answered 500', 'refunded', ?2, ?2)`,
      ).bind(requestId, Date.now()),
    ]);
    const report = await payoutsReport();
    expect(report.withheld_not_returned.find((w) => w.request_id === requestId)).toMatchObject({
      withheld_micro: 20000,
      return_request_id: null,
      return_status: null,
    });
  });
});

describe("a served call whose upstream authorization never lands owes the partner its share", () => {
  it("a 2xx without a receipt, its authorization expired unused: the payout row becomes owed, once", async () => {
    stubNetwork(x402Partner("20000", () => Response.json({ ok: 1 })));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id") ?? "";
    expect(await payoutRows(requestId)).toEqual([
      expect.objectContaining({ partner_share_micro: 20000, paid_upstream: 1, batch_id: null }),
    ]);
    const owed = async () =>
      (await payoutsReport()).services.find(
        (s) => s.partner_id === "pricefeed" && s.service_id === "price_coin",
      )?.owed_micro ?? 0;
    const before = await owed();

    const reader = await expiredUnused(requestId);
    await reconcileUntilDecided(reader, requestId);
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ chain_status: "not_landed" })]);
    expect(await payoutRows(requestId)).toEqual([
      expect.objectContaining({ partner_share_micro: 20000, paid_upstream: 0, batch_id: null }),
    ]);
    expect(await owed()).toBe(before + 20000);
    // A served call kept nothing back from anyone: no refund.
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();

    // A stale view of the same row (another run's) flips nothing more, and owes nothing twice.
    const [row] = await upstreamRows(requestId);
    await applyUpstream(env.DB, row as unknown as UpstreamRow, { outcome: "unpaid", evidence: "again" });
    await reconcile(tryEnv as never, reader);
    expect(await owed()).toBe(before + 20000);
    expect(await payoutRows(requestId)).toEqual([expect.objectContaining({ paid_upstream: 0 })]);
  });

  it("a served call whose authorization landed stays paid upstream", async () => {
    stubNetwork(x402Partner("20000", () => Response.json({ ok: 1 })));
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
    const requestId = res.headers.get("x-request-id") ?? "";
    const [row] = await upstreamRows(requestId);
    await applyUpstream(env.DB, row as unknown as UpstreamRow, {
      outcome: "paid",
      txHash: `0x${"66".repeat(32)}`,
      blockNumber: 9,
      evidence: "landed",
    });
    expect(await payoutRows(requestId)).toEqual([expect.objectContaining({ paid_upstream: 1 })]);
  });
});
