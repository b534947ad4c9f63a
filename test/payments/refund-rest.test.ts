import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { applyUpstream } from "../../src/payments/reconcile-store";
import { correctHandAmount } from "../../src/payments/refund-corrections";
import { adminCookie } from "../helpers";
import {
  auth,
  authorizationTurnsUp,
  hash,
  keptInDoubt,
  payouts,
  resolve,
  row,
  send,
  token,
} from "./refund-fixtures";

/**
 * The rest of a hand refund (`<request_id>:rest`) and the corrections of a hand refund recorded:
 * a share's rest is the share (its guard, its re-derivation), a wrong amount can be corrected, and
 * an overpayment settled.
 */

/** A share kept in doubt (20000), refunded by hand for 5000: its rest owed 15000, held. */
async function shareRefundedInPart() {
  const { requestId, listing } = await keptInDoubt();
  const res = await resolve(listing, { tx_hash: hash(), amount_micro: 5000, note: "partner paid 15000?" });
  expect(res.status).toBe(200);
  const rest = `${listing}:rest`;
  expect(await row(rest)).toMatchObject({ status: "owed", amount_micro: 15000 });
  return { requestId, listing, rest };
}
const landed = { outcome: "paid" as const, txHash: `0x${"ab".repeat(32)}`, evidence: "test: landed" };
/** GET /api/admin/payouts' listing of refund `id`. */
const listed = async (id: string) => (await payouts()).refunds.find((r) => r.request_id === id);

