import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { recordSettledPayment, rewriteSettledPayment, type SettledPayment } from "../../src/payments/ledger";
import { unsignedPayment } from "../fixtures/payments";
import { faultEnv } from "../fixtures/storage-faults";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpCall } from "../helpers";

// A D1 write that committed and then answered with an error (a connection lost after the commit),
// around an x402 call: the claim and the ledger row. The call goes on under a claim that is its own,
// and a ledger retry that finds the row it wrote is done, not a "final" line for staff to act on.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const PATH = "/api/skills/sha256";
const CLAIM = /INSERT INTO payment_nonces/;
const LEDGER = /INSERT INTO payments /;

afterEach(() => vi.restoreAllMocks());

const request = (headers: Record<string, string> = {}) =>
  new Request(`https://skills.test${PATH}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ text: "abc" }),
  });

let payer = 0x100;
/** A payment from a payer of its own (the facilitator double settles any ordinary one). */
async function payment(offer: PaymentRequired) {
  const from = `0x00000000000000000000000000000000000f${(payer++).toString(16).padStart(4, "0")}`;
  const { payload, nonce } = unsignedPayment(offer, from);
  const { network, asset } = payload.accepted;
  return {
    payload,
    header: encodePaymentSignatureHeader(payload),
    settles: () => upstreamRequests(`facilitator-settle nonce=${nonce}`),
    key: `${network}:${asset}:${from}:${nonce}`.toLowerCase(),
  };
}
const httpPayment = async () =>
  payment(
    decodePaymentRequiredHeader((await app.fetch(request(), paidEnv)).headers.get("payment-required") ?? ""),
  );

const ledger = async (key: string) => ({
  claim: (
    await env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1")
      .bind(key)
      .first<{ status: string }>()
  )?.status,
  rows: (
    await env.DB.prepare("SELECT count(*) AS n FROM payments WHERE nonce = ?1")
      .bind(key)
      .first<{ n: number }>()
  )?.n,
});

/** One paid call of sha256 with the storage faults `plan`, its work after the answer done. */
async function paidCall(header: string, plan: Parameters<typeof faultEnv>[1]) {
  const faulty = faultEnv(paidEnv, plan);
  const ctx = createExecutionContext();
  const res = await app.fetch(request({ "payment-signature": header }), faulty.env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a claim D1 committed but answered with an error", () => {
  it("is this request's: the call runs, is settled once and recorded", async () => {
    const pay = await httpPayment();
    const res = await paidCall(pay.header, { db: { n: 1, mode: "after", match: CLAIM } });
    expect(res.status).toBe(200);
    expect(await res.json()).toHaveProperty("hex");
    expect(await pay.settles()).toBe(1);
    expect(await ledger(pay.key)).toEqual({ claim: "settled", rows: 1 });
  });

  it("over MCP as well: the tool answers its result, settled once", async () => {
    const unpaid = await mcpCall(app, paidEnv, "sha256", { text: "abc" });
    const pay = await payment(unpaid.result.structuredContent as unknown as PaymentRequired);
    const faulty = faultEnv(paidEnv, { db: { n: 1, mode: "after", match: CLAIM } });
    const { result } = await mcpCall(
      app,
      faulty.env,
      "sha256",
      { text: "abc" },
      { "x402/payment": pay.payload },
    );
    expect(result.isError).toBeFalsy();
    expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: true });
    expect(await pay.settles()).toBe(1);
    expect(await ledger(pay.key)).toEqual({ claim: "settled", rows: 1 });
  });

  it("and whose re-read fails too: 503 with nothing charged, the claim freed so the same payment runs on retry", async () => {
    const pay = await httpPayment();
    const res = await paidCall(pay.header, {
      db: [
        { n: 1, mode: "after", match: CLAIM },
        { n: 1, mode: "throw", match: /SELECT request_id, status FROM payment_nonces/ },
      ],
    });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(await res.json()).toMatchObject({ reason: "payments_unavailable" });
    expect(await pay.settles()).toBe(0);
    expect(await ledger(pay.key)).toEqual({ claim: undefined, rows: 0 });
    const retry = await app.fetch(request({ "payment-signature": pay.header }), paidEnv);
    expect(retry.status).toBe(200);
    expect(await pay.settles()).toBe(1);
  });

  it("held by another request is still refused (never run twice)", async () => {
    const pay = await httpPayment();
    expect((await paidCall(pay.header, {})).status).toBe(200);
    // The second sender's INSERT did nothing (the claim is the first call's), then its answer was lost.
    const again = await paidCall(pay.header, { db: { n: 1, mode: "after", match: CLAIM } });
    expect(again.status).toBe(503);
    expect(await pay.settles()).toBe(1);
    expect(await ledger(pay.key)).toEqual({ claim: "settled", rows: 1 });
  });
});

describe("a claim D1 refused as overloaded (before running it)", () => {
  it("is one D1 call: no read-back, no release, no final line; 503 and the same payment runs on retry", async () => {
    const errors = vi.spyOn(console, "error");
    const pay = await httpPayment();
    // Every statement on the claim's row is refused as overloaded, as a D1 that is would.
    const faulty = faultEnv(paidEnv, {
      db: [1, 2, 3, 4, 5, 6].map((n) => ({ n, mode: "overloaded" as const, match: /payment_nonces/ })),
    });
    const ctx = createExecutionContext();
    const res = await app.fetch(request({ "payment-signature": pay.header }), faulty.env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ reason: "payments_unavailable" });
    expect(faulty.log.db.filter((q) => q.includes("payment_nonces"))).toEqual([
      expect.stringMatching(/^run: INSERT INTO payment_nonces/),
    ]);
    const lines = errors.mock.calls.map((a) => String(a[0]));
    expect(lines.filter((l) => l.includes("authorization claim write"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes("claim release write"))).toEqual([]);
    expect(lines.filter((l) => l.includes('"final":true'))).toEqual([]);
    expect(await pay.settles()).toBe(0);
    expect((await app.fetch(request({ "payment-signature": pay.header }), paidEnv)).status).toBe(200);
  });

  it("a release after a failed re-read is tried once, and its failure is no final line", async () => {
    const errors = vi.spyOn(console, "error");
    const pay = await httpPayment();
    const faulty = faultEnv(paidEnv, {
      db: [
        { n: 1, mode: "throw", match: CLAIM },
        { n: 1, mode: "throw", match: /SELECT request_id, status FROM payment_nonces/ },
        ...[1, 2, 3, 4].map((n) => ({ n, mode: "throw" as const, match: /DELETE FROM payment_nonces/ })),
      ],
    });
    const ctx = createExecutionContext();
    const res = await app.fetch(request({ "payment-signature": pay.header }), faulty.env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    expect(faulty.log.db.filter((q) => q.includes("DELETE FROM payment_nonces"))).toHaveLength(1);
    const lines = errors.mock.calls.map((a) => String(a[0]));
    expect(lines.filter((l) => l.includes("claim release write"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"final":true'))).toEqual([]);
  });
});

describe("a ledger batch D1 committed but answered with an error", () => {
  const finalLedgerLines = (spy: { mock: { calls: unknown[][] } }) =>
    spy.mock.calls
      .map((args) => String(args[0]))
      .filter((line) => line.includes("payments ledger write") && line.includes('"final":true'));

  it("its retry finds the row it wrote: one row, no final failure for staff to act on", async () => {
    const errors = vi.spyOn(console, "error");
    const pay = await httpPayment();
    const res = await paidCall(pay.header, { db: { n: 1, mode: "after", match: LEDGER } });
    expect(res.status).toBe(200);
    expect(await pay.settles()).toBe(1);
    expect(await ledger(pay.key)).toEqual({ claim: "settled", rows: 1 });
    // The answer's own attempt is logged (attempt 1): D1 did answer it with an error.
    const ledgerLines = errors.mock.calls
      .map((a) => String(a[0]))
      .filter((l) => l.includes("payments ledger write"));
    expect(ledgerLines).toHaveLength(1);
    expect(finalLedgerLines(errors)).toEqual([]);
  });

  it("a conflict with another payment's row stays an error", async () => {
    const pay = await httpPayment();
    expect((await paidCall(pay.header, {})).status).toBe(200);
    const stored = await env.DB.prepare("SELECT request_id, resource, tx_hash FROM payments WHERE nonce = ?1")
      .bind(pay.key)
      .first<{ request_id: string; resource: string; tx_hash: string }>();
    const row: SettledPayment = {
      key: pay.key,
      requestId: stored?.request_id ?? "",
      resource: stored?.resource ?? "",
      payment: pay.payload,
      requirements: pay.payload.accepted,
      settlement: {
        success: true,
        transaction: stored?.tx_hash ?? "",
        network: pay.payload.accepted.network,
      },
    };
    // The same payment again: its own row, so done.
    await expect(rewriteSettledPayment(env.DB, row)).resolves.toBeUndefined();
    await expect(recordSettledPayment(env.DB, row)).rejects.toThrow(/UNIQUE/);
    // Another request's write of this nonce, or this request's with another transaction: not ours.
    await expect(rewriteSettledPayment(env.DB, { ...row, requestId: "req-other" })).rejects.toThrow(/UNIQUE/);
    const otherTx = { ...row.settlement, transaction: `0x${"ab".repeat(32)}` };
    await expect(rewriteSettledPayment(env.DB, { ...row, settlement: otherTx })).rejects.toThrow(/UNIQUE/);
  });
});
