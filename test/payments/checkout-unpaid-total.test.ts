import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { recordSession } from "../../src/payments/checkout-sessions";
import { cronRun } from "../fixtures/cron";
import { migrationSandbox } from "../fixtures/migrations";
import { countingDb } from "../fixtures/rows-read";
import {
  createCheckout,
  deliver,
  emulatorEvents,
  grant,
  outcomeOf,
  pay,
  sessionEvent,
  sessionRow,
  stripe,
} from "./checkout-helpers";

/**
 * What unpaid checkouts' payloads hold together (the 256 MiB cap, checkout-unpaid-payloads.test.ts)
 * is read from a running total (migration 0024), not summed over every unpaid row at each
 * checkout: creating a checkout is free, and with 200,000 unpaid ones each checkout with a payload
 * read 200,001 rows, twice (D1 bills rows read). The total must stay the sum whatever writes a
 * payload or its session's key, or the cap drifts: too high refuses buyers, too low lets D1 fill.
 */
const PROBE = "cs_test_unpaid_total_";
const DAY = 24 * 60 * 60 * 1000;
const payload = { text: "Crème Brûlée 🍮" };

afterEach(async () => {
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${PROBE}%`).run();
});

/** The running total the cap reads. */
const total = async () =>
  env.DB.prepare("SELECT bytes FROM checkout_unpaid_payloads WHERE id = 1").first<number>("bytes");

/** What unpaid sessions really hold, summed over every row as the cap used to. */
const summed = async () =>
  (await env.DB.prepare(
    "SELECT coalesce(sum(payload_bytes), 0) AS n FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL",
  ).first<number>("n")) ?? 0;

/** The total agrees with the sum after the write `what`; returns the sum. */
async function agrees(what: string) {
  const sum = await summed();
  expect({ what, total: await total() }).toEqual({ what, total: sum });
  return sum;
}

/** `n` unpaid rows holding one-byte payloads (each counts in the sum), made in one statement. */
const unpaidRows = (n: number, tag: string) =>
  env.DB.prepare(
    `WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?1)
     INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
     SELECT ?2 || n, 'sha256', 170, 51, 'open', '1', 1, ?3, ?3 FROM i`,
  )
    .bind(n, `${PROBE}${tag}_`, Date.now())
    .run();

/** The rows of D1 a checkout with a payload reads, through the app, and its status. */
async function checkoutRowsRead() {
  const { db, seen } = countingDb(env.DB);
  const res = await createApp().fetch(
    new Request("https://skills.test/api/cardpay/checkout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ skill_id: "sha256", payload }),
    }),
    { ...env, DB: db },
  );
  return { status: res.status, rows: seen.rows };
}

describe("the total of unpaid payloads", () => {
  it("a checkout with a payload reads the same few rows whether 1,000 or 5,000 checkouts wait unpaid", async () => {
    await unpaidRows(1_000, "a");
    const fewer = await checkoutRowsRead();
    await unpaidRows(4_000, "b");
    const more = await checkoutRowsRead();
    expect([fewer.status, more.status]).toEqual([200, 200]);
    // Summed over the unpaid rows, the check before Stripe and the INSERT each read every one of
    // them: about 2,000 and 10,000 rows.
    expect(more.rows).toBe(fewer.rows);
    expect(more.rows).toBeLessThan(10);
    await agrees("5,000 rows inserted in one statement");
  });

  it("stays the sum through every write of a payload or a session's key", {
    timeout: 60_000,
  }, async () => {
    let sum = await agrees("start");
    const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;

    // The checkout's INSERT, with and without a payload.
    const expires = await createCheckout("sha256", 170, payload);
    expect(await agrees("checkout with a payload")).toBe(sum + bytes);
    await createCheckout("sha256", 170);
    sum = await agrees("checkout without a payload");

    // The grant: a paid session's payload stays (its first call runs from it) but counts no more.
    const paid = await createCheckout("sha256", 170, payload);
    await pay(paid);
    await grant(paid);
    expect(await sessionRow(paid)).toMatchObject({ payload_bytes: bytes });
    expect(await agrees("grant")).toBe(sum);
    // A redelivered event rolls its batch back: nothing moves.
    const completed = await sessionEvent("checkout.session.completed", paid);
    await deliver(completed);
    expect(await outcomeOf(await deliver(completed))).toBe("duplicate_event");
    await agrees("duplicate event");

    // Stripe expires one; another's delayed debit fails: each clears its payload.
    await stripe.checkout.sessions.expire(expires);
    const expired = (await emulatorEvents("checkout.session.expired")).find(
      (e) => e.data.object.id === expires,
    );
    expect(await outcomeOf(await deliver(expired))).toBe("expired");
    expect(await agrees("expiry")).toBe(sum - bytes);
    const fails = await createCheckout("sha256", 170, payload);
    await pay(fails, "async_failed");
    const mine = async (type: string) => (await emulatorEvents(type)).find((e) => e.data.object.id === fails);
    expect(await outcomeOf(await deliver(await mine("checkout.session.completed")))).toBe("not_paid");
    await agrees("debit pending");
    expect(await outcomeOf(await deliver(await mine("checkout.session.async_payment_failed")))).toBe(
      "payment_failed",
    );
    sum = await agrees("debit failed");

    // A paid session D1 lost is rebuilt by its webhook (without its payload) and granted.
    const lost = await createCheckout("sha256", 170, payload);
    await pay(lost);
    await env.DB.prepare("DELETE FROM checkout_sessions WHERE id = ?1").bind(lost).run();
    await agrees("row deleted");
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", lost)))).toBe(
      "granted",
    );
    sum = await agrees("rebuilt and granted");

    // The Cron: a stale payload cleared, one from before migration 0015 measured, ended rows deleted.
    const stale = await createCheckout("sha256", 170, payload);
    await env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2 WHERE id = ?1")
      .bind(stale, Date.now() - 5 * DAY)
      .run();
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', '{"text":"é"}', ?2, ?2)`,
    )
      .bind(`${PROBE}legacy`, Date.now())
      .run();
    await env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2 WHERE id = ?1")
      .bind(expires, Date.now() - 31 * DAY)
      .run();
    expect((await cronRun()).thrown).toBe("");
    expect(await sessionRow(stale)).toMatchObject({ payload: null, payload_bytes: null });
    expect(await sessionRow(`${PROBE}legacy`)).toMatchObject({ payload_bytes: 13 });
    expect(await sessionRow(expires)).toBeNull();
    expect(await agrees("the Cron")).toBe(sum + 13);
  });

  it("a checkout the cap refuses adds nothing", async () => {
    const cap = 256 * 1024 * 1024;
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', '{}', ?2, ?3, ?3)`,
    )
      .bind(`${PROBE}full`, cap - (await summed()), Date.now())
      .run();
    expect(await agrees("cap filled")).toBe(cap);
    const refused = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ skill_id: "sha256", payload }),
      }),
      env,
    );
    expect(refused.status).toBe(503);
    expect(await agrees("refused")).toBe(cap);
  });

  it("of concurrent checkouts with room for one, one is recorded and the total counts it once", async () => {
    const cap = 256 * 1024 * 1024;
    const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', '{}', ?2, ?3, ?3)`,
    )
      .bind(`${PROBE}nearly_full`, cap - bytes - (await summed()), Date.now())
      .run();
    const recorded = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        recordSession(env.DB, {
          id: `${PROBE}race_${i}`,
          skillId: "sha256",
          calls: 170,
          amountCents: 51,
          payload,
        }),
      ),
    );
    expect(recorded.filter(Boolean)).toHaveLength(1);
    expect(await agrees("concurrent checkouts")).toBe(cap);
  });
});

