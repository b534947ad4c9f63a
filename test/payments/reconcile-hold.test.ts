import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { cronFailure, reconcile } from "../../src/payments/reconcile";
import type { ChainReader } from "../../src/payments/reconcile-chain";
import { NO_LOG_HOLD_MS, NO_LOG_HOLD_RUNS } from "../../src/payments/reconcile-holds";
import { NO_LOG_EVERY_MS, NO_LOG_SPACED_AFTER } from "../../src/payments/reconcile-store";
import { adminCookie } from "../helpers";

/**
 * A claim whose nonce the chain shows spent, with no log of the spend in its blocks and no proof
 * of a later spend (no archive node), is decided by no run. Once runs have seen it so for a day it
 * is held for a person: no more RPC reads, listed as needs_person, and the maintainer puts it back
 * in the queue or decides it.
 */
const token = "reconcile-hold-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(
    new Request(`https://skills.test${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        ...(init.headers ?? {}),
      },
    }),
    adminEnv,
  );
const resolve = (table: string, key: string, body: unknown) =>
  send(`/api/admin/resolve/${table}/${encodeURIComponent(key)}`, {
    method: "POST",
    body: JSON.stringify(body),
  });
const hex = (bytes: number) =>
  `0x${[...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const now = () => Math.floor(Date.now() / 1000);

/**
 * A chain on which `spent` nonces are used at the head, with no log anywhere, and whose state at
 * older blocks cannot be read (a full node, not an archive): the "used, no log" case for good.
 */
function noLogChain(spent: Set<string>, chainId = Number(env.X402_NETWORK.split(":")[1])) {
  const reads: string[] = [];
  const reader: ChainReader = {
    chainId: async () => chainId,
    head: async () => ({ number: 500, timestamp: now(), blockSeconds: 2 }),
    blockTime: async (n) => now() - (500 - n) * 2,
    authorizationUsed: async (_a, _who, nonce, block) => {
      reads.push(nonce);
      if (!spent.has(nonce)) return false;
      if (block !== undefined && block < 500) throw new Error("missing trie node");
      return true;
    },
    findUse: async (_a, _who, nonce) => {
      reads.push(nonce);
      return undefined;
    },
  };
  return { reader, reads };
}

async function claim(network = env.X402_NETWORK) {
  const payer = hex(20);
  const nonce = hex(32);
  const key = `${network}:${env.USDC_ADDRESS}:${payer}:${nonce}`.toLowerCase();
  const requestId = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout)
     VALUES (?1, ?2, 'sha256', 'failed', ?3, ?3, ?4, ?5, ?6, ?7, 3000, ?8, ?9, 2, 'none')`,
  )
    .bind(
      key,
      requestId,
      Date.now() - 900_000,
      payer,
      env.PAY_TO,
      env.USDC_ADDRESS,
      network,
      nonce,
      now() - 400,
    )
    .run();
  return { key, nonce, requestId };
}
const claimRow = (key: string) =>
  env.DB.prepare("SELECT status, hold, no_log_runs, no_log_since FROM payment_nonces WHERE nonce = ?1")
    .bind(key)
    .first<{ status: string; hold: string | null; no_log_runs: number; no_log_since: number | null }>();
/** As if the claim had been seen `runs` times so far, the first `ageMs` ago; first in the next run's queue. */
const seen = (key: string, runs: number, ageMs: number) =>
  env.DB.prepare(
    "UPDATE payment_nonces SET no_log_runs = ?2, no_log_since = ?3, checked_at = NULL WHERE nonce = ?1",
  )
    .bind(key, runs, Date.now() - ageMs)
    .run();

describe("a claim spent with no log found is held for a person", () => {
  it(`after ${NO_LOG_HOLD_RUNS} runs spanning a day: no more RPC reads, listed as needs_person`, async () => {
    const c = await claim();
    const chain = noLogChain(new Set([c.nonce]));
    const first = await reconcile(env, chain.reader);
    expect(first.errors).toEqual([]);
    expect(chain.reads).toContain(c.nonce);
    expect(await claimRow(c.key)).toMatchObject({ status: "failed", hold: null, no_log_runs: 1 });

    // Many runs within the day, or a day with few runs: still in the queue.
    await seen(c.key, NO_LOG_HOLD_RUNS - 1, NO_LOG_HOLD_MS - 60_000);
    await reconcile(env, chain.reader);
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: NO_LOG_HOLD_RUNS });
    await seen(c.key, NO_LOG_HOLD_RUNS - 3, NO_LOG_HOLD_MS + 60_000);
    await reconcile(env, chain.reader);
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: NO_LOG_HOLD_RUNS - 2 });

    // The twelfth run over a day holds it, and says so.
    await seen(c.key, NO_LOG_HOLD_RUNS - 1, NO_LOG_HOLD_MS + 60_000);
    const holding = await reconcile(env, chain.reader);
    expect(cronFailure(holding)).toBeUndefined();
    const held = await claimRow(c.key);
    expect(held).toMatchObject({ status: "failed", no_log_runs: NO_LOG_HOLD_RUNS });
    expect(held?.hold).toMatch(/used, but no AuthorizationUsed or AuthorizationCanceled log found in blocks/);
    expect(holding.needs_person).toEqual([
      expect.objectContaining({
        kind: "payment",
        ref: c.key,
        request_id: c.requestId,
        hold: held?.hold,
        no_log_runs: NO_LOG_HOLD_RUNS,
        resolve: `/api/admin/resolve/payment_nonces/${encodeURIComponent(c.key)}`,
      }),
    ]);

    // Never read again while held.
    chain.reads.length = 0;
    await env.DB.prepare("UPDATE payment_nonces SET checked_at = NULL WHERE nonce = ?1").bind(c.key).run();
    const later = await reconcile(env, chain.reader);
    expect(chain.reads).not.toContain(c.nonce);
    expect(later.needs_person).toEqual([]);

    // The admin payments view lists it as needs_person, no longer as unconfirmed.
    const view = await (await send("/api/admin/payments")).json<{
      unconfirmed: { nonce: string }[];
      needs_person: { ref: string; hold: string }[];
    }>();
    expect(view.unconfirmed.map((u) => u.nonce)).not.toContain(c.key);
    expect(view.needs_person).toEqual(
      expect.arrayContaining([expect.objectContaining({ kind: "payment", ref: c.key, hold: held?.hold })]),
    );

    // The dashboard's settlements to reconcile say it waits for a person, not for the next run.
    const cookie = await adminCookie(
      (path, init) => createApp().fetch(new Request(`https://skills.test${path}`, init), adminEnv),
      token,
    );
    const page = await (
      await createApp().fetch(new Request("https://skills.test/admin", { headers: { cookie } }), adminEnv)
    ).text();
    const unconfirmed = page.slice(page.indexOf('id="unconfirmed"'), page.indexOf('id="refunds-owed"'));
    expect(unconfirmed).toContain(c.key);
    expect(unconfirmed).toContain(`needs a person: ${held?.hold}`);
  });

  it(`judged so ${NO_LOG_SPACED_AFTER} times, it is read only every ${NO_LOG_EVERY_MS / 3_600_000} h until held: the day costs ~14 reads, not one per run`, async () => {
    // A network of its own: a short queue, read on every run, whatever other files leave in D1.
    const chainId = 940_001;
    const network = `eip155:${chainId}`;
    const c = await claim(network);
    const upstreamNonce = hex(32);
    const { meta } = await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before)
       VALUES (?1, 'pricefeed', 'price', 10000, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
      .bind(
        crypto.randomUUID(),
        Date.now() - 900_000,
        hex(20),
        hex(20),
        env.USDC_ADDRESS,
        network,
        upstreamNonce,
        now() - 400,
      )
      .run();
    const upstreamId = Number(meta.last_row_id);
    const chain = noLogChain(new Set([c.nonce, upstreamNonce]), chainId);
    const run = async () => {
      chain.reads.length = 0;
      await reconcile({ ...env, X402_NETWORK: network }, chain.reader);
      return { claim: chain.reads.includes(c.nonce), upstream: chain.reads.includes(upstreamNonce) };
    };
    const upstreamRuns = async () =>
      (
        await env.DB.prepare("SELECT no_log_runs FROM upstream_payments WHERE id = ?1")
          .bind(upstreamId)
          .first<{ no_log_runs: number }>()
      )?.no_log_runs;
    for (let i = 1; i <= NO_LOG_SPACED_AFTER; i++) {
      expect(await run()).toEqual({ claim: true, upstream: true });
      expect(await claimRow(c.key)).toMatchObject({ no_log_runs: i });
    }
    // The next runs (every 5 minutes) leave both alone until the interval has passed.
    expect(await run()).toEqual({ claim: false, upstream: false });
    expect(await claimRow(c.key)).toMatchObject({ no_log_runs: NO_LOG_SPACED_AFTER, hold: null });
    expect(await upstreamRuns()).toBe(NO_LOG_SPACED_AFTER);

    // The maintainer can ask for a spaced-out claim to be read now (a log they know exists):
    // queued, its count starts over and the next run reads it.
    const queued = await resolve("payment_nonces", c.key, { outcome: "queue" });
    expect(queued.status).toBe(200);
    expect(await queued.json()).toMatchObject({ replayed: false, claim: { no_log_runs: 0, hold: null } });
    expect((await run()).claim).toBe(true);
    expect(await claimRow(c.key)).toMatchObject({ no_log_runs: 1 });
    await seen(c.key, NO_LOG_SPACED_AFTER, 60_000);
    const lastRead = async (ms: number) => {
      await env.DB.prepare("UPDATE payment_nonces SET checked_at = ?2 WHERE nonce = ?1")
        .bind(c.key, ms)
        .run();
      await env.DB.prepare("UPDATE upstream_payments SET checked_at = ?2 WHERE id = ?1")
        .bind(upstreamId, ms)
        .run();
    };
    await lastRead(Date.now() - NO_LOG_EVERY_MS + 300_000);
    expect(await run()).toEqual({ claim: false, upstream: false });
    await lastRead(Date.now() - NO_LOG_EVERY_MS - 1000);
    expect(await run()).toEqual({ claim: true, upstream: true });
    expect(await claimRow(c.key)).toMatchObject({ no_log_runs: NO_LOG_SPACED_AFTER + 1 });
    expect(await upstreamRuns()).toBe(NO_LOG_SPACED_AFTER + 1);

    // Spaced so, it is still held on its twelfth read over a day.
    await seen(c.key, NO_LOG_HOLD_RUNS - 1, NO_LOG_HOLD_MS + 60_000);
    await lastRead(Date.now() - NO_LOG_EVERY_MS - 1000);
    expect((await run()).claim).toBe(true);
    expect((await claimRow(c.key))?.hold).toMatch(/held for a person/);
  });

  it("queue on a claim read every run (judged so once, not spaced out) changes nothing", async () => {
    const c = await claim();
    const chain = noLogChain(new Set([c.nonce]));
    await reconcile(env, chain.reader);
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: 1 });
    const res = await resolve("payment_nonces", c.key, { outcome: "queue" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ replayed: true, claim: { no_log_runs: 1 } });
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: 1 });
  });

  it("the maintainer puts it back in the queue: read again, its count started over", async () => {
    const c = await claim();
    const chain = noLogChain(new Set([c.nonce]));
    await seen(c.key, NO_LOG_HOLD_RUNS - 1, NO_LOG_HOLD_MS + 60_000);
    await reconcile(env, chain.reader);
    expect((await claimRow(c.key))?.hold).not.toBeNull();

    const res = await resolve("payment_nonces", c.key, { outcome: "queue" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ replayed: false, claim: { kind: "payment", hold: null } });
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: 0, no_log_since: null });
    // Again: it is in the queue already.
    expect(await (await resolve("payment_nonces", c.key, { outcome: "queue" })).json()).toMatchObject({
      replayed: true,
    });
    chain.reads.length = 0;
    await reconcile(env, chain.reader);
    expect(chain.reads).toContain(c.nonce);
    expect(await claimRow(c.key)).toMatchObject({ hold: null, no_log_runs: 1 });
  });

  it("the maintainer decides it landed: the ledger row and the caller's refund are written as a run would, the same body again answers it", async () => {
    const c = await claim();
    const chain = noLogChain(new Set([c.nonce]));
    // Not held yet: reconciliation is still deciding it.
    const early = await resolve("payment_nonces", c.key, { outcome: "landed", tx_hash: hex(32) });
    expect(early.status).toBe(409);
    expect((await early.json<{ detail: string }>()).detail).toMatch(/not held/);

    await seen(c.key, NO_LOG_HOLD_RUNS - 1, NO_LOG_HOLD_MS + 60_000);
    await reconcile(env, chain.reader);
    const tx = hex(32);
    const body = { outcome: "landed", tx_hash: tx, note: "found on the explorer" };
    const res = await resolve("payment_nonces", c.key, body);
    expect(res.status).toBe(200);
    const answer = await res.json<{ replayed: boolean; claim: Record<string, unknown> }>();
    expect(answer).toMatchObject({
      replayed: false,
      claim: {
        status: "settled",
        decision: {
          outcome: "settled",
          tx_hash: tx,
          evidence: expect.stringMatching(/^resolved by hand: found on the explorer/),
        },
      },
    });
    const payment = await env.DB.prepare("SELECT tx_hash, reconciled_at FROM payments WHERE nonce = ?1")
      .bind(c.key)
      .first<{ tx_hash: string }>();
    expect(payment?.tx_hash).toBe(tx);
    // Its result was withheld (502 settlement_unconfirmed): the caller is owed the price, sent by the next run.
    expect(
      await env.DB.prepare("SELECT status, amount_micro, valid_before FROM refunds WHERE request_id = ?1")
        .bind(c.requestId)
        .first(),
    ).toEqual({ status: "owed", amount_micro: 3000, valid_before: null });

    const again = await resolve("payment_nonces", c.key, body);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ replayed: true });
    const otherWay = await resolve("payment_nonces", c.key, { outcome: "not_landed" });
    expect(otherWay.status).toBe(409);
    expect((await otherWay.json<{ detail: string }>()).detail).toMatch(/already decided: settled/);
  });

  it("an upstream authorization is held the same way and can be decided not landed", async () => {
    const nonce = hex(32);
    const requestId = crypto.randomUUID();
    const { meta } = await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before, no_log_runs, no_log_since)
       VALUES (?1, 'pricefeed', 'price', 10000, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`,
    )
      .bind(
        requestId,
        Date.now() - 900_000,
        hex(20),
        hex(20),
        env.USDC_ADDRESS,
        env.X402_NETWORK,
        nonce,
        now() - 400,
        NO_LOG_HOLD_RUNS - 1,
        Date.now() - NO_LOG_HOLD_MS - 60_000,
      )
      .run();
    const id = String(meta.last_row_id);
    const chain = noLogChain(new Set([nonce]));
    const summary = await reconcile(env, chain.reader);
    expect(summary.needs_person).toEqual(
      expect.arrayContaining([expect.objectContaining({ kind: "upstream", ref: id, request_id: requestId })]),
    );
    chain.reads.length = 0;
    await reconcile(env, chain.reader);
    expect(chain.reads).not.toContain(nonce);

    const res = await resolve("upstream_payments", id, { outcome: "not_landed", note: "cancelled by hand" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      claim: { kind: "upstream", chain_status: "not_landed", decision: { outcome: "not_landed" } },
    });
  });

  it("refuses what it cannot record: unknown rows and tables 404, a bad body 422 in FastAPI's shape", async () => {
    const c = await claim();
    expect((await resolve("payment_nonces", "no-such-claim", { outcome: "queue" })).status).toBe(404);
    expect((await resolve("upstream_payments", "abc", { outcome: "queue" })).status).toBe(404);
    expect((await resolve("payouts", "x", { outcome: "queue" })).status).toBe(404);
    const noOutcome = await resolve("payment_nonces", c.key, { tx_hash: hex(32) });
    expect(noOutcome.status).toBe(422);
    expect((await noOutcome.json<{ detail: { loc: string[]; type: string }[] }>()).detail).toEqual([
      expect.objectContaining({ loc: ["body", "outcome"], type: "missing" }),
    ]);
    const noTx = await resolve("payment_nonces", c.key, { outcome: "landed" });
    expect(noTx.status).toBe(422);
    expect((await noTx.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual(["body", "tx_hash"]);
    const badOutcome = await resolve("payment_nonces", c.key, { outcome: "maybe" });
    expect(badOutcome.status).toBe(422);
    expect(await claimRow(c.key)).toMatchObject({ status: "failed", hold: null });
  });
});
