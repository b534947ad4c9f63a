import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie } from "../helpers";

const token = "dash-payouts-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);
const owe = (requestId: string, paidUpstream: number) =>
  env.DB.prepare(
    "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES ('pricefeed', 'price', 10000, 20000, '0xabc', '0xtx', ?1, ?2, 0)",
  )
    .bind(requestId, paidUpstream)
    .run();
const freshHash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

it("Mark paid sends the amount it showed: a row owed since the page was read refuses the batch (409), the button pressed again is told it is recorded", async () => {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM payout_ledger"),
    env.DB.prepare("DELETE FROM payout_batches"),
  ]);
  await owe("d-a", 1);
  await owe("d-b", 0);
  await owe("d-c", 0);
  const cookie = await adminCookie(send, token);
  const html = await (await send("/admin", { headers: { cookie } })).text();
  const form =
    html.match(/<form method="post" action="\/admin\/payouts\/pricefeed\/settle"[\s\S]*?<\/form>/)?.[0] ?? "";
  const field = (name: string) => form.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1] as string;
  expect(field("amount_usd")).toBe("0.02");
  expect(html).toMatch(/<th scope="row">pricefeed<\/th><td>\$0\.02<\/td>/);
  const post = (fields: Record<string, string>) =>
    send("/admin/payouts/pricefeed/settle", {
      method: "POST",
      headers: { cookie, origin: "https://skills.test" },
      body: new URLSearchParams({ csrf: field("csrf"), ...fields }),
    });

  // The maintainer transfers the $0.02 shown; meanwhile reconciliation makes d-a owed.
  await env.DB.prepare("UPDATE payout_ledger SET paid_upstream = 0 WHERE request_id = 'd-a'").run();
  const tx = freshHash();
  const refused = await post({
    tx_hash: tx,
    through_id: field("through_id"),
    amount_usd: field("amount_usd"),
  });
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({ owed_usd: 0.03, amount_usd: 0.02 });
  expect((await env.DB.prepare("SELECT count(*) AS n FROM payout_batches").first("n")) as number).toBe(0);

  // One of the pair without the other, or an amount the page cannot have shown: 422.
  const half = await post({ tx_hash: tx, through_id: field("through_id") });
  expect(half.status).toBe(422);
  expect((await half.json<{ detail: { loc: string[]; type: string }[] }>()).detail).toEqual([
    expect.objectContaining({ loc: ["body", "amount_usd"], type: "missing" }),
  ]);
  const sevenDecimals = await post({ tx_hash: tx, through_id: field("through_id"), amount_usd: "0.0300001" });
  expect(sevenDecimals.status).toBe(422);

  // The page read again shows $0.03; its button records that.
  const again = await (await send("/admin", { headers: { cookie } })).text();
  const form2 =
    again.match(/<form method="post" action="\/admin\/payouts\/pricefeed\/settle"[\s\S]*?<\/form>/)?.[0] ??
    "";
  const amount2 = form2.match(/name="amount_usd" value="([^"]*)"/)?.[1] as string;
  const through2 = form2.match(/name="through_id" value="([^"]*)"/)?.[1] as string;
  expect(amount2).toBe("0.03");
  const recorded = await post({ tx_hash: tx, through_id: through2, amount_usd: amount2 });
  expect(recorded.status).toBe(303);
  const pressedAgain = await post({ tx_hash: tx, through_id: through2, amount_usd: amount2 });
  expect(pressedAgain.status).toBe(409);
  expect((await pressedAgain.json<{ detail: string }>()).detail).toContain(
    "is already recorded as payout batch",
  );
  expect((await env.DB.prepare("SELECT count(*) AS n FROM payout_batches").first("n")) as number).toBe(1);
});