describe("the rest of a hand refund of a partner's share", () => {
  it("is refused while an authorization of the request may still land, as the share is", async () => {
    const { requestId, rest } = await shareRefundedInPart();
    await authorizationTurnsUp(requestId, {
      amount: 15000,
      validBefore: Math.floor(Date.now() / 1000) + 3600,
    });
    const before = await row(rest);
    const res = await resolve(rest, { tx_hash: hash(), amount_micro: 15000 });
    expect(res.status).toBe(409);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/may still land until .*check again after/);
    expect(await row(rest)).toEqual(before);
  });

  it("is nothing owed once an authorization for all of it lands: no one is told to pay what the partner was paid", async () => {
    const { requestId, rest } = await shareRefundedInPart();
    const upstream = await authorizationTurnsUp(requestId, { amount: 15000 });
    await applyUpstream(env.DB, upstream, landed);
    expect(await row(rest)).toMatchObject({
      status: "refunded",
      amount_micro: 0,
      tx_hash: null,
      resolved_at: expect.any(Number),
      hold: expect.stringMatching(/^kept back in doubt: decided since \(upstream_payments \d+ landed/),
    });
    expect(await listed(rest)).toMatchObject({ nothing_owed: 1 });
    // A hand refund paid meanwhile is still recorded, flagged overpaid by all of it.
    const paid = await resolve(rest, { tx_hash: hash(), amount_micro: 15000 });
    expect(await paid.json()).toMatchObject({ refund: { amount_micro: 15000, owed_micro: 0 } });
    expect(await listed(rest)).toMatchObject({ overpaid_micro: 15000 });
  });

  it("owes what is left when one lands for part of it", async () => {
    const { requestId, rest } = await shareRefundedInPart();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 10000 }), landed);
    // 20000 kept - 10000 landed - 5000 paid by hand.
    expect(await row(rest)).toMatchObject({
      status: "owed",
      amount_micro: 5000,
      hold: expect.stringMatching(/caller is owed the other 5000/),
    });
  });

  it("counts an undecided one as landing, and owes the rest again when that one moves nothing", async () => {
    const { requestId, rest } = await shareRefundedInPart();
    const first = await authorizationTurnsUp(requestId, { amount: 10000 });
    const second = await authorizationTurnsUp(requestId, { amount: 5000 });
    await applyUpstream(env.DB, first, landed);
    // The second, undecided, may still move 5000: 20000 kept - 10000 landed - 5000 pending - 5000 paid.
    expect(await row(rest)).toMatchObject({ status: "refunded", amount_micro: 0, tx_hash: null });
    await applyUpstream(env.DB, second, { outcome: "unpaid", evidence: "test: expired unused" });
    expect(await row(rest)).toMatchObject({
      status: "owed",
      amount_micro: 5000,
      resolved_at: null,
      hold: expect.stringMatching(/caller is owed the other 5000/),
    });
  });

  it("is what the share still owes when it is born: an authorization landed since the share was listed is not owed again", async () => {
    const { requestId, listing } = await keptInDoubt();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed);
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 3000 })).status).toBe(200);
    // 20000 kept - 15000 landed - 3000 paid: 2000, not the 17000 short of the 20000 listed.
    expect(await row(`${listing}:rest`)).toMatchObject({
      status: "owed",
      amount_micro: 2000,
      hold: expect.stringMatching(/landed 15000 and hand refunds paid 3000: refund the other 2000 by hand/),
    });
    // Paid all the partner was not: nothing left, no rest.
    const other = await keptInDoubt();
    await applyUpstream(env.DB, await authorizationTurnsUp(other.requestId, { amount: 15000 }), landed);
    expect((await resolve(other.listing, { tx_hash: hash(), amount_micro: 5000 })).status).toBe(200);
    expect(await row(`${other.listing}:rest`)).toBeNull();
  });

  it("is born owed while an authorization is undecided, so it is still listed when that one expires unused", async () => {
    const { requestId, listing } = await keptInDoubt();
    const pending = await authorizationTurnsUp(requestId, { amount: 20000 });
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 3000 })).status).toBe(200);
    // 20000 kept - 0 landed - 3000 paid: the undecided 20000 is not subtracted at birth.
    const rest = `${listing}:rest`;
    expect(await row(rest)).toMatchObject({ status: "owed", amount_micro: 17000 });
    await applyUpstream(env.DB, pending, { outcome: "unpaid", evidence: "test: expired unused" });
    expect(await row(rest)).toMatchObject({ status: "owed", amount_micro: 17000 });
    expect((await listed(rest))?.amount_micro).toBe(17000);
  });

  it("a hand refund of the share as listed, after an authorization landed, is flagged overpaid by what the partner was paid", async () => {
    const { requestId, listing } = await keptInDoubt();
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed);
    // The listing still shows the 20000 kept: a person who pays that pays the partner's 15000 twice.
    expect(await row(listing)).toMatchObject({ status: "owed", amount_micro: 20000 });
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 20000 })).status).toBe(200);
    expect(await listed(listing)).toMatchObject({ owed_micro: 5000, overpaid_micro: 15000 });
    expect(await row(`${listing}:rest`)).toBeNull();
  });

  it("a hand refund recorded before an authorization landed is flagged overpaid by what the partner was paid", async () => {
    const { requestId, listing } = await keptInDoubt();
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 20000 })).status).toBe(200);
    expect(await listed(listing)).toMatchObject({ owed_micro: 20000, overpaid_micro: null });
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed);
    // The partner was paid 15000 of the 20000 kept: the caller was owed 5000 and got 20000.
    expect(await listed(listing)).toMatchObject({
      amount_micro: 20000,
      owed_micro: 5000,
      overpaid_micro: 15000,
      resolved_note: null,
    });
  });

  it("a correction after a landing writes the rest the share still owes, none when the partner was paid the rest", async () => {
    const { requestId, listing } = await keptInDoubt();
    const tx = hash();
    expect((await resolve(listing, { tx_hash: tx, amount_micro: 20000 })).status).toBe(200);
    await applyUpstream(env.DB, await authorizationTurnsUp(requestId, { amount: 15000 }), landed);
    // The transfer really paid 5000: the caller has 5000, the partner 15000, nobody is owed more.
    const res = await resolve(listing, { outcome: "amount_corrected", tx_hash: tx, amount_micro: 5000 });
    expect(res.status).toBe(200);
    expect(await row(`${listing}:rest`)).toBeNull();
    expect(await res.json()).toMatchObject({
      refund: { owed_micro: 5000, resolved_note: "amount corrected from 20000 to 5000" },
    });
  });

  it("a correction while an authorization is undecided writes the rest the share owes of what landed, still listed when that one expires unused", async () => {
    const { requestId, listing } = await keptInDoubt();
    const tx = hash();
    expect((await resolve(listing, { tx_hash: tx, amount_micro: 20000 })).status).toBe(200);
    const a = await authorizationTurnsUp(requestId, { amount: 5000 });
    const b = await authorizationTurnsUp(requestId, { amount: 10000 });
    await applyUpstream(env.DB, a, landed);
    // The transfer really paid 8000: of the 20000 kept, 5000 went to the partner; the caller is owed
    // 7000 more unless the undecided 10000 lands (then 8000 was overpaid by 3000).
    const res = await resolve(listing, { outcome: "amount_corrected", tx_hash: tx, amount_micro: 8000 });
    expect(res.status).toBe(200);
    const rest = `${listing}:rest`;
    expect(await row(rest)).toMatchObject({ status: "owed", amount_micro: 7000 });
    await applyUpstream(env.DB, b, { outcome: "unpaid", evidence: "test: expired unused" });
    expect(await row(rest)).toMatchObject({ status: "owed", amount_micro: 7000 });
    expect((await listed(rest))?.amount_micro).toBe(7000);
  });

  it("a rest re-derived to 0 while an authorization is undecided, paid short of what the share owes of what landed, lists the rest", async () => {
    const { requestId, rest } = await shareRefundedInPart();
    const first = await authorizationTurnsUp(requestId, { amount: 10000 });
    const second = await authorizationTurnsUp(requestId, { amount: 10000 });
    await applyUpstream(env.DB, first, landed);
    expect(await row(rest)).toMatchObject({ status: "refunded", amount_micro: 0, tx_hash: null });
    // 20000 kept - 10000 landed - 5000 paid before: 5000 owed if the second moves nothing; 3000 paid.
    expect((await resolve(rest, { tx_hash: hash(), amount_micro: 3000 })).status).toBe(200);
    expect(await listed(rest)).toMatchObject({ owed_micro: 5000, overpaid_micro: null });
    const restOfRest = `${rest}:rest`;
    expect(await row(restOfRest)).toMatchObject({ status: "owed", amount_micro: 2000 });
    // The second expires unused: the caller is owed those 2000, still listed.
    await applyUpstream(env.DB, second, { outcome: "unpaid", evidence: "test: expired unused" });
    expect(await row(restOfRest)).toMatchObject({ status: "owed", amount_micro: 2000 });
  });

  it("an overpayment of the share is not settled while an authorization of the request is undecided", async () => {
    const { requestId, listing } = await keptInDoubt();
    expect((await resolve(listing, { tx_hash: hash(), amount_micro: 5000 })).status).toBe(200);
    const rest = `${listing}:rest`;
    const first = await authorizationTurnsUp(requestId, { amount: 10000 });
    const second = await authorizationTurnsUp(requestId, { amount: 10000 });
    await applyUpstream(env.DB, first, landed);
    // The second may still move 10000: nothing owed for now, so the 15000 paid is "overpaid".
    expect((await resolve(rest, { tx_hash: hash(), amount_micro: 15000 })).status).toBe(200);
    const note = "payer paid back 15000";
    const early = await resolve(rest, { outcome: "overpayment_settled", note });
    expect(early.status).toBe(409);
    expect((await early.json<{ detail: string }>()).detail).toMatch(
      new RegExp(`authorization upstream_payments ${second.id} of this request is not decided yet`),
    );
    expect(await listed(rest)).toMatchObject({ overpaid_settled_at: null });
    // It expires unused: the caller was owed 20000 - 10000 landed, the listing paid 5000 of it, so
    // the rest owed 5000 and its 15000 paid 10000 too much, not the 15000 flagged before.
    await applyUpstream(env.DB, second, { outcome: "unpaid", evidence: "test: expired unused" });
    expect(await listed(rest)).toMatchObject({ owed_micro: 5000, overpaid_micro: 10000 });
    expect(await listed(listing)).toMatchObject({ owed_micro: 10000, overpaid_micro: null });
    expect((await resolve(rest, { outcome: "overpayment_settled", note })).status).toBe(200);
  });
});

