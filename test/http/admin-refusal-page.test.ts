import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie } from "../helpers";

const token = "dash-refusal-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}, e: object = adminEnv) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), e);
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const freshHash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

async function signedForm() {
  const cookie = await adminCookie(send, token);
  const html = await (await send("/admin", { headers: { cookie } })).text();
  const csrf = html.match(/name="csrf" value="([^"]*)"/)?.[1] as string;
  const post = (path: string, fields: Record<string, string>, accept?: string) =>
    send(path, {
      method: "POST",
      headers: { cookie, origin: "https://skills.test", ...(accept ? { accept } : {}) },
      body: new URLSearchParams({ csrf, ...fields }),
    });
  return post;
}

it("a dashboard form refused in a browser answers a page with its reason and the way back, same status; scripts keep the JSON", async () => {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM payout_ledger WHERE partner_id = 'pricefeed'"),
    env.DB.prepare("DELETE FROM payout_batches WHERE partner_id = 'pricefeed'"),
    env.DB.prepare(
      "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES ('pricefeed', 'price', 10000, 20000, '0xabc', '0xtx', 'refusal-page-a', 0, 0)",
    ),
  ]);
  const post = await signedForm();
  const tx = freshHash();
  expect((await post("/admin/payouts/pricefeed/settle", { tx_hash: tx }, BROWSER)).status).toBe(303);

  // Mark paid pressed twice: a 409 whose page says why and links back to the dashboard.
  const twice = await post("/admin/payouts/pricefeed/settle", { tx_hash: tx }, BROWSER);
  expect(twice.status).toBe(409);
  expect(twice.headers.get("content-type")).toMatch(/^text\/html/);
  const page = await twice.text();
  expect(page).toMatch(/<div role="alert" id="refusal"><p>[^<]*is already recorded as payout batch/);
  expect(page).toContain('<a href="/admin">Back to the dashboard</a>');

  // A 422 names each field refused, in words.
  const bad = await post("/admin/payouts/pricefeed/settle", { tx_hash: "not-a-hash" }, BROWSER);
  expect(bad.status).toBe(422);
  expect(await bad.text()).toMatch(/<p>tx_hash: String should/);

  // An unknown refund (404) and the body cap (413) are pages too.
  const big = await post("/admin/payouts/pricefeed/settle", { tx_hash: tx, note: "x".repeat(9000) }, BROWSER);
  expect(big.status).toBe(413);
  expect(await big.text()).toContain("<p>Request body larger than 8192 bytes</p>");
  const unknown = await post(
    "/admin/refunds/no-such-refund/resolve",
    { tx_hash: tx, amount_micro: "1" },
    BROWSER,
  );
  expect(unknown.status).toBe(404);
  expect(await unknown.text()).toContain("Unknown refund &quot;no-such-refund&quot;");

  // A field left empty is missing, as the API says of an absent one.
  const noNote = await post("/admin/refunds/no-such-refund/resolve", { outcome: "nothing_owed", note: "" });
  expect(noNote.status).toBe(422);
  expect((await noNote.json<{ detail: unknown[] }>()).detail).toEqual([
    { loc: ["body", "note"], msg: "Field required", type: "missing", input: {} },
  ]);

  // The same refusals without Accept: text/html stay the API's JSON.
  const json = await post("/admin/payouts/pricefeed/settle", { tx_hash: tx });
  expect(json.status).toBe(409);
  expect((await json.json<{ detail: string }>()).detail).toContain("is already recorded as payout batch");
  const json422 = await post(
    "/admin/payouts/pricefeed/settle",
    { tx_hash: "not-a-hash" },
    "application/json",
  );
  expect(json422.status).toBe(422);
  expect((await json422.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual(["body", "tx_hash"]);
});

it("a browser's GET of a form's address (405) keeps the JSON: no form was refused", async () => {
  const res = await send("/admin/login", { headers: { accept: BROWSER } });
  expect(res.status).toBe(405);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
});

it("the disabled dashboard says so as a page in a browser (503), and as JSON to a script", async () => {
  const off = await send("/admin", { headers: { accept: BROWSER } }, { ...env, ADMIN_TOKEN: "" });
  expect(off.status).toBe(503);
  expect(off.headers.get("content-type")).toMatch(/^text\/html/);
  expect(await off.text()).toContain("The admin dashboard is disabled");
  const api = await send("/admin", {}, { ...env, ADMIN_TOKEN: "" });
  expect(api.status).toBe(503);
  expect((await api.json<{ detail: string }>()).detail).toContain("The admin dashboard is disabled");
});
