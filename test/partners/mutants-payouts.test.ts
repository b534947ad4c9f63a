import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";

// A payout edge the suite did not pin down (found by mutating payouts.ts): a payout batch never
// covers a call the operating wallet already paid the partner for.
const freshHash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

describe("a payout batch covers only what is owed", () => {
  const admin = { ...env, ADMIN_TOKEN: "t0ken" };
  const req = (path: string, init: RequestInit = {}) =>
    createApp().fetch(
      new Request(`https://skills.test${path}`, {
        ...init,
        headers: { authorization: "Bearer t0ken", ...(init.headers ?? {}) },
      }),
      admin,
    );

  it("a call paid upstream (the wallet paid the partner) is never attached to a batch: the partner is not paid twice", async () => {
    // A mutant whose batch did not exclude rows paid upstream survived: settling with the owed
    // amount was refused (the rows summed to more), and settling every row marked the wallet's own
    // payment as part of the maintainer's transfer.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM payout_ledger"),
      env.DB.prepare("DELETE FROM payout_batches"),
    ]);
    const row = (requestId: string, paidUpstream: number) =>
      env.DB.prepare(
        "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES ('textkit', 'base64', 3000, 6000, '0xabc', '0xtx', ?1, ?2, 0)",
      ).bind(requestId, paidUpstream);
    await env.DB.batch([row("mut-upstream", 1), row("mut-owed", 0)]);
    const read = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number; through_id: number }[];
    }>();
    const textkit = read.partners.find((p) => p.partner_id === "textkit");
    expect(textkit?.owed_usd).toBe(0.003);
    const settled = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({
        tx_hash: freshHash(),
        through_id: textkit?.through_id,
        amount_usd: textkit?.owed_usd,
      }),
    });
    expect(settled.status).toBe(200);
    expect(await settled.json()).toMatchObject({ batch: { amount_usd: 0.003, rows: 1 } });
    const batched = await env.DB.prepare(
      "SELECT request_id, batch_id IS NOT NULL AS batched FROM payout_ledger ORDER BY request_id",
    ).all();
    expect(batched.results).toEqual([
      { request_id: "mut-owed", batched: 1 },
      { request_id: "mut-upstream", batched: 0 },
    ]);
    // Nothing is left owed, and a settle of every row finds nothing more.
    const again = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({ tx_hash: freshHash() }),
    });
    expect(again.status).toBe(409);
  });
});