describe("GET /api/admin/payments totals", () => {
  it("count the rests of hand refunds, a rest's rest too: what is owed is not under-counted", async () => {
    const { requestId } = await keptInDoubt(true);
    // The caller's refund (40000) paid 10000, its rest (30000) 20000: 10000 still owed, held.
    expect((await resolve(requestId, { tx_hash: hash(), amount_micro: 10000 })).status).toBe(200);
    expect((await resolve(`${requestId}:rest`, { tx_hash: hash(), amount_micro: 20000 })).status).toBe(200);
    expect(await row(`${requestId}:rest:rest`)).toMatchObject({ status: "owed", amount_micro: 10000 });
    const res = await send(`/api/admin/payments?request_id=${requestId}`, { headers: auth });
    expect(await res.json()).toMatchObject({
      totals: { count: 1, amount_atomic: 60000 },
      // Refunded 10000 + 20000; owed 10000 (the rest's rest) + 20000 (the share kept in doubt).
      refunds: { count: 4, amount_atomic: 60000, refunded_atomic: 30000, nothing_owed_atomic: 0 },
    });
  });
});

describe("correcting a hand refund's amount (outcome amount_corrected)", () => {
  it("a slipped zero is corrected, and the rest follows the corrected amount in the same batch", async () => {
    const { requestId } = await keptInDoubt();
    const tx = hash();
    expect((await resolve(requestId, { tx_hash: tx, amount_micro: 400000 })).status).toBe(200);
    expect(await listed(requestId)).toMatchObject({ overpaid_micro: 360000 });
    // The same transaction with another amount and no outcome stays a 409 that names the way out.
    const plain = await resolve(requestId, { tx_hash: tx, amount_micro: 40000 });
    expect(plain.status).toBe(409);
    expect((await plain.json<{ detail: string }>()).detail).toMatch(/amount_corrected/);

    const fix = (amount: number, t = tx) =>
      resolve(requestId, { outcome: "amount_corrected", tx_hash: t, amount_micro: amount });
    const fixed = await fix(40000);
    expect(fixed.status).toBe(200);
    expect(await fixed.json()).toMatchObject({
      refund: { amount_micro: 40000, owed_micro: 40000 },
      replayed: false,
    });
    expect(await listed(requestId)).toMatchObject({ overpaid_micro: null });
    expect(await row(`${requestId}:rest`)).toBeNull();
    // Short of what was owed: the rest is listed, and follows a second correction.
    expect(await (await fix(30000)).json()).toMatchObject({
      refund: {
        resolved_note: "amount corrected from 400000 to 40000; amount corrected from 40000 to 30000",
      },
      rest: { amount_micro: 10000, status: "owed" },
    });
    expect(await (await fix(35000)).json()).toMatchObject({ rest: { amount_micro: 5000 } });
    expect(await (await fix(35000)).json()).toMatchObject({ replayed: true });
    expect((await fix(35000, hash())).status).toBe(409);
    // Once someone acted on the rest, the correction would change it behind their back: refused.
    const rest = `${requestId}:rest`;
    expect((await resolve(rest, { outcome: "nothing_owed", note: "payer waived it" })).status).toBe(200);
    const late = await fix(40000);
    expect(late.status).toBe(409);
    expect((await late.json<{ detail: string }>()).detail).toMatch(/rest .* someone acted on/);
    expect(await row(requestId)).toMatchObject({ amount_micro: 35000 });
  });

  it("the rest a correction rewrites keeps the time it was first owed", async () => {
    const { requestId } = await keptInDoubt();
    const tx = hash();
    expect((await resolve(requestId, { tx_hash: tx, amount_micro: 10000 })).status).toBe(200);
    const rest = `${requestId}:rest`;
    const times = () =>
      env.DB.prepare("SELECT amount_micro, created_at, updated_at FROM refunds WHERE request_id = ?1")
        .bind(rest)
        .first<{ amount_micro: number; created_at: number; updated_at: number }>();
    const first = await times();
    expect(first).toMatchObject({ amount_micro: 30000 });
    const anHourLater = (first?.created_at ?? 0) + 3_600_000;
    expect(await correctHandAmount(env, requestId, tx, 20000, undefined, anHourLater)).toMatchObject({
      status: "recorded",
    });
    expect(await times()).toEqual({
      amount_micro: 20000,
      created_at: first?.created_at,
      updated_at: anHourLater,
    });
  });
});

