import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call } from "../helpers";

/** A transaction hash no other test records (one transfer pays one batch, in every test file). */
const freshHash = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

describe("admin payouts", () => {
  const admin = { ...env, ADMIN_TOKEN: "t0ken-0123456789abcdefghij" };
  const req = (path: string, init: RequestInit = {}) =>
    createApp().fetch(
      new Request(`https://skills.test${path}`, {
        ...init,
        headers: { authorization: "Bearer t0ken-0123456789abcdefghij", ...(init.headers ?? {}) },
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
          headers: { authorization: "Bearer t0ken-0123456789abcdefghij" },
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

    const tx = freshHash();
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
    // The same transfer again is the batch it recorded; another with nothing owed records nothing.
    const again = await req("/api/admin/payouts/textkit/settle", {
      method: "POST",
      body: JSON.stringify({ tx_hash: tx }),
    });
    expect(await again.json()).toMatchObject({
      replayed: true,
      batch: { amount_usd: 0.01, rows: 3, tx_hash: tx },
    });
    expect(
      (
        await req("/api/admin/payouts/textkit/settle", {
          method: "POST",
          body: JSON.stringify({ tx_hash: freshHash() }),
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
      body: JSON.stringify({
        tx_hash: freshHash(),
        through_id: textkit?.through_id,
        amount_usd: textkit?.owed_usd,
      }),
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

describe("a payout batch covers exactly the transfer it records", () => {
  const admin = { ...env, ADMIN_TOKEN: "t0ken-0123456789abcdefghij" };
  const req = (path: string, body?: unknown) =>
    createApp().fetch(
      new Request(`https://skills.test${path}`, {
        ...(body === undefined ? {} : { method: "POST", body: JSON.stringify(body) }),
        headers: { authorization: "Bearer t0ken-0123456789abcdefghij" },
      }),
      admin,
    );
  const settle = (partner: string, body: unknown) => req(`/api/admin/payouts/${partner}/settle`, body);
  const owe = (partner: string, requestId: string, share: number, paidUpstream = 0) =>
    env.DB.prepare(
      "INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, paid_upstream, created_at) VALUES (?1, 'price', ?2, ?3, '0xabc', '0xtx', ?4, ?5, 0)",
    )
      .bind(partner, share, share * 2, requestId, paidUpstream)
      .run();
  const summary = async () =>
    (await req("/api/admin/payouts")).json<{
      partners: { partner_id: string; owed_usd: number; through_id: number }[];
      batches: { id: number; partner_id: string; tx_hash: string }[];
    }>();
  const owedTo = async (partner: string) => (await summary()).partners.find((p) => p.partner_id === partner);
  const fresh = async () => {
    await env.DB.batch([
      env.DB.prepare("DELETE FROM payout_ledger"),
      env.DB.prepare("DELETE FROM payout_batches"),
    ]);
  };

  it("a row below through_id that became owed after the read refuses the batch (409 names what is owed now): nothing is marked paid", async () => {
    await fresh();
    await owe("pricefeed", "r-a", 10000, 1); // paid upstream when the admin reads
    await owe("pricefeed", "r-b", 10000);
    await owe("pricefeed", "r-c", 10000);
    const read = await owedTo("pricefeed");
    expect(read).toMatchObject({ owed_usd: 0.02 });
    // Reconciliation finds r-a's upstream authorization expired unused (reconcile-store.ts
    // owedAfterAll) between the read and the settle.
    await env.DB.prepare("UPDATE payout_ledger SET paid_upstream = 0 WHERE request_id = 'r-a'").run();
    const tx = freshHash();
    const refused = await settle("pricefeed", {
      tx_hash: tx,
      through_id: read?.through_id,
      amount_usd: 0.02,
    });
    expect(refused.status).toBe(409);
    const body = await refused.json<{
      detail: string;
      owed_usd: number;
      amount_usd: number;
      owed_rows: number;
    }>();
    expect(body).toMatchObject({ owed_usd: 0.03, owed_rows: 3, amount_usd: 0.02 });
    expect(body.detail).toContain("sum to $0.03 now, not the $0.02 transferred");
    expect((await owedTo("pricefeed"))?.owed_usd).toBe(0.03);
    expect((await summary()).batches).toEqual([]);
    // Read again, the amount and through_id agree with the ledger: the batch is what was read.
    const again = await owedTo("pricefeed");
    const settled = await settle("pricefeed", {
      tx_hash: tx,
      through_id: again?.through_id,
      amount_usd: 0.03,
    });
    expect(await settled.json()).toMatchObject({ replayed: false, batch: { amount_usd: 0.03, rows: 3 } });
    expect((await owedTo("pricefeed"))?.owed_usd).toBe(0);
  });

  it("the amount is exact to the micro-dollar: $0.000001 off is refused", async () => {
    await fresh();
    await owe("pricefeed", "x-1", 12345);
    const read = await owedTo("pricefeed");
    expect(read?.owed_usd).toBe(0.012345);
    const off = await settle("pricefeed", {
      tx_hash: freshHash(),
      through_id: read?.through_id,
      amount_usd: 0.012344,
    });
    expect(off.status).toBe(409);
    const ok = await settle("pricefeed", {
      tx_hash: freshHash(),
      through_id: read?.through_id,
      amount_usd: 0.012345,
    });
    expect(await ok.json()).toMatchObject({ batch: { amount_micro: 12345, rows: 1 } });
  });

  it("through_id needs amount_usd, which has at most 6 decimals and is above 0 (422, FastAPI's shape)", async () => {
    const tx = freshHash();
    const cases: [unknown, string, string][] = [
      [{ tx_hash: tx, through_id: 3 }, "missing", "Field required"],
      [
        { tx_hash: tx, through_id: 3, amount_usd: 0.0200001 },
        "decimal_max_places",
        "Decimal input should have no more than 6 decimal places",
      ],
      [{ tx_hash: tx, through_id: 3, amount_usd: 0 }, "greater_than", "Input should be greater than 0"],
      [{ tx_hash: tx, through_id: 3, amount_usd: -1e21 }, "greater_than", "Input should be greater than 0"],
      // Past the bound, the exactness check never runs (1e21 has no fixed-point form: it threw, a 500).
      [
        { tx_hash: tx, through_id: 3, amount_usd: 1e21 },
        "less_than_equal",
        "Input should be less than or equal to 9000000000",
      ],
      [
        { tx_hash: tx, through_id: 3, amount_usd: 1e300 },
        "less_than_equal",
        "Input should be less than or equal to 9000000000",
      ],
    ];
    for (const [body, type, msg] of cases) {
      const res = await settle("pricefeed", body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((await res.json<{ detail: unknown[] }>()).detail, JSON.stringify(body)).toEqual([
        expect.objectContaining({ loc: ["body", "amount_usd"], type, msg }),
      ]);
    }
  });

  it("the same transfer again is the batch it recorded (200, nothing new attached); for another partner or amount it is 409", async () => {
    await fresh();
    await owe("pricefeed", "t-1", 10000);
    const tx = `0x${"ee".repeat(32)}`;
    const first = await settle("pricefeed", { tx_hash: tx });
    const batch = (await first.json<{ batch: { id: number; amount_usd: number } }>()).batch;
    expect(batch).toMatchObject({ amount_usd: 0.01 });
    await owe("pricefeed", "t-2", 10000);
    // An admin's retry after a timed-out answer, in the hash's other letter case.
    const retry = await settle("pricefeed", { tx_hash: tx.toUpperCase().replace("0X", "0x") });
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({
      replayed: true,
      batch: { id: batch.id, amount_usd: 0.01, rows: 1, tx_hash: tx },
    });
    expect((await owedTo("pricefeed"))?.owed_usd).toBe(0.01);
    const read = await owedTo("pricefeed");
    // With the amount it was recorded for: the same batch; with another: refused.
    expect(
      await (
        await settle("pricefeed", { tx_hash: tx, through_id: read?.through_id, amount_usd: 0.01 })
      ).json(),
    ).toMatchObject({ replayed: true, batch: { id: batch.id } });
    const otherAmount = await settle("pricefeed", {
      tx_hash: tx,
      through_id: read?.through_id,
      amount_usd: 0.02,
    });
    expect(otherAmount.status).toBe(409);
    expect(await otherAmount.json()).toMatchObject({ batch: { id: batch.id, partner_id: "pricefeed" } });
    await owe("textkit", "t-3", 3000);
    const otherPartner = await settle("textkit", { tx_hash: tx });
    expect(otherPartner.status).toBe(409);
    expect((await otherPartner.json<{ detail: string }>()).detail).toContain(
      `is already recorded as payout batch ${batch.id} (pricefeed, $0.01): one transfer pays one batch`,
    );
    expect((await summary()).batches.map((b) => b.tx_hash)).toEqual([tx]);
    expect((await owedTo("textkit"))?.owed_usd).toBe(0.003);
  });

  it("a transaction recorded before migration 0013 (twice, in two letter cases) is listed as reused and pays no new batch; the database refuses a repeat among new batches", async () => {
    await fresh();
    const legacy = freshHash();
    const insert = (hash: string, txUnique: number) =>
      env.DB.prepare(
        "INSERT INTO payout_batches (partner_id, amount_micro, tx_hash, created_at, tx_unique) VALUES ('pricefeed', 10000, ?1, 0, ?2)",
      )
        .bind(hash, txUnique)
        .run();
    await insert(legacy, 0);
    await insert(legacy.toUpperCase().replace("0X", "0x"), 0);
    const listed = (await summary()).batches as unknown as { tx_reused: number }[];
    expect(listed.map((b) => b.tx_reused)).toEqual([0, 1]);
    await owe("textkit", "l-1", 10000);
    const reuse = await settle("textkit", { tx_hash: legacy });
    expect(reuse.status).toBe(409);
    expect((await owedTo("textkit"))?.owed_usd).toBe(0.01);
    const tx = freshHash();
    await insert(tx, 1);
    await expect(insert(tx.toUpperCase().replace("0X", "0x"), 1)).rejects.toThrow(/UNIQUE constraint failed/);
    await fresh();
  });

  it("a call paid upstream (the wallet paid the partner) is never attached to a batch: the partner is not paid twice", async () => {
    // A mutant (payouts.ts) whose batch did not exclude rows paid upstream survived the suite: settling with the owed
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
    const settled = await settle("textkit", {
      tx_hash: freshHash(),
      through_id: textkit?.through_id,
      amount_usd: textkit?.owed_usd,
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
    const again = await settle("textkit", { tx_hash: freshHash() });
    expect(again.status).toBe(409);
  });
});
