import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { ledgerReport, paymentsQuery } from "../../src/payments/ledger-report";
import { applyUpstream } from "../../src/payments/reconcile-store";
import { dismissInDoubt, resolveRefundByHand } from "../../src/payments/refund-by-hand";
import { refundCaller, refundNonce, refundsToSettle, sendRecordedRefund } from "../../src/payments/refunds";
import { adminCookie } from "../helpers";
import {
  adminEnv,
  auth,
  authorizationTurnsUp,
  hash,
  inDoubtRefund,
  keptInDoubt,
  NETWORK,
  NOTE,
  PAYER,
  payouts,
  resolve,
  row,
  send,
  token,
} from "./refund-fixtures";

/**
 * A partner's share kept back in doubt (a `<request_id>:withheld` listing held "kept back in doubt:
 * …", never sent) that a person found the partner was paid in full: recorded as nothing owed, it
 * leaves "Refunds owed", is counted as neither owed nor refunded money, and can take no other
 * decision (a hand refund, a send, reconciliation's rewrite) afterwards.
 */
/** The operating wallet's send of `listing` as a refund of `amount` (its claim decides whether it may). */
const sendListing = (listing: string, amount: number) =>
  sendRecordedRefund(
    { ...env, PARTNER_PAYER_KEY: `0x${"11".repeat(32)}` },
    {
      requestId: listing,
      payer: PAYER,
      network: NETWORK,
      asset: env.USDC_ADDRESS,
      amount: BigInt(amount),
      reason: "t",
    },
  );