describe("settling an overpayment (outcome overpayment_settled)", () => {
  it("clears the flag with a required note, keeps what was paid and owed, and is taken once", async () => {
    const { requestId } = await keptInDoubt();
    expect((await resolve(requestId, { tx_hash: hash(), amount_micro: 50000 })).status).toBe(200);
    expect((await resolve(requestId, { outcome: "overpayment_settled" })).status).toBe(422);
    expect(
      (await resolve(requestId, { outcome: "overpayment_settled", note: "x", amount_micro: 1 })).status,
    ).toBe(422);
    const note = "written off: 0.01 to a good customer";
    const res = await resolve(requestId, { outcome: "overpayment_settled", note });
    expect(res.status).toBe(200);
    expect(await listed(requestId)).toMatchObject({
      amount_micro: 50000,
      owed_micro: 40000,
      overpaid_micro: null,
      overpaid_settled_note: note,
    });
    expect(await (await resolve(requestId, { outcome: "overpayment_settled", note })).json()).toMatchObject({
      replayed: true,
    });
    expect((await resolve(requestId, { outcome: "overpayment_settled", note: "paid back" })).status).toBe(
      409,
    );
    // A refund that was not overpaid has nothing to settle.
    const other = await keptInDoubt();
    expect((await resolve(other.requestId, { outcome: "overpayment_settled", note })).status).toBe(409);
  });
});