it("migration 0024 starts the total from the rows already there: unpaid measured payloads only", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox("m0024_");
  // Found by its name, not its number (a merge may renumber it).
  const migration = names.find((n) => n.endsWith("_checkout_unpaid_payload_total.sql")) as string;
  expect(migration).toBeDefined();
  for (const n of names.filter((m) => m < migration)) await apply(n);
  const row = (id: string, bytes: number | null, keyId: string | null) =>
    insert(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, api_key_id, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', '{}', ?2, ?3, 1, 1)`,
      id,
      bytes,
      keyId,
    );
  await row("cs_unpaid_a", 300, null);
  await row("cs_unpaid_b", 20, null);
  await row("cs_paid", 4_000, "k1");
  // Stored before migration 0015: not measured yet, so not counted until the Cron measures it.
  await row("cs_unmeasured", null, null);

  await apply(migration);
  const totalThere = () =>
    env.DB.prepare(renamed("SELECT bytes FROM checkout_unpaid_payloads WHERE id = 1")).first<number>("bytes");
  expect(await totalThere()).toBe(320);
  // Its triggers follow the rows from there on.
  await insert("UPDATE checkout_sessions SET payload_bytes = 2 WHERE id = 'cs_unmeasured'");
  await insert("UPDATE checkout_sessions SET api_key_id = 'k2' WHERE id = 'cs_unpaid_a'");
  await insert("DELETE FROM checkout_sessions WHERE id = 'cs_paid'");
  expect(await totalThere()).toBe(22);
  await drop();
});
