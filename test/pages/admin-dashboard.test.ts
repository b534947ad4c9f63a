import { env } from "cloudflare:test";
import { DomUtils, parseDocument } from "htmlparser2";
import { expect, it } from "vitest";
import { createApp } from "../../src/app";
import { adminCookie } from "../helpers";

const token = "dash-layout-t0ken-0123456789abcdefghij";
const adminEnv = { ...env, ADMIN_TOKEN: token };
const send = (path: string, init: RequestInit = {}) =>
  createApp().fetch(new Request(`https://skills.test${path}`, { redirect: "manual", ...init }), adminEnv);

it("every dashboard table scrolls inside its own box, so the page fits a phone's width", async () => {
  const cookie = await adminCookie(send, token);
  const res = await send("/admin", { headers: { cookie } });
  expect(res.status).toBe(200);
  const doc = parseDocument(await res.text());
  const tables = DomUtils.findAll((el) => el.name === "table", doc.children);
  // The six data tables (reliability, payouts, batches, unconfirmed, refunds, sessions) and the
  // charts' table views: a row of 66-character hashes made the page 935 px wide at 375.
  const data = tables.filter((t) => t.attribs.class !== "chart-table");
  expect(data.map((t) => t.attribs.id)).toEqual([
    "reliability",
    "payouts",
    "batches",
    "unconfirmed",
    "refunds-owed",
    "sessions",
  ]);
  for (const t of data) {
    const box = t.parent as { name?: string; attribs?: Record<string, string> };
    expect(`${t.attribs.id}: ${box.attribs?.class}`).toBe(`${t.attribs.id}: table-wrap`);
  }
});