describe("the dashboard's refund forms", () => {
  async function dashboard() {
    const cookie = await adminCookie(send, token);
    const html = await (await send("/admin", { headers: { cookie } })).text();
    const csrf = html.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
    const post = (id: string, fields: Record<string, string>) =>
      send(`/admin/refunds/${encodeURIComponent(id)}/resolve`, {
        method: "POST",
        headers: { cookie, origin: "https://skills.test" },
        body: new URLSearchParams({ csrf, ...fields }),
      });
    const forms = (id: string) =>
      [
        ...html.matchAll(
          new RegExp(
            `<form method="post" action="/admin/refunds/${encodeURIComponent(id)}/resolve"[\\s\\S]*?</form>`,
            "g",
          ),
        ),
      ].map((m) => m[0]);
    return { post, forms };
  }

  it("Record refund sends the amount it showed owed, and records another only once the person ticks that it differs", async () => {
    const { requestId } = await keptInDoubt();
    const { post, forms } = await dashboard();
    expect(forms(requestId)[0]).toContain('name="owed_shown" value="40000"');
    const tx = hash();
    const slipped = { tx_hash: tx, amount_micro: "400000", owed_shown: "40000" };
    const asked = await post(requestId, slipped);
    expect(asked.status).toBe(422);
    expect(await asked.text()).toMatch(/is not the 40000 shown owed/);
    expect(await row(requestId)).toMatchObject({ status: "owed" });
    const done = await post(requestId, { ...slipped, differs_ok: "1" });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/admin?notice=refund-resolved-differs");
  });

  it("an overpaid refund offers its correction and its settlement, which takes it off the list", async () => {
    const { requestId } = await keptInDoubt();
    const tx = hash();
    expect((await resolve(requestId, { tx_hash: tx, amount_micro: 50000 })).status).toBe(200);
    const { post, forms } = await dashboard();
    const offered = forms(requestId);
    expect(offered.map((f) => f.match(/name="outcome" value="([a-z_]+)"/)?.[1])).toEqual([
      "amount_corrected",
      "overpayment_settled",
    ]);
    expect(offered[0]).toContain(`name="tx_hash" value="${tx}"`);
    const settled = await post(requestId, { outcome: "overpayment_settled", note: "paid back in 0xfeed" });
    expect(settled.headers.get("location")).toBe("/admin?notice=overpayment-settled");
    expect((await dashboard()).forms(requestId)).toEqual([]);
    const corrected = await post(requestId, {
      outcome: "amount_corrected",
      tx_hash: tx,
      amount_micro: "40000",
    });
    expect(corrected.headers.get("location")).toBe("/admin?notice=refund-corrected");
    expect(await row(requestId)).toMatchObject({ amount_micro: 40000 });
  });
});
