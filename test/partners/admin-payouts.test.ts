import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call } from "../helpers";

describe("admin payouts", () => {
  const admin = { ...env, ADMIN_TOKEN: "t0ken" };
  const req = (path: string, init: RequestInit = {}) =>
    createApp().fetch(
      new Request(`https://skills.test${path}`, {
        ...init,
        headers: { authorization: "Bearer t0ken", ...(init.headers ?? {}) },
      }),
      admin,
    );

  it("the CSV export streams every row in pages: 4,500 rows, each once, in id order, one header", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const stmt = env.DB.prepare(
      "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, created_at) VALUES ('textkit', 'base64', 3000, 6000, '0xpayer', '0xtx', ?1, ?2)",
    );
    for (let batch = 0; batch < 9; batch++) {
      await env.DB.batch(
        Array.from({ length: 500 }, (_, i) => stmt.bind(`${tag}-${batch * 500 + i}`, Date.now())),
      );
    }
    const csv = await (await req("/api/admin/payouts?format=csv")).text();
    const lines = csv.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("id,"))).toHaveLength(1);
    const ours = lines.filter((l) => l.includes(`,${tag}-`)).map((l) => l.split(",")[7]);
    expect(ours).toEqual(Array.from({ length: 4500 }, (_, i) => `${tag}-${i}`));
    const ids = lines.slice(1).map((l) => Number(l.split(",")[0]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    await env.DB.prepare("DELETE FROM payout_ledger WHERE request_id LIKE ?1").bind(`${tag}-%`).run();
  });

  it("a CSV export whose first read fails is a 500, and one that fails midway ends in an error, never a short file", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const stmt = env.DB.prepare(
      "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, created_at) VALUES ('textkit', 'base64', 3000, 6000, '0xpayer', '0xtx', ?1, ?2)",
    );
    await env.DB.batch(Array.from({ length: 2500 }, (_, i) => stmt.bind(`${tag}-${i}`, Date.now())));
    /** A D1 whose ledger pages fail from the `failFrom`th read on. */
    const failing = (failFrom: number) => {
      let reads = 0;
      return new Proxy(env.DB, {
        get(target, p) {
          if (p !== "prepare") return Reflect.get(target, p).bind?.(target) ?? Reflect.get(target, p);
          return (sql: string) => {
            if (sql.includes("WHERE id > ?1") && ++reads >= failFrom)
              throw new Error("D1_ERROR: simulated outage");
            return target.prepare(sql);
          };
        },
      });
    };
    const exportWith = (db: D1Database) =>
      createApp().fetch(
        new Request("https://skills.test/api/admin/payouts?format=csv", {
          headers: { authorization: "Bearer t0ken" },
        }),
        { ...admin, DB: db },
      );
    expect((await exportWith(failing(1))).status).toBe(500);
    const midway = await exportWith(failing(2));
    expect(midway.status).toBe(200);
    await expect(midway.text()).rejects.toThrow(/simulated outage/);
    await env.DB.prepare("DELETE FROM payout_ledger WHERE request_id LIKE ?1").bind(`${tag}-%`).run();
  });

  it("sums owed per partner and service, exports CSV, settles to zero without deleting history", async () => {
    // Test files share one D1 (one isolate): sums are asserted over this test's rows alone.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM payout_ledger"),
      env.DB.prepare("DELETE FROM payout_batches"),
    ]);
    const rows: [string, string, number, number, number][] = [
      ["textkit", "base64", 3000, 6000, 0],
      ["textkit", "base64", 3000, 6000, 0],
      ["textkit", "json-sort", 4000, 8000, 0],
      ["pricefeed", "price", 10000, 20000, 1],
    ];
    for (const [i, [p, s, share, fee, up]] of rows.entries()) {
      await env.DB.prepare(
        "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES (?1, ?2, ?3, ?4, '0xabc', '0xtx', ?5, ?6, 0)",
      )
        .bind(p, s, share, fee, `payout-test-${i}`, up)
        .run();
    }
    const before = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number }[];
      services: { service_id: string; owed_usd: number; calls: number }[];
    }>();
    expect(before.partners.find((p) => p.partner_id === "textkit")?.owed_usd).toBe(0.01);
    expect(before.partners.find((p) => p.partner_id === "pricefeed")?.owed_usd).toBe(0);
    expect(before.services.find((s) => s.service_id === "base64")).toMatchObject({
      owed_usd: 0.006,
      calls: 2,
    });

    const csv = await (await req("/api/admin/payouts?format=csv")).text();
    expect(csv.split("\n")[0]).toBe(
      "id,partner_id,service_id,partner_share_usd,marketplace_fee_usd,payer,tx_hash,request_id,paid_upstream,batch_id,created_at",
    );
    expect(csv).toContain("textkit,base64,0.003,0.006");

    const tx = `0x${"ab".repeat(32)}`;
    const settled = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({ tx_hash: tx }),
    });
    expect(await settled.json()).toMatchObject({
      partner_id: "textkit",
      batch: { amount_usd: 0.01, rows: 3, tx_hash: tx },
    });
    const after = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number; earned_usd: number }[];
    }>();
    expect(after.partners.find((p) => p.partner_id === "textkit")).toMatchObject({
      owed_usd: 0,
      earned_usd: 0.01,
    });
    expect(
      (
        await req("/api/admin/payouts/textkit/settle", {
          method: "POST",
          body: JSON.stringify({ tx_hash: tx }),
        })
      ).status,
    ).toBe(409);
    expect(
      (await req("/api/admin/payouts/nope/settle", { method: "POST", body: JSON.stringify({ tx_hash: tx }) }))
        .status,
    ).toBe(404);
    expect(
      (await req("/api/admin/payouts/textkit/settle", { method: "POST", body: '{"tx_hash":"nope"}' })).status,
    ).toBe(422);
  });

  it("a transfer covers the rows read with its amount (through_id): a call recorded since stays owed", async () => {
    await env.DB.batch([
      env.DB.prepare("DELETE FROM payout_ledger"),
      env.DB.prepare("DELETE FROM payout_batches"),
    ]);
    const owe = (i: number) =>
      env.DB.prepare(
        "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES ('textkit', 'base64', 3000, 6000, '0xabc', '0xtx', ?1, 0, 0)",
      )
        .bind(`through-${i}`)
        .run();
    await owe(1);
    await owe(2);
    const read = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number; through_id: number }[];
    }>();
    const textkit = read.partners.find((p) => p.partner_id === "textkit");
    expect(textkit?.owed_usd).toBe(0.006);
    // The maintainer transfers 0.006; meanwhile another call is recorded.
    await owe(3);
    const settled = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({ tx_hash: `0x${"cd".repeat(32)}`, through_id: textkit?.through_id }),
    });
    expect(await settled.json()).toMatchObject({ batch: { amount_usd: 0.006, rows: 2 } });
    const after = await (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number }[];
    }>();
    expect(after.partners.find((p) => p.partner_id === "textkit")?.owed_usd).toBe(0.003);
  });

  it("needs the admin token", async () => {
    const res = await createApp().fetch(new Request("https://skills.test/api/admin/payouts"), admin);
    expect(res.status).toBe(401);
    const disabled = await call("/api/admin/payouts");
    expect(disabled.status).toBe(503);
  });
});