describe("POST /api/admin/resolve/refunds/{request_id} {outcome: nothing_owed}", () => {
  it("records a share kept back in doubt as nothing owed: it keeps its amount, leaves what is owed, is counted as no refund, and the same body again answers it", async () => {
    const { requestId, listing } = await keptInDoubt(true);
    const before = await row(listing);
    const res = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(res.status).toBe(200);
    const body = await res.json<{ refund: Record<string, unknown>; replayed: boolean }>();
    expect(body).toMatchObject({
      replayed: false,
      refund: {
        request_id: listing,
        status: "refunded",
        nothing_owed: true,
        amount_micro: 20000,
        tx_hash: null,
        hold: before?.hold,
        resolved_note: NOTE,
        valid_before: null,
      },
    });
    expect(body.refund.resolved_at).toBeGreaterThan(0);

    // A retry after a lost answer: the recorded row, nothing changed.
    const again = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ refund: body.refund, replayed: true });
    // Another person's other note: told it is decided already.
    const other = await resolve(listing, { outcome: "nothing_owed", note: "something else" });
    expect(other.status).toBe(409);
    expect((await other.json<{ detail: string }>()).detail).toMatch(/already recorded as nothing owed/);

    // One decision per row: a hand refund of it afterwards is refused, and no send claims it. Its
    // hold alone would keep every send off (an in-doubt listing is never sent): cleared here, and
    // put back after, so what keeps the send off is that the row is no longer owed.
    const paid = await resolve(listing, { tx_hash: hash(), amount_micro: 20000 });
    expect(paid.status).toBe(409);
    expect((await paid.json<{ detail: string }>()).detail).toMatch(/already recorded as nothing owed/);
    await env.DB.prepare("UPDATE refunds SET hold = NULL, updated_at = 0 WHERE request_id = ?1")
      .bind(listing)
      .run();
    expect(await sendListing(listing, 20000)).toMatchObject({ status: "refunded", transaction: null });
    const { results } = await refundsToSettle(env.DB, NETWORK, Date.now() + 3_600_000, 1000);
    expect(results.map((r) => r.request_id)).not.toContain(listing);
    expect(await row(listing)).toMatchObject({
      status: "refunded",
      auth_from: null,
      valid_before: null,
      tx_hash: null,
      error: null,
      resolved_note: NOTE,
    });
    await env.DB.prepare("UPDATE refunds SET hold = ?2 WHERE request_id = ?1")
      .bind(listing, before?.hold)
      .run();

    // GET /api/admin/payouts lists it no longer owed, refunded by hand with no transfer, with the note.
    const listed = (await payouts()).refunds.find((r) => r.request_id === listing);
    expect(listed).toMatchObject({
      status: "refunded",
      nothing_owed: 1,
      tx_hash: null,
      amount_micro: 20000,
      resolved_note: NOTE,
    });
    // The caller's own refund is no such row.
    expect((await payouts()).refunds.find((r) => r.request_id === requestId)).toMatchObject({
      status: "owed",
      nothing_owed: 0,
    });
    expect(listed?.resolved_at).toBeGreaterThan(0);
    // The ledger's refund totals count the caller's refund only; the share is apart, for the record.
    const report = await ledgerReport(env.DB, paymentsQuery.parse({ request_id: requestId }));
    expect(report.refunds).toEqual({
      count: 1,
      amount_atomic: 40000,
      refunded_atomic: 0,
      nothing_owed_atomic: 20000,
    });
  });

  it("refuses (409, nothing recorded) any refund that is not a share kept back in doubt, never sent and undecided", async () => {
    const refused = async (requestId: string, detail: RegExp) => {
      const before = await row(requestId);
      const res = await resolve(requestId, { outcome: "nothing_owed", note: NOTE });
      expect(res.status).toBe(409);
      expect((await res.json<{ detail: string }>()).detail).toMatch(detail);
      expect(await row(requestId)).toEqual(before);
    };
    // The caller's own refund of the same request.
    const { requestId, listing } = await keptInDoubt();
    await refused(requestId, /is not a partner's share kept back in doubt/);
    // A return reconciliation recorded for an authorization that expired unused: not in doubt.
    const plain = `${crypto.randomUUID()}:withheld`;
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
         auth_nonce, asset, network, hold)
       VALUES (?1, ?2, 10000, 0, 'returned share', 'owed', ?3, ?3, ?4, ?5, ?6, 'held with refund x: no payer address')`,
    )
      .bind(plain, PAYER, Date.now(), await refundNonce(plain), env.USDC_ADDRESS, NETWORK)
      .run();
    await refused(plain, /is not a partner's share kept back in doubt/);
    // Already refunded by hand: the first decision stands.
    const tx = hash();
    expect(
      (await resolve(listing, { tx_hash: tx, amount_micro: 20000, note: "refunded it all" })).status,
    ).toBe(200);
    await refused(listing, /already recorded as paid by hand/);
    // One the operating wallet sent (its authorization may still land): never an in-doubt listing's
    // state, but the decision does not take it either.
    const sending = await keptInDoubt();
    await env.DB.prepare("UPDATE refunds SET auth_from = ?2, valid_before = ?3 WHERE request_id = ?1")
      .bind(sending.listing, `0x${"0b".repeat(20)}`, Math.floor(Date.now() / 1000) + 200)
      .run();
    await refused(sending.listing, /was sent by the operating wallet/);
    // An unknown request: 404.
    expect(
      (await resolve(`${crypto.randomUUID()}:withheld`, { outcome: "nothing_owed", note: NOTE })).status,
    ).toBe(404);
  });

  it("takes a note and no transaction; an outcome of the other tables is a 422, and nothing_owed is not a claim's", async () => {
    const { listing } = await keptInDoubt();
    const items = async (res: Response) => {
      expect(res.status).toBe(422);
      return (await res.json<{ detail: { loc: string[]; type: string }[] }>()).detail;
    };
    expect(await items(await resolve(listing, { outcome: "nothing_owed" }))).toEqual([
      expect.objectContaining({ loc: ["body", "note"], type: "missing" }),
    ]);
    expect(await items(await resolve(listing, { outcome: "nothing_owed", note: "  " }))).toEqual([
      expect.objectContaining({ loc: ["body", "note"], type: "missing" }),
    ]);
    expect(await items(await resolve(listing, { outcome: "nothing_owed", note: "x".repeat(501) }))).toEqual([
      expect.objectContaining({ loc: ["body", "note"] }),
    ]);
    expect(
      await items(await resolve(listing, { outcome: "nothing_owed", note: NOTE, tx_hash: hash() })),
    ).toEqual([expect.objectContaining({ loc: ["body", "tx_hash"] })]);
    expect(
      await items(await resolve(listing, { outcome: "nothing_owed", note: NOTE, amount_micro: 20000 })),
    ).toEqual([expect.objectContaining({ loc: ["body", "amount_micro"] })]);
    expect(await items(await resolve(listing, { outcome: "landed", tx_hash: hash() }))).toEqual([
      expect.objectContaining({ loc: ["body", "outcome"] }),
    ]);
    const claim = await send("/api/admin/resolve/payment_nonces/some-nonce", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ outcome: "nothing_owed", note: NOTE }),
    });
    expect(await items(claim)).toEqual([expect.objectContaining({ loc: ["body", "outcome"] })]);
    expect(await row(listing)).toMatchObject({ status: "owed", resolved_at: null });
  });
});

const expiredUnused = { outcome: "unpaid" as const, evidence: "test: expired unused" };
const withheldOf = async (requestId: string) =>
  (await payouts()).withheld_not_returned.filter((w) => w.request_id === requestId);

describe("a refund the request path records held for a person", () => {
  it("is one warn line per row held, with the ids to find it; a retry that finds it recorded writes none", async () => {
    const lines: string[] = [];
    const warn = vi.spyOn(console, "warn").mockImplementation((l: unknown) => void lines.push(String(l)));
    try {
      const requestId = crypto.randomUUID();
      // No payer address: the caller's refund is held too, beside its share kept in doubt, whose
      // hold quotes the RPC URL (as an error read from the chain would): the line must not.
      const rpc = "https://rpc.example/secret-key-123";
      const refund = { ...inDoubtRefund(requestId, ""), inDoubt: `test: the read of ${rpc} failed` };
      await refundCaller({ ...env, RPC_URL: rpc }, refund);
      const mine = () => lines.map((l) => JSON.parse(l)).filter((l) => l.request_id === requestId);
      expect(mine()).toEqual([
        {
          level: "warn",
          msg: "refund held for a person",
          on: "request",
          request_id: requestId,
          refund_id: requestId,
          amount_micro: 40000,
          hold: "no payer address to refund to",
        },
        {
          level: "warn",
          msg: "refund held for a person",
          on: "request",
          request_id: requestId,
          refund_id: `${requestId}:withheld`,
          amount_micro: 20000,
          hold: expect.stringMatching(/^kept back in doubt: /),
        },
      ]);
      expect(lines.join("\n")).not.toContain("secret-key-123");
      expect(mine()[1].hold).toContain("the read of <RPC_URL> failed");
      await refundCaller(env, refund);
      expect(mine()).toHaveLength(2);
    } finally {
      warn.mockRestore();
    }
  });
});

describe("the request's recorded partner authorizations decide whether nothing can be owed", () => {
  /** The decision is refused (409, `detail`) and the listing left as it was. */
  async function refused(listing: string, detail: RegExp) {
    const before = await row(listing);
    const res = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(detail);
    expect(await row(listing)).toEqual(before);
  }

  it("one still undecided: refused, and its later not_landed decision rewrites the listing for a hand refund and lists it", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId);
    await refused(
      listing,
      new RegExp(`not decided yet \\(upstream_payments ${upstream.id}\\): reconciliation decides it`),
    );
    // Decided now: expired unused. The share is the caller's, to refund by hand, and listed so.
    await applyUpstream(env.DB, upstream, expiredUnused);
    expect(await row(listing)).toMatchObject({
      status: "owed",
      amount_micro: 20000,
      hold: expect.stringMatching(/^kept back in doubt: decided since/),
    });
    expect(await withheldOf(requestId)).toEqual([
      expect.objectContaining({ return_request_id: listing, return_status: "owed" }),
    ]);
    await refused(listing, /was decided by reconciliation since/);
  });

  it("one the chain shows did not land: refused, the share is the caller's", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId, { chainStatus: "not_landed" });
    await refused(
      listing,
      new RegExp(`did not land \\(upstream_payments ${upstream.id}\\).*refund it by hand`),
    );
  });

  it("one held for a person: refused, naming its resolve; the person's not_landed then leaves the share listed for a hand refund", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId, { hold: "test: spent, no log found" });
    await refused(
      listing,
      new RegExp(
        `held for a person: decide it with POST /api/admin/resolve/upstream_payments/${upstream.id}`,
      ),
    );
    const decided = await send(`/api/admin/resolve/upstream_payments/${upstream.id}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ outcome: "not_landed", note: "cancelled it" }),
    });
    expect(decided.status).toBe(200);
    expect(await row(listing)).toMatchObject({
      status: "owed",
      hold: expect.stringMatching(/^kept back in doubt: decided since/),
    });
    expect(await withheldOf(requestId)).toEqual([
      expect.objectContaining({ return_request_id: listing, return_status: "owed" }),
    ]);
  });

  it("landed for less than the share: refused, naming what the caller is still owed", async () => {
    const { requestId, listing } = await keptInDoubt();
    await authorizationTurnsUp(requestId, { chainStatus: "landed", amount: 15000 });
    await refused(listing, /landed for 15000 micro-USDC, less than the 20000 kept.*the other 5000/);
  });

  it("landed for the whole share: recorded", async () => {
    const { requestId, listing } = await keptInDoubt();
    await authorizationTurnsUp(requestId, { chainStatus: "landed", amount: 20000 });
    const res = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(res.status).toBe(200);
    expect(await row(listing)).toMatchObject({ status: "refunded", tx_hash: null, resolved_note: NOTE });
  });
});

