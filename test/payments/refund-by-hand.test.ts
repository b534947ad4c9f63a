import { env } from "cloudflare:test";
import { generatePrivateKey } from "viem/accounts";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { reconcile } from "../../src/payments/reconcile";
import type { ChainReader } from "../../src/payments/reconcile-chain";
import { resolveRefundByHand } from "../../src/payments/refund-by-hand";
import { markRefunded, refundNonce, sendRecordedRefund } from "../../src/payments/refunds";
import { adminCookie } from "../helpers";
import { tryEnv } from "../partners/network";

/**
 * A refund the maintainer pays by hand (a held one: no payer address, a nonce spent elsewhere, a
 * row from before migration 0010, an amount in doubt) is recorded as such, so it leaves "Refunds
 * owed" and is never paid twice.
 */
const token = "refund-by-hand-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);
const resolve = (requestId: string, body: unknown, auth = `Bearer ${token}`) =>
  send(`/api/admin/resolve/refunds/${encodeURIComponent(requestId)}`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const hash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
const PAYER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

async function refund(over: {
  hold?: string | null;
  validBefore?: number | null;
  status?: string;
  tx?: string;
}) {
  const requestId = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, tx_hash, created_at, updated_at,
       hold, auth_nonce, asset, network, auth_from, valid_before)
     VALUES (?1, ?2, 3000, 0, 'test refund', ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
  )
    .bind(
      requestId,
      PAYER,
      over.status ?? "owed",
      over.tx ?? null,
      Date.now() - 600_000,
      over.hold === undefined ? "no payer address to refund to" : over.hold,
      await refundNonce(requestId),
      env.USDC_ADDRESS,
      env.X402_NETWORK,
      over.validBefore ? "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65" : null,
      over.validBefore ?? null,
    )
    .run();
  return requestId;
}
const row = (requestId: string) =>
  env.DB.prepare(
    "SELECT status, tx_hash, hold, resolved_at, resolved_note, auth_from FROM refunds WHERE request_id = ?1",
  )
    .bind(requestId)
    .first<Record<string, unknown>>();
const nowS = () => Math.floor(Date.now() / 1000);
/** Reconciliation (or a racing request) sending test refund `id` (3000) from the operating wallet. */
const walletSends = (id: string, e: typeof tryEnv = tryEnv) =>
  sendRecordedRefund(e, {
    requestId: id,
    payer: PAYER,
    network: env.X402_NETWORK,
    asset: env.USDC_ADDRESS,
    amount: 3000n,
    reason: "test refund",
  });

describe("the operating wallet's send without the KV binding", () => {
  it("signs nothing: the refund stays owed and says why (a hand record's copy cannot be read)", async () => {
    const id = await refund({ hold: null });
    const fetches = vi.spyOn(globalThis, "fetch");
    const { KV: _gone, ...withoutKv } = tryEnv as typeof tryEnv & { KV?: unknown };
    const sent = await walletSends(id, withoutKv as typeof tryEnv);
    const calls = fetches.mock.calls.length;
    fetches.mockRestore();
    expect(sent).toEqual({ status: "owed", amount: 3000n, transaction: null });
    expect(calls).toBe(0);
    const after = await env.DB.prepare("SELECT status, tx_hash, error FROM refunds WHERE request_id = ?1")
      .bind(id)
      .first<Record<string, unknown>>();
    expect(after).toEqual({
      status: "owed",
      tx_hash: null,
      error: "the KV binding is missing: a refund is not sent until its hand records can be read",
    });
  });
});