describe("racing reconciliation's rewrite of the same listing", () => {
  it("recorded while the run decides (after its read, before its write): refused, the authorization being undecided, and the run's rewrite stands", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId);
    let dismissed: Awaited<ReturnType<typeof dismissInDoubt>> | undefined;
    // The run reads the refund (withheldReturn), then writes its batch: the person's decision comes
    // in between.
    const racing = new Proxy(env.DB, {
      get(target, key) {
        if (key === "batch")
          return async (stmts: D1PreparedStatement[]) => {
            dismissed ??= await dismissInDoubt(env.DB, listing, NOTE);
            return target.batch(stmts);
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await applyUpstream(racing, upstream, expiredUnused);
    expect(dismissed).toMatchObject({ status: "refused", detail: expect.stringMatching(/not decided yet/) });
    expect(await row(listing)).toMatchObject({
      status: "owed",
      resolved_at: null,
      hold: expect.stringMatching(/^kept back in doubt: decided since/),
    });
    expect(await withheldOf(requestId)).toEqual([
      expect.objectContaining({ return_request_id: listing, return_status: "owed" }),
    ]);
  });

  it("rewritten by the run first: the decision is refused, the listing left for a hand refund", async () => {
    const { requestId, listing } = await keptInDoubt();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId), expiredUnused);
    const decided = await row(listing);
    expect(decided).toMatchObject({
      status: "owed",
      hold: expect.stringMatching(/^kept back in doubt: decided since/),
    });
    const res = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/did not land.*refund it by hand/);
    expect(await row(listing)).toEqual(decided);
  });
});

describe("the dashboard's Record nothing owed form", () => {
  it("recorded but its copy outside D1 refused (KV): 503 saying to send it again; sent again, the copy is written", async () => {
    const { listing } = await keptInDoubt();
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const csrf = html.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
    const action = `/admin/refunds/${encodeURIComponent(listing)}/resolve`;
    const init = () => ({
      method: "POST",
      headers: { cookie, origin: "https://skills.test" },
      body: new URLSearchParams({ csrf, outcome: "nothing_owed", note: NOTE }),
    });
    const noKvWrites = {
      ...adminEnv,
      KV: { get: env.KV.get.bind(env.KV), put: () => Promise.reject(new Error("KV write limit")) },
    };
    const warn = vi.spyOn(console, "error").mockImplementation(() => {});
    const refused = await createApp().fetch(
      new Request(`https://skills.test${action}`, { redirect: "manual", ...init() }),
      noKvWrites,
    );
    warn.mockRestore();
    expect(refused.status).toBe(503);
    expect((await refused.json<{ detail: string }>()).detail).toMatch(/send the same decision again/);
    expect(await row(listing)).toMatchObject({ status: "refunded", resolved_note: NOTE });
    expect(await env.KV.get(`refund-by-hand:${listing}`)).toBeNull();
    // Sent again: the decision is recorded already (409), and its copy is written now.
    expect((await send(action, init())).status).toBe(409);
    expect(JSON.parse((await env.KV.get(`refund-by-hand:${listing}`)) as string)).toMatchObject({
      outcome: "nothing_owed",
      tx_hash: null,
    });
  });

  it("is offered beside a share kept back in doubt only; it records it (session, CSRF and Origin as for Record refund)", async () => {
    const { requestId, listing } = await keptInDoubt();
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const action = `/admin/refunds/${encodeURIComponent(listing)}/resolve`;
    const forms = [
      ...html.matchAll(new RegExp(`<form method="post" action="${action}"[\\s\\S]*?</form>`, "g")),
    ].map((m) => m[0]);
    // Record refund, and beside it the decision.
    expect(forms).toHaveLength(2);
    const form = forms.find((f) => f.includes('name="outcome" value="nothing_owed"')) ?? "";
    expect(form).toMatch(/name="note"[^>]*required/);
    expect(form).not.toContain('name="tx_hash"');
    // The caller's own refund (owed, not a kept share) gets Record refund only.
    const own = `/admin/refunds/${encodeURIComponent(requestId)}/resolve`;
    expect(html.match(new RegExp(`action="${own}"`, "g"))).toHaveLength(1);

    const csrf = form.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      send(action, {
        method: "POST",
        headers: { cookie, origin: "https://skills.test", ...headers },
        body: new URLSearchParams(fields),
      });
    expect((await post({ csrf: "wrong", outcome: "nothing_owed", note: NOTE })).status).toBe(403);
    expect(
      (await post({ csrf, outcome: "nothing_owed", note: NOTE }, { origin: "https://evil.test" })).status,
    ).toBe(403);
    expect((await post({ csrf, outcome: "nothing_owed", note: "" })).status).toBe(422);
    expect((await post({ csrf, outcome: "landed", note: NOTE })).status).toBe(422);
    const anon = await send(action, {
      method: "POST",
      headers: { origin: "https://skills.test" },
      body: new URLSearchParams({ csrf, outcome: "nothing_owed", note: NOTE }),
    });
    expect(anon.status).toBe(401);
    expect(await row(listing)).toMatchObject({ status: "owed", resolved_at: null });

    const done = await post({ csrf, outcome: "nothing_owed", note: NOTE });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/admin?notice=refund-dismissed");
    expect(await row(listing)).toMatchObject({
      status: "refunded",
      tx_hash: null,
      amount_micro: 20000,
      resolved_note: NOTE,
    });
    // Pressed again: told it is recorded already.
    expect((await post({ csrf, outcome: "nothing_owed", note: NOTE })).status).toBe(409);
    // The caller's own refund is refused the decision through the form too.
    expect(
      (
        await send(own, {
          method: "POST",
          headers: { cookie, origin: "https://skills.test" },
          body: new URLSearchParams({ csrf, outcome: "nothing_owed", note: NOTE }),
        })
      ).status,
    ).toBe(409);
    const after = await (await send("/admin?notice=refund-dismissed", { headers: { cookie } })).text();
    expect(after).not.toContain(action);
    expect(after).toContain("recorded as nothing owed");
  });
});