describe("POST /api/admin/resolve/refunds/{request_id}", () => {
  it("records a held refund as paid by hand; the same body again answers it; the payouts view lists it refunded", async () => {
    const id = await refund({});
    const tx = hash();
    const res = await resolve(id, {
      tx_hash: tx.toUpperCase().replace("0X", "0x"),
      amount_micro: 3000,
      note: "paid from treasury",
    });
    expect(res.status).toBe(200);
    const body = await res.json<{ refund: Record<string, unknown>; replayed: boolean }>();
    expect(body.replayed).toBe(false);
    expect(body.refund).toMatchObject({
      request_id: id,
      status: "refunded",
      tx_hash: tx,
      resolved_note: "paid from treasury",
      hold: "no payer address to refund to",
    });
    expect(body.refund.resolved_at).toBeGreaterThan(0);

    // A retry after a lost answer (in any letter case): the recorded row, nothing changed.
    const again = await resolve(id, { tx_hash: tx, amount_micro: 3000, note: "paid from treasury" });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ replayed: true, refund: { tx_hash: tx, status: "refunded" } });

    // Another transaction for the same refund: refused, the first kept.
    const other = await resolve(id, { tx_hash: hash(), amount_micro: 3000 });
    expect(other.status).toBe(409);
    expect((await other.json<{ detail: string }>()).detail).toMatch(/already recorded as paid by hand/);
    expect(await row(id)).toMatchObject({ tx_hash: tx });

    const payouts = await send("/api/admin/payouts", { headers: { authorization: `Bearer ${token}` } });
    const listed = (await payouts.json<{ refunds: Record<string, unknown>[] }>()).refunds.find(
      (r) => r.request_id === id,
    );
    expect(listed).toMatchObject({ status: "refunded", tx_hash: tx, resolved_note: "paid from treasury" });
    expect(listed?.resolved_at).toBeGreaterThan(0);
  });

  it("an owed refund never sent can be resolved; once resolved no send goes out for it", async () => {
    const id = await refund({ hold: null });
    const tx = hash();
    expect((await resolve(id, { tx_hash: tx, amount_micro: 3000 })).status).toBe(200);
    // Reconciliation (or a racing request) sending it now finds it no longer owed: nothing signed.
    const sent = await walletSends(id);
    expect(sent).toMatchObject({ status: "refunded", transaction: tx });
    expect(await row(id)).toMatchObject({ auth_from: null, tx_hash: tx, status: "refunded" });
  });

  it("after a D1 restore to before a hand refund, the wallet never sends it: it is held, naming the record, until recorded again", async () => {
    const id = await refund({ hold: null });
    const before = await env.DB.prepare("SELECT * FROM refunds WHERE request_id = ?1").bind(id).first();
    const tx = hash();
    expect((await resolve(id, { tx_hash: tx, amount_micro: 3000 })).status).toBe(200);
    // `wrangler d1 time-travel restore` to a point before the record: the row is owed again.
    const cols = Object.keys(before as object);
    await env.DB.batch([
      env.DB.prepare("DELETE FROM refunds WHERE request_id = ?1").bind(id),
      env.DB.prepare(
        `INSERT INTO refunds (${cols.join(",")}) VALUES (${cols.map((_, i) => `?${i + 1}`).join(",")})`,
      ).bind(...cols.map((c) => (before as Record<string, unknown>)[c] ?? null)),
    ]);
    const sent = await walletSends(id);
    expect(sent).toMatchObject({ status: "owed", transaction: null });
    // Nothing signed (a send writes the authorizer first), held with what KV kept of the record.
    const held = await row(id);
    expect(held).toMatchObject({ status: "owed", auth_from: null });
    expect(held?.hold).toContain(`recorded by hand (paid, tx ${tx}, 3000 micro-USDC)`);
    // The person records it again as it was: refunded, with their transfer.
    expect((await resolve(id, { tx_hash: tx, amount_micro: 3000 })).status).toBe(200);
    expect(await row(id)).toMatchObject({ status: "refunded", tx_hash: tx });
  });

  it("a hand refund whose copy KV refuses answers 503 to send it again; the same body again writes the copy", async () => {
    const id = await refund({});
    const tx = hash();
    const noKvWrites = {
      ...adminEnv,
      KV: { get: env.KV.get.bind(env.KV), put: () => Promise.reject(new Error("KV write limit")) },
    };
    const viaNoKv = await createApp().fetch(
      new Request(`https://skills.test/api/admin/resolve/refunds/${id}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ tx_hash: tx, amount_micro: 3000 }),
      }),
      noKvWrites,
    );
    expect(viaNoKv.status).toBe(503);
    expect((await viaNoKv.json<{ detail: string }>()).detail).toMatch(/send the same decision again/);
    expect(await env.KV.get(`refund-by-hand:${id}`)).toBeNull();
    const again = await resolve(id, { tx_hash: tx, amount_micro: 3000 });
    expect(await again.json()).toMatchObject({ replayed: true });
    expect(JSON.parse((await env.KV.get(`refund-by-hand:${id}`)) as string)).toMatchObject({
      outcome: "paid",
      tx_hash: tx,
      amount_micro: 3000,
    });
  });

  it("a refund the operating wallet may be sending (its authorization still valid) is refused; after it expired it can be resolved", async () => {
    const sending = await refund({ hold: null, validBefore: nowS() + 200 });
    const res = await resolve(sending, { tx_hash: hash(), amount_micro: 3000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/is being sent/);
    expect(await row(sending)).toMatchObject({ status: "owed", resolved_at: null });
    // The chain's clock lags ours: a minute past valid_before is still too soon.
    const justExpired = await refund({ hold: null, validBefore: nowS() - 30 });
    expect((await resolve(justExpired, { tx_hash: hash(), amount_micro: 3000 })).status).toBe(409);
    // Past it, the chain decides whether it landed (refund-by-hand-chain.test.ts): with no chain to
    // read (no RPC_URL here), nothing is recorded.
    const expired = await refund({ validBefore: nowS() - 120, hold: "used for another transfer" });
    const unchecked = await resolve(expired, { tx_hash: hash(), amount_micro: 3000 });
    expect(unchecked.status).toBe(503);
    expect(unchecked.headers.get("retry-after")).toBe("30");
    expect(await row(expired)).toMatchObject({ status: "owed", resolved_at: null });
    // An RPC_URL that is no http(s) URL is not read: the 503 names the var, never its value.
    for (const rpc of ["rpc.example/v2/SECRETKEY123", "ws://127.0.0.1:8545"]) {
      const res = await createApp().fetch(
        new Request(`https://skills.test/api/admin/resolve/refunds/${expired}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ tx_hash: hash(), amount_micro: 3000 }),
        }),
        { ...adminEnv, RPC_URL: rpc },
      );
      expect(res.status).toBe(503);
      const { detail } = await res.json<{ detail: string }>();
      expect(detail).toBe(
        `Refund ${expired}: cannot check the chain for the wallet's send; nothing recorded (RPC_URL is not an absolute http(s) URL (its value is not shown))`,
      );
      expect(await row(expired)).toMatchObject({ status: "owed", resolved_at: null });
    }
  });

  it("a refund that landed from the operating wallet is 409; an unknown id 404; one transfer pays one refund", async () => {
    const landed = await refund({ hold: null, status: "refunded", tx: hash() });
    const res = await resolve(landed, { tx_hash: hash(), amount_micro: 3000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/already landed from the operating wallet/);
    expect((await resolve("no-such-request", { tx_hash: hash(), amount_micro: 3000 })).status).toBe(404);

    const tx = hash();
    const first = await refund({});
    const second = await refund({});
    expect((await resolve(first, { tx_hash: tx, amount_micro: 3000 })).status).toBe(200);
    const twice = await resolve(second, {
      tx_hash: tx.toUpperCase().replace("0X", "0x"),
      amount_micro: 3000,
    });
    expect(twice.status).toBe(409);
    expect((await twice.json<{ detail: string }>()).detail).toContain(`already recorded for refund ${first}`);
    expect(await row(second)).toMatchObject({ status: "owed", resolved_at: null });
  });

  it("refuses a bad body in FastAPI's shape, and anyone without the token", async () => {
    const id = await refund({});
    const noTx = await resolve(id, { note: "x" });
    expect(noTx.status).toBe(422);
    expect((await noTx.json<{ detail: { loc: string[]; type: string }[] }>()).detail).toEqual([
      expect.objectContaining({ loc: ["body", "tx_hash"], type: "missing" }),
    ]);
    const badTx = await resolve(id, { tx_hash: "0x1234", amount_micro: 3000 });
    expect(badTx.status).toBe(422);
    expect((await badTx.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual(["body", "tx_hash"]);
    const longNote = await resolve(id, { tx_hash: hash(), amount_micro: 3000, note: "x".repeat(501) });
    expect(longNote.status).toBe(422);
    // The amount paid: required with tx_hash, a whole number of micro-USDC from 1 to 10^12.
    const noAmount = await resolve(id, { tx_hash: hash() });
    expect(noAmount.status).toBe(422);
    expect((await noAmount.json<{ detail: { loc: string[]; type: string }[] }>()).detail).toEqual([
      expect.objectContaining({ loc: ["body", "amount_micro"], type: "missing" }),
    ]);
    for (const amount of [0, -1, 2.5, "3000", 1_000_000_000_001]) {
      const bad = await resolve(id, { tx_hash: hash(), amount_micro: amount });
      expect(bad.status).toBe(422);
      expect((await bad.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual([
        "body",
        "amount_micro",
      ]);
    }
    expect((await resolve(id, { tx_hash: hash(), amount_micro: 3000 }, "Bearer wrong")).status).toBe(401);
    expect(await row(id)).toMatchObject({ status: "owed" });
  });
});

describe("the dashboard's Record refund form", () => {
  it("each held or owed refund has one; it records the refund (session and CSRF as for Mark paid)", async () => {
    const id = await refund({});
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const action = `/admin/refunds/${id}/resolve`;
    const form = html.match(new RegExp(`<form method="post" action="${action}"[\\s\\S]*?</form>`))?.[0] ?? "";
    expect(form).toContain('name="tx_hash"');
    expect(form).toMatch(/<input[^>]*name="amount_micro"[^>]*required/);
    const csrf = form.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      send(action, {
        method: "POST",
        headers: { cookie, origin: "https://skills.test", ...headers },
        body: new URLSearchParams(fields),
      });
    const tx = hash();
    expect((await post({ csrf: "wrong", tx_hash: tx })).status).toBe(403);
    expect((await post({ csrf, tx_hash: tx }, { origin: "https://evil.test" })).status).toBe(403);
    expect((await post({ csrf, tx_hash: "0xnope", amount_micro: "3000" })).status).toBe(422);
    // The amount paid is required, a whole number of micro-USDC from 1 to the bound.
    for (const amount of [undefined, "", "0", "-5", "2.5", "3e3", "1000000000001"]) {
      const bad = await post({
        csrf,
        tx_hash: tx,
        ...(amount === undefined ? {} : { amount_micro: amount }),
      });
      expect(bad.status).toBe(422);
      expect((await bad.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual([
        "body",
        "amount_micro",
      ]);
    }
    expect(await row(id)).toMatchObject({ status: "owed" });
    // Any note the form allows (500 characters, each up to 12 bytes once percent-encoded) is taken.
    const note = "退款已从财务钱包手动支付".repeat(50).slice(0, 500);
    const done = await post({ csrf, tx_hash: tx, amount_micro: "3000", note });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/admin?notice=refund-resolved");
    expect(await row(id)).toMatchObject({ status: "refunded", tx_hash: tx, resolved_note: note });
    // Pressed again: told it is recorded already.
    expect((await post({ csrf, tx_hash: tx, amount_micro: "3000" })).status).toBe(409);
    const after = await (await send("/admin?notice=refund-resolved", { headers: { cookie } })).text();
    expect(after).not.toContain(action);
    expect(after).toContain("Refund recorded as paid by hand.");
    // A notice is one of the page's own: a name from the object's prototype shows none.
    const proto = await (await send("/admin?notice=constructor", { headers: { cookie } })).text();
    expect(proto).not.toContain('role="status"');
    // Signed out: the sign-in page, nothing recorded.
    const other = await refund({});
    const anon = await send(`/admin/refunds/${other}/resolve`, {
      method: "POST",
      headers: { origin: "https://skills.test" },
      body: new URLSearchParams({ csrf, tx_hash: hash() }),
    });
    expect(anon.status).toBe(401);
    expect(await row(other)).toMatchObject({ status: "owed" });
  });
});

it("a sent refund recorded by hand once the chain showed it expired unused is never read or sent again by reconciliation", async () => {
  // A network of its own: the run reads no owed refund other files leave in the shared D1.
  const chainId = 930_001;
  const network = `eip155:${chainId}`;
  const id = await refund({ hold: null, validBefore: nowS() - 600 });
  await env.DB.prepare("UPDATE refunds SET network = ?2 WHERE request_id = ?1").bind(id, network).run();
  const reads: string[] = [];
  const reader: ChainReader = {
    chainId: async () => chainId,
    head: async () => ({ number: 500, timestamp: nowS(), blockSeconds: 2 }),
    blockTime: async (n) => nowS() - (500 - n) * 2,
    authorizationUsed: async (_asset, _who, nonce) => {
      reads.push(nonce);
      return false;
    },
    findUse: async () => undefined,
  };
  const runEnv = { ...env, X402_NETWORK: network, PARTNER_PAYER_KEY: generatePrivateKey() };
  const tx = hash();
  const hand = await resolveRefundByHand(runEnv, id, tx, 3000, "paid from treasury", { reader });
  expect(hand.status).toBe("recorded");
  expect(reads).toEqual([await refundNonce(id)]);

  reads.length = 0;
  await env.DB.prepare("UPDATE refunds SET updated_at = 0 WHERE request_id = ?1").bind(id).run();
  const run = await reconcile(runEnv, reader);
  expect(run).toMatchObject({ checked: 0, refunded: 0, refunds_owed: 0, errors: [] });
  expect(reads).toEqual([]);
  expect(await row(id)).toMatchObject({ status: "refunded", tx_hash: tx, auth_from: expect.any(String) });
  // And the wallet's mark never writes over a hand record, should anything call it.
  expect((await markRefunded(env.DB, id, hash())).meta.changes).toBe(0);
});

it("a kept share decided before returns existed (no return row) is recorded as returned by hand and leaves withheld_not_returned", async () => {
  const first = await refund({ hold: null, status: "refunded", tx: hash() });
  await env.DB.batch([
    env.DB.prepare("UPDATE refunds SET withheld_micro = 10000 WHERE request_id = ?1").bind(first),
    env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
         asset, network, chain_status)
       VALUES (?1, 'pricefeed', 'price', 8000, 0, 1, ?2, ?3, 'not_landed')`,
    ).bind(first, env.USDC_ADDRESS, env.X402_NETWORK),
  ]);
  const payouts = async () =>
    (
      await (
        await send("/api/admin/payouts", { headers: { authorization: `Bearer ${token}` } })
      ).json<{
        withheld_not_returned: { request_id: string; return_request_id: string | null }[];
      }>()
    ).withheld_not_returned.filter((w) => w.request_id === first);
  expect(await payouts()).toEqual([expect.objectContaining({ return_request_id: null })]);
  const tx = hash();
  const res = await resolve(`${first}:withheld`, {
    tx_hash: tx,
    amount_micro: 10000,
    note: "returned the share",
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({
    replayed: false,
    refund: {
      request_id: `${first}:withheld`,
      status: "refunded",
      // The request's only authorization did not land: all that was kept comes back, as
      // reconciliation's return would have given it (payments/refunds.ts withheldReturn).
      amount_micro: 10000,
      tx_hash: tx,
      payer: PAYER,
    },
  });
  expect(await payouts()).toEqual([]);
  expect((await resolve(`${first}:withheld`, { tx_hash: tx, amount_micro: 10000 })).status).toBe(200);
  // A return of a request that kept nothing back, or whose authorization may still land: unknown.
  expect(
    (await resolve(`${await refund({})}:withheld`, { tx_hash: hash(), amount_micro: 10000 })).status,
  ).toBe(404);
});