/**
 * A share recorded as nothing owed with no authorization recorded, whose authorization then turns
 * up and is decided: should what landed come short of the share, the record was wrong and the
 * caller is owed the rest. The decision gives the listing back to a person, owed for the rest and
 * held (never sent): under "Refunds owed" on /admin, counted as owed, and a hand refund takes it.
 */
describe("a nothing-owed record a later decision contradicts", () => {
  const landed = (txHash = hash()) => ({ outcome: "paid" as const, txHash, evidence: "test: landed" });
  /** Kept in doubt (with a payments row, for GET /api/admin/payments), then recorded as nothing owed. */
  async function recordedNothingOwed(note = NOTE) {
    const kept = await keptInDoubt(true);
    expect((await resolve(kept.listing, { outcome: "nothing_owed", note })).status).toBe(200);
    return kept;
  }
  /** The listing owed `amount` again, held "decided since", the person's record kept in the hold. */
  async function expectOwedHeld(listing: string, amount: number, says: RegExp) {
    const r = await row(listing);
    expect(r).toMatchObject({
      status: "owed",
      amount_micro: amount,
      tx_hash: null,
      valid_before: null,
      auth_from: null,
      resolved_at: null,
      resolved_note: null,
      hold: expect.stringMatching(/^kept back in doubt: decided since \(/),
    });
    expect(r?.hold).toMatch(says);
    expect(r?.hold).toContain(`recorded this share as nothing owed on `);
    expect(r?.hold).toContain(NOTE);
    expect(r?.hold).toMatch(/listed before as: kept back in doubt: an authorization/);
  }
  /** Listed under "Refunds owed" on /admin (with Record refund, not Record nothing owed), or not. */
  async function onDashboard(listing: string) {
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const start = html.indexOf('id="refunds-owed"');
    expect(start).toBeGreaterThan(-1);
    const table = html.slice(start, html.indexOf("</table>", start));
    const action = `action="/admin/refunds/${encodeURIComponent(listing)}/resolve"`;
    return { listed: table.includes(action), forms: table.split(action).length - 1 };
  }
  /** GET /api/admin/payments' refund totals for the request. */
  const totals = async (requestId: string) =>
    (
      await (
        await send(`/api/admin/payments?request_id=${encodeURIComponent(requestId)}`, { headers: auth })
      ).json<{ refunds: Record<string, number> }>()
    ).refunds;
  /** Never sent: no run reads it, and a send of it claims nothing (its hold keeps it off). */
  async function neverSent(listing: string, amount: number) {
    const { results } = await refundsToSettle(env.DB, NETWORK, Date.now() + 3_600_000, 1000);
    expect(results.map((r) => r.request_id)).not.toContain(listing);
    const before = await row(listing);
    expect(await sendListing(listing, amount)).toMatchObject({ status: "owed", transaction: null });
    expect(await row(listing)).toEqual(before);
  }
  /** The hand refund takes it (200), once: it leaves "Refunds owed" and is counted refunded. */
  async function refundedByHand(requestId: string, listing: string, amount: number) {
    const tx = hash();
    const res = await resolve(listing, {
      tx_hash: tx,
      amount_micro: amount,
      note: "paid the caller the rest",
    });
    expect(res.status).toBe(200);
    expect((await res.json<{ refund: Record<string, unknown> }>()).refund).toMatchObject({
      status: "refunded",
      tx_hash: tx,
      amount_micro: amount,
      nothing_owed: false,
    });
    // One decision: another transfer for it is refused.
    const again = await resolve(listing, { tx_hash: hash(), amount_micro: amount });
    expect(again.status).toBe(409);
    expect((await again.json<{ detail: string }>()).detail).toMatch(/already recorded as paid by hand/);
    expect((await onDashboard(listing)).listed).toBe(false);
    expect(await totals(requestId)).toEqual({
      count: 2,
      amount_atomic: 40000 + amount,
      refunded_atomic: amount,
      nothing_owed_atomic: 0,
    });
  }

  it("landed for 15000 of the 20000 kept: owed 5000, held, under Refunds owed and counted as owed; a hand refund records it", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    expect(await totals(requestId)).toMatchObject({
      count: 1,
      amount_atomic: 40000,
      nothing_owed_atomic: 20000,
    });
    const upstream = await authorizationTurnsUp(requestId, { amount: 15000 });
    await applyUpstream(env.DB, upstream, landed());
    await expectOwedHeld(
      listing,
      5000,
      new RegExp(
        `upstream_payments ${upstream.id} landed for 15000.*landed for 15000 micro-USDC of the 20000 kept.*the other 5000`,
      ),
    );
    // Shown to a person with Record refund (and no Record nothing owed: decided since), counted as owed.
    expect(await onDashboard(listing)).toEqual({ listed: true, forms: 1 });
    expect(await totals(requestId)).toEqual({
      count: 2,
      amount_atomic: 45000,
      refunded_atomic: 0,
      nothing_owed_atomic: 0,
    });
    expect((await payouts()).refunds.find((r) => r.request_id === listing)).toMatchObject({
      status: "owed",
      nothing_owed: 0,
    });
    // Not again: the record now refused (contradicted since, not "did not land": it landed for
    // less), and a repeat of the decision changes nothing.
    const dismissed = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(dismissed.status).toBe(409);
    const { detail } = await dismissed.json<{ detail: string }>();
    expect(detail).toMatch(/was recorded as nothing owed, and a decision since .* contradicts that record/);
    expect(detail).not.toMatch(/decided by reconciliation|did not land/);
    const held = await row(listing);
    await applyUpstream(env.DB, upstream, landed());
    expect(await row(listing)).toEqual(held);
    await neverSent(listing, 5000);
    await refundedByHand(requestId, listing, 5000);
  });

  it("not landed: owed all 20000, held, listed under withheld_not_returned as owed; a hand refund records it", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const upstream = await authorizationTurnsUp(requestId);
    // No refund for the run to send: the listing is a person's.
    expect(await applyUpstream(env.DB, upstream, expiredUnused)).toBeUndefined();
    await expectOwedHeld(
      listing,
      20000,
      new RegExp(
        `upstream_payments ${upstream.id} expired unused: it moved nothing.*landed for 0 micro-USDC of the 20000 kept`,
      ),
    );
    expect(await onDashboard(listing)).toEqual({ listed: true, forms: 1 });
    expect(await totals(requestId)).toEqual({
      count: 2,
      amount_atomic: 60000,
      refunded_atomic: 0,
      nothing_owed_atomic: 0,
    });
    expect(await withheldOf(requestId)).toEqual([
      expect.objectContaining({ return_request_id: listing, return_status: "owed", withheld_micro: 20000 }),
    ]);
    await neverSent(listing, 20000);
    await refundedByHand(requestId, listing, 20000);
    expect(await withheldOf(requestId)).toEqual([]);
  });

  it("the same through a person's POST /api/admin/resolve/upstream_payments/<id>: landed for less, or not landed", async () => {
    const decide = (id: number, body: unknown) =>
      send(`/api/admin/resolve/upstream_payments/${id}`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const short = await recordedNothingOwed();
    const partly = await authorizationTurnsUp(short.requestId, {
      amount: 15000,
      hold: "test: spent, no log found",
    });
    expect((await decide(partly.id, { outcome: "landed", tx_hash: hash(), note: "found it" })).status).toBe(
      200,
    );
    await expectOwedHeld(short.listing, 5000, new RegExp(`upstream_payments ${partly.id} landed for 15000`));
    expect(await onDashboard(short.listing)).toEqual({ listed: true, forms: 1 });
    await refundedByHand(short.requestId, short.listing, 5000);

    const none = await recordedNothingOwed();
    const unused = await authorizationTurnsUp(none.requestId, { hold: "test: spent, no log found" });
    expect((await decide(unused.id, { outcome: "not_landed", note: "cancelled it" })).status).toBe(200);
    await expectOwedHeld(none.listing, 20000, new RegExp(`upstream_payments ${unused.id} was cancelled`));
    await refundedByHand(none.requestId, none.listing, 20000);
  });

  it("an authorization still undecided beside the one decided counts as landing: no rewrite while it may cover the share; its own decision settles it", async () => {
    // Both land: 15000 + 5000 cover the 20000 kept, so the record stands throughout.
    const both = await recordedNothingOwed();
    const before = await row(both.listing);
    const a = await authorizationTurnsUp(both.requestId, { amount: 15000 });
    const b = await authorizationTurnsUp(both.requestId, { amount: 5000 });
    await applyUpstream(env.DB, a, landed());
    expect(await row(both.listing)).toEqual(before);
    await applyUpstream(env.DB, b, landed());
    expect(await row(both.listing)).toEqual(before);

    // The second does not land: its decision finds the record short by its amount.
    const short = await recordedNothingOwed();
    const c = await authorizationTurnsUp(short.requestId, { amount: 15000 });
    const d = await authorizationTurnsUp(short.requestId, { amount: 5000 });
    await applyUpstream(env.DB, c, landed());
    expect(await row(short.listing)).toMatchObject({ status: "refunded", resolved_note: NOTE });
    await applyUpstream(env.DB, d, expiredUnused);
    await expectOwedHeld(
      short.listing,
      5000,
      new RegExp(
        `upstream_payments ${d.id} expired unused.*landed for 15000 micro-USDC of the 20000 kept, so the partner was paid only that and the caller is owed the other 5000`,
      ),
    );

    // Short even if the undecided one lands: owed at least what it cannot cover, and said so.
    const least = await recordedNothingOwed();
    const e = await authorizationTurnsUp(least.requestId, { amount: 15000 });
    const f = await authorizationTurnsUp(least.requestId, { amount: 5000 });
    await applyUpstream(env.DB, e, expiredUnused);
    await expectOwedHeld(
      least.listing,
      15000,
      /landed for 0 micro-USDC of the 20000 kept \(and those not decided yet may still move 5000\), so the partner was paid at most 5000 and the caller is owed at least the other 15000/,
    );
    const held = await row(least.listing);
    await applyUpstream(env.DB, f, landed());
    expect(await row(least.listing)).toEqual(held);
  });

  it("a later not_landed decision on another authorization leaves a rewritten record as it is (its amount and what the person recorded)", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const a = await authorizationTurnsUp(requestId, { amount: 5000 });
    await applyUpstream(env.DB, a, landed());
    await expectOwedHeld(listing, 15000, new RegExp(`upstream_payments ${a.id} landed for 5000`));
    const held = await row(listing);
    // Another turns up afterwards and expires unused: its return (all 20000, by its amount) would
    // take the row and erase the record, while 5000 went to the partner.
    const b = await authorizationTurnsUp(requestId, { amount: 20000 });
    expect(await applyUpstream(env.DB, b, expiredUnused)).toBeUndefined();
    expect(await row(listing)).toEqual(held);
    await refundedByHand(requestId, listing, 15000);
  });

  it("a second authorization that lands after the rewrite lowers it: covered, the person's record stands again and no hand refund pays the caller what the partner was paid", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const recorded = await row(listing);
    const a = await authorizationTurnsUp(requestId, { amount: 5000 });
    await applyUpstream(env.DB, a, landed());
    await expectOwedHeld(listing, 15000, new RegExp(`upstream_payments ${a.id} landed for 5000`));
    const validBefore = Math.floor(Date.now() / 1000) + 300;
    const b = await authorizationTurnsUp(requestId, { amount: 15000, validBefore });
    await applyUpstream(env.DB, b, landed());
    // The partner was paid 5000 + 15000, the whole share: nothing owed, as the person recorded it
    // (their note, and their date to the millisecond, as every resolved_at), and the hold says what
    // the chain found.
    const r = await row(listing);
    expect(r).toMatchObject({
      status: "refunded",
      amount_micro: 20000,
      tx_hash: null,
      valid_before: null,
      resolved_note: NOTE,
      resolved_at: recorded?.resolved_at,
    });
    expect(r?.hold).toMatch(
      new RegExp(
        `^kept back in doubt: decided since \\(upstream_payments ${b.id} landed for 15000 micro-USDC\\): the partner's authorizations of this request landed for 20000 micro-USDC of the 20000 kept, so the partner was paid 20000, the whole share: nothing is owed`,
      ),
    );
    expect(r?.hold).toContain(`recorded this share as nothing owed on `);
    expect(await totals(requestId)).toMatchObject({
      count: 1,
      refunded_atomic: 0,
      nothing_owed_atomic: 20000,
    });
    expect((await onDashboard(listing)).listed).toBe(false);
    // The person's note again answers it (a hand refund paid meanwhile: "paid while a decision
    // changed it" below).
    const again = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(await again.json()).toMatchObject({ replayed: true });
    // Contradicted again by a later one that does not land (the record was of a paid share): owed
    // again for nothing, since what landed still covers it: the record stands.
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 5000 }), expiredUnused);
    expect(await row(listing)).toEqual(r);
  });

  /**
   * Recorded as nothing owed, then two authorizations turn up: `e` (15000) expires unused, leaving
   * 15000 owed while `f` (5000) may still move; then `f` expires unused too, raising it to 20000.
   */
  async function raisedTo20000() {
    const { requestId, listing } = await recordedNothingOwed();
    const e = await authorizationTurnsUp(requestId, { amount: 15000 });
    const f = await authorizationTurnsUp(requestId, { amount: 5000 });
    await applyUpstream(env.DB, e, expiredUnused);
    await expectOwedHeld(listing, 15000, /caller is owed at least the other 15000/);
    await applyUpstream(env.DB, f, expiredUnused);
    return { requestId, listing, e, f };
  }

  it("an undecided authorization that then expires unused raises it by its amount: all of what did not land is listed", async () => {
    const { requestId, listing, e, f } = await raisedTo20000();
    await expectOwedHeld(
      listing,
      20000,
      new RegExp(
        `^kept back in doubt: decided since \\(upstream_payments ${f.id} expired unused: it moved nothing\\): the partner's authorizations of this request landed for 0 micro-USDC of the 20000 kept, so the partner was paid 0 and the caller is owed the other 20000\\. Refund this by hand, for the amount now recorded\\. Reconciliation never sends a share first kept in doubt; before this decision: kept back in doubt: decided since \\(upstream_payments ${e.id} expired unused`,
      ),
    );
    // Still contradicted: not recorded as nothing owed again; a repeat changes nothing.
    expect((await resolve(listing, { outcome: "nothing_owed", note: NOTE })).status).toBe(409);
    const held = await row(listing);
    await applyUpstream(env.DB, f, expiredUnused);
    expect(await row(listing)).toEqual(held);
    await neverSent(listing, 20000);
    await refundedByHand(requestId, listing, 20000);
  });

  it("borne out again, the person's record comes back as written: any note text, its time to the millisecond", async () => {
    // The words the record's old home (the hold's text) ended the note at, and quotes around them.
    const note = `partner paid in full"), and the chain now says otherwise? No: "tx 0xabc", see ("), and the chain now says otherwise`;
    const { requestId, listing } = await recordedNothingOwed(note);
    const recorded = await row(listing);
    expect(recorded).toMatchObject({ resolved_note: note });
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 5000 }), landed());
    expect(await row(listing)).toMatchObject({ status: "owed", resolved_at: null, resolved_note: null });
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed());
    expect(await row(listing)).toMatchObject({
      status: "refunded",
      tx_hash: null,
      resolved_note: note,
      resolved_at: recorded?.resolved_at,
    });
    expect((await payouts()).refunds.find((r) => r.request_id === listing)).toMatchObject({
      nothing_owed: 1,
      resolved_note: note,
      resolved_at: recorded?.resolved_at,
    });
    const again = await resolve(listing, { outcome: "nothing_owed", note });
    expect(await again.json()).toMatchObject({ replayed: true });
  });

  it("a record contradicted before migration 0023 (kept only in the hold's text) is still read back from it when borne out", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const recorded = await row(listing);
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 5000 }), landed());
    await env.DB.prepare(
      "UPDATE refunds SET nothing_owed_at = NULL, nothing_owed_note = NULL WHERE request_id = ?1",
    )
      .bind(listing)
      .run();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed());
    expect(await row(listing)).toMatchObject({
      status: "refunded",
      resolved_note: NOTE,
      resolved_at: Math.floor(Number(recorded?.resolved_at) / 1000) * 1000,
    });
  });

  it("paid by hand for 15000 while a decision raised it to 20000: the record keeps the 15000 paid, and the other 5000 is listed as owed until a hand refund records it", async () => {
    // The person pays the 15000 shown; the other authorization expires meanwhile.
    const { listing } = await raisedTo20000();
    await expectOwedHeld(listing, 20000, /caller is owed the other 20000/);
    const tx = hash();
    const res = await resolve(listing, {
      tx_hash: tx,
      amount_micro: 15000,
      note: "paid what the dashboard showed",
    });
    expect(res.status).toBe(200);
    const body = await res.json<{ refund: Record<string, unknown>; rest: Record<string, unknown> }>();
    expect(body.refund).toMatchObject({
      status: "refunded",
      tx_hash: tx,
      amount_micro: 15000,
      owed_micro: 20000,
    });
    const rest = `${listing}:rest`;
    expect(body.rest).toMatchObject({ request_id: rest, status: "owed", amount_micro: 5000, payer: PAYER });
    expect(await row(rest)).toMatchObject({
      status: "owed",
      amount_micro: 5000,
      valid_before: null,
      hold: expect.stringMatching(
        new RegExp(`^paid by hand 15000 micro-USDC of the 20000 refund ${listing} owed`),
      ),
    });
    // Listed for a person with Record refund, never sent; the listing it came from is not.
    expect((await onDashboard(rest)).listed).toBe(true);
    expect((await onDashboard(listing)).listed).toBe(false);
    await neverSent(rest, 5000);
    // The same body again answers the record (and its rest); another amount for it is refused.
    const again = await resolve(listing, { tx_hash: tx, amount_micro: 15000 });
    expect(await again.json()).toMatchObject({ replayed: true, rest: { request_id: rest } });
    const otherAmount = await resolve(listing, { tx_hash: tx, amount_micro: 20000 });
    expect(otherAmount.status).toBe(409);
    expect((await otherAmount.json<{ refund: unknown }>()).refund).toMatchObject({
      amount_micro: 15000,
      owed_micro: 20000,
    });
    // The rest paid by hand: nothing left to list.
    const restTx = hash();
    const paid = await resolve(rest, { tx_hash: restTx, amount_micro: 5000 });
    expect(await paid.json()).toMatchObject({
      refund: { status: "refunded", amount_micro: 5000, owed_micro: 5000 },
    });
    expect((await onDashboard(rest)).listed).toBe(false);
    expect(await row(`${rest}:rest`)).toBeNull();
  });

  it("paid by hand for 15000 while a decision found the partner paid the whole share (nothing owed again): recorded, and flagged overpaid", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 5000 }), landed());
    await expectOwedHeld(listing, 15000, /the other 15000/);
    // The person pays the 15000 shown; the second authorization lands meanwhile.
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed());
    expect(await row(listing)).toMatchObject({ status: "refunded", tx_hash: null, resolved_note: NOTE });
    const tx = hash();
    const lines: unknown[] = [];
    const warn = vi.spyOn(console, "warn").mockImplementation((l: unknown) => void lines.push(l));
    const res = await resolve(listing, { tx_hash: tx, amount_micro: 15000, note: "paid the 15000 listed" });
    warn.mockRestore();
    // Before: 409 "already recorded as nothing owed", and the payment was listed nowhere.
    expect(res.status).toBe(200);
    expect((await res.json<{ refund: unknown }>()).refund).toMatchObject({
      status: "refunded",
      tx_hash: tx,
      amount_micro: 15000,
      owed_micro: 0,
      nothing_owed: false,
    });
    expect(lines.map((l) => JSON.parse(String(l)))).toEqual([
      {
        level: "warn",
        msg: "hand refund differs from what was owed",
        refund_id: listing,
        tx_hash: tx,
        paid_micro: 15000,
        owed_micro: 0,
        overpaid_micro: 15000,
      },
    ]);
    expect((await payouts()).refunds.find((r) => r.request_id === listing)).toMatchObject({
      status: "refunded",
      overpaid_micro: 15000,
    });
    // On the dashboard, flagged, with nothing to record; no rest is owed.
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const table = html.slice(html.indexOf('id="refunds-owed"'));
    expect(table.slice(0, table.indexOf("</table>"))).toContain(`Overpaid by hand: tx ${tx} paid $0.015`);
    expect(await row(`${listing}:rest`)).toBeNull();
    // The person's nothing-owed record is kept beside it.
    const kept = await env.DB.prepare("SELECT nothing_owed_note FROM refunds WHERE request_id = ?1")
      .bind(listing)
      .first<{ nothing_owed_note: string }>();
    expect(kept?.nothing_owed_note).toBe(NOTE);
  });

  it("a share the partner was paid part of (none recorded): the hand refund of the rest records what it paid, and the part the partner was paid is recorded as nothing owed", async () => {
    const { listing } = await keptInDoubt();
    // The wallet's transfers show the partner paid 15000 of the 20000 kept: the caller gets 5000.
    const res = await resolve(listing, { tx_hash: hash(), amount_micro: 5000, note: "partner paid 15000" });
    expect(await res.json()).toMatchObject({
      refund: { status: "refunded", amount_micro: 5000, owed_micro: 20000 },
      rest: { request_id: `${listing}:rest`, status: "owed", amount_micro: 15000 },
    });
    const rest = `${listing}:rest`;
    expect(await onDashboard(rest)).toEqual({ listed: true, forms: 2 });
    const dismissed = await resolve(rest, {
      outcome: "nothing_owed",
      note: "partner paid 15000 (tx 0xdef…)",
    });
    expect(await dismissed.json()).toMatchObject({
      refund: {
        request_id: rest,
        status: "refunded",
        tx_hash: null,
        nothing_owed: true,
        amount_micro: 15000,
      },
    });
    expect((await onDashboard(rest)).listed).toBe(false);
    // A hand refund of it afterwards is refused: one decision per row.
    expect((await resolve(rest, { tx_hash: hash(), amount_micro: 15000 })).status).toBe(409);
  });

  it("a stale repeat of a decision that bore the record out changes nothing", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const before = await row(listing);
    const a = await authorizationTurnsUp(requestId);
    await applyUpstream(env.DB, a, landed());
    expect(await row(listing)).toEqual(before);
    // An overlapping run that read the row undecided and found it expired unused: decided already.
    await applyUpstream(env.DB, a, expiredUnused);
    expect(await row(listing)).toEqual(before);
  });

  it("a record the decision bears out stays as recorded", async () => {
    const { requestId, listing } = await recordedNothingOwed();
    const before = await row(listing);
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId), landed());
    expect(await row(listing)).toEqual(before);
    // Another, not landed, beside the one that paid the share: still nothing owed, and not listed.
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId), expiredUnused);
    expect(await row(listing)).toEqual(before);
    expect(await withheldOf(requestId)).toEqual([]);
  });

  it("never touches a refund paid (by hand or by the operating wallet) nor an owed one, and gives a hand-refunded share back to nobody", async () => {
    const untouched = async (listing: string, requestId: string) => {
      const before = await row(listing);
      await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed());
      await applyUpstream(env.DB, await authorizationTurnsUp(requestId), expiredUnused);
      expect(await row(listing)).toEqual(before);
    };
    // Refunded by hand (a transfer recorded): the person's decision stands.
    const byHand = await keptInDoubt();
    expect(
      (await resolve(byHand.listing, { tx_hash: hash(), amount_micro: 20000, note: "paid it all" })).status,
    ).toBe(200);
    await untouched(byHand.listing, byHand.requestId);
    // Landed from the operating wallet, with its transaction or without one found (never resolved_at).
    for (const mark of [
      "UPDATE refunds SET status = 'refunded', tx_hash = ?2, hold = NULL WHERE request_id = ?1",
      "UPDATE refunds SET status = 'refunded', tx_hash = NULL, error = 'landed, transaction not found: test', hold = NULL WHERE request_id = ?1 AND ?2 IS NOT NULL",
    ]) {
      const wallet = await keptInDoubt();
      await env.DB.prepare(mark).bind(wallet.listing, hash()).run();
      await untouched(wallet.listing, wallet.requestId);
    }
    // The same with its hold kept: only that it was never resolved_at tells it from nothing owed.
    const kept = await keptInDoubt();
    await env.DB.prepare(
      "UPDATE refunds SET status = 'refunded', tx_hash = NULL, error = 'landed, transaction not found: test' WHERE request_id = ?1",
    )
      .bind(kept.listing)
      .run();
    expect(await row(kept.listing)).toMatchObject({ hold: expect.stringMatching(/^kept back in doubt: /) });
    await untouched(kept.listing, kept.requestId);
    // Still owed (never recorded as nothing owed): a landed decision leaves it to the person as it was.
    const owed = await keptInDoubt();
    const before = await row(owed.listing);
    await applyUpstream(env.DB, await authorizationTurnsUp(owed.requestId, { amount: 15000 }), landed());
    expect(await row(owed.listing)).toEqual(before);
  });
});

describe("nothing owed while an authorization is undecided and not held", () => {
  it("the 409 says no run may ever decide one spent on another transfer, and a hand refund still takes the share", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId);
    const res = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(res.status).toBe(409);
    const { detail } = await res.json<{ detail: string }>();
    expect(detail).toMatch(
      new RegExp(
        `spent on a transfer other than the one signed, which no run decides \\(each Cron run fails naming "upstream ${upstream.id}: … left undecided for a person"\\) and POST /api/admin/resolve/upstream_payments/${upstream.id} does not take \\(it is not held\\)`,
      ),
    );
    expect(detail).toMatch(/refund by hand \(tx_hash\) what they show the partner was not paid/);
    // Its authorization expired long ago: no time to wait for is named.
    expect(detail).not.toMatch(/wait until/);
    // That resolve refuses it indeed, and the hand refund the 409 names is taken.
    const claim = await send(`/api/admin/resolve/upstream_payments/${upstream.id}`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ outcome: "landed", tx_hash: hash() }),
    });
    expect(claim.status).toBe(409);
    expect((await claim.json<{ detail: string }>()).detail).toMatch(/Claim not held/);
    expect(
      (await resolve(listing, { tx_hash: hash(), amount_micro: 20000, note: "partner was paid 0.015" }))
        .status,
    ).toBe(200);
  });
});

describe("a hand refund of a share while an authorization of its request may still land", () => {
  it("is refused until its valid_before is a minute past on our clock, and the nothing-owed 409 says when", async () => {
    const { requestId, listing } = await keptInDoubt();
    const validBefore = Math.floor(Date.now() / 1000) + 300;
    const upstream = await authorizationTurnsUp(requestId, { validBefore });
    const after = new Date((validBefore + 60) * 1000).toISOString();
    const dismissed = await resolve(listing, { outcome: "nothing_owed", note: NOTE });
    expect(dismissed.status).toBe(409);
    expect((await dismissed.json<{ detail: string }>()).detail).toContain(
      `refund by hand (tx_hash) what they show the partner was not paid, once no undecided authorization of the request can land any more: wait until after ${after}`,
    );
    const before = await row(listing);
    const res = await resolve(listing, { tx_hash: hash(), amount_micro: 20000, note: "refunded the caller" });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(
      new RegExp(
        `upstream_payments ${upstream.id} of this request is not decided yet and may still land until .*check again after ${after.replaceAll(".", "\\.")}`,
      ),
    );
    expect(await row(listing)).toEqual(before);
    // A minute past valid_before, still not before: refused; after it: recorded.
    const at = (s: number) =>
      resolveRefundByHand(env, listing, hash(), 20000, undefined, { nowMs: s * 1000 });
    expect(await at(validBefore + 60)).toMatchObject({ status: "refused" });
    expect(await row(listing)).toEqual(before);
    expect(await at(validBefore + 61)).toMatchObject({
      status: "recorded",
      row: { status: "refunded", amount_micro: 20000 },
    });
  });

  it("refused, it lands for the whole share: nothing was paid to the caller, and nothing owed is recorded", async () => {
    const { requestId, listing } = await keptInDoubt();
    const upstream = await authorizationTurnsUp(requestId, {
      validBefore: Math.floor(Date.now() / 1000) + 300,
    });
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 20000 })).status).toBe(409);
    await applyUpstream(env.DB, upstream, { outcome: "paid", txHash: hash(), evidence: "test: landed" });
    expect(await row(listing)).toMatchObject({ status: "owed", tx_hash: null, amount_micro: 20000 });
    expect((await resolve(listing, { outcome: "nothing_owed", note: NOTE })).status).toBe(200);
  });
});
