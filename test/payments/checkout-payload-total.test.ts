import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import {
  moveTotal,
  payloadTotal,
  recountPayloadTotal,
  releasedBy,
} from "../../src/payments/checkout-payload-total";
import {
  expiredUnpaidSessions,
  recordSession,
  staleUnpaidPayloads,
  unmeasuredPayloads,
} from "../../src/payments/checkout-sessions";
import { cronRun } from "../fixtures/cron";
import { countingDb } from "../fixtures/rows-read";
import {
  createCheckout,
  deliver,
  grant,
  outcomeOf,
  pay,
  sessionEvent,
  sessionRow,
  stripe,
} from "./checkout-helpers";

/**
 * What unpaid checkouts' payloads hold is a running total (migration 0025), read as one row by a
 * checkout. Before, each checkout with a payload summed every unpaid row's size, twice: 200,000
 * unpaid sessions (free to create) made each one read 400,000 rows. The total must stay the real
 * sum through every write that sets or clears an unpaid payload, under concurrent writers, and
 * beside the previous version, which does not move it (the Cron recounts it).
 */
const CAP = 256 * 1024 * 1024;
const DAY = 86_400_000;
const PROBE = "cs_test_total_";
const payload = { text: "Crème Brûlée 🍮" };
const bytes = new TextEncoder().encode(JSON.stringify(payload)).length;

/** The real sum, as the cap defines it: measured payloads of sessions never granted. */
const realSum = async () =>
  (await env.DB.prepare(
    "SELECT coalesce(sum(payload_bytes), 0) AS n FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL",
  ).first<number>("n")) ?? 0;
const total = () => payloadTotal(env.DB);
/** The total is the real sum, and what it is. */
const inStep = async () => {
  const real = await realSum();
  expect(await total()).toBe(real);
  return real;
};

/** A row written as no writer of this version writes it (a previous version, a person). */
const row = (
  id: string,
  fields: { payload?: string | null; bytes?: number | null; status?: string; ageDays?: number },
) =>
  env.DB.prepare(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
     VALUES (?1, 'sha256', 170, 51, ?2, ?3, ?4, ?5, ?5)`,
  )
    .bind(
      `${PROBE}${id}`,
      fields.status ?? "open",
      fields.payload === undefined ? "{}" : fields.payload,
      fields.bytes === undefined ? 2 : fields.bytes,
      Date.now() - (fields.ageDays ?? 0) * DAY,
    )
    .run();

const age = (id: string, days: number) =>
  env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2 WHERE id = ?1")
    .bind(id, Date.now() - days * DAY)
    .run();

afterEach(async () => {
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${PROBE}%`).run();
  await recountPayloadTotal(env.DB);
});

describe("the running total of unpaid payloads", () => {
  it("moves with every write that sets or clears an unpaid payload, by what that write changed", {
    timeout: 60_000,
  }, async () => {
    await recountPayloadTotal(env.DB);
    const start = await inStep();

    // A checkout with a payload adds its bytes; a replay of the same session (a retry Stripe
    // answered with it) is recorded already and adds nothing.
    const open = await createCheckout("sha256", 170, payload);
    expect(await inStep()).toBe(start + bytes);
    expect(
      await recordSession(env.DB, { id: open, skillId: "sha256", calls: 170, amountCents: 51, payload }),
    ).toBe(true);
    expect(await inStep()).toBe(start + bytes);

    // Expired: its webhook takes its bytes off.
    const expiring = await createCheckout("sha256", 170, payload);
    await stripe.checkout.sessions.expire(expiring);
    expect(await inStep()).toBe(start + 2 * bytes);
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.expired", expiring)))).toBe(
      "expired",
    );
    expect(await sessionRow(expiring)).toMatchObject({ status: "expired", payload: null });
    expect(await inStep()).toBe(start + bytes);

    // Two deliveries of its expiry (two event ids) at once, while the Cron clears it as stale
    // too: three writers clear one row, and its bytes come off once.
    const raced = await createCheckout("sha256", 170, payload);
    await stripe.checkout.sessions.expire(raced);
    await age(raced, 5);
    const expired = await sessionEvent("checkout.session.expired", raced);
    const again = await sessionEvent("checkout.session.expired", raced);
    await Promise.all([
      deliver(expired),
      deliver(again),
      env.DB.batch(staleUnpaidPayloads(env.DB, Date.now(), 100)),
    ]);
    expect(await sessionRow(raced)).toMatchObject({ status: "expired", payload: null });
    expect(await inStep()).toBe(start + bytes);

    // A delayed payment that failed, its event delivered twice at once.
    const failing = await createCheckout("sha256", 170, payload);
    await pay(failing, "async_failed");
    expect(await inStep()).toBe(start + 2 * bytes);
    const failed = [
      await sessionEvent("checkout.session.async_payment_failed", failing),
      await sessionEvent("checkout.session.async_payment_failed", failing),
    ];
    for (const outcome of await Promise.all(failed.map(async (e) => outcomeOf(await deliver(e))))) {
      expect(outcome).toBe("payment_failed");
    }
    expect(await inStep()).toBe(start + bytes);

    // Granted: the payload stays (its first call runs from it) but no longer counts as unpaid.
    const paid = await createCheckout("sha256", 170, payload);
    await pay(paid);
    expect(await inStep()).toBe(start + 2 * bytes);
    await grant(paid);
    expect((await sessionRow(paid))?.payload).toBe(JSON.stringify(payload));
    expect(await inStep()).toBe(start + bytes);

    // The Cron's clearing of a payload no payment can run any more.
    await age(open, 5);
    expect((await env.DB.batch(staleUnpaidPayloads(env.DB, Date.now(), 100))).at(-1)?.meta.changes).toBe(1);
    expect(await inStep()).toBe(start);

    // A payload the previous version stored without its size (uncounted) is counted once measured.
    await row("legacy", { payload: JSON.stringify(payload), bytes: null });
    expect(await inStep()).toBe(start);
    await env.DB.batch(unmeasuredPayloads(env.DB, 100));
    expect(await sessionRow(`${PROBE}legacy`)).toMatchObject({ payload_bytes: bytes });
    expect(await inStep()).toBe(start + bytes);

    // The retention delete takes only rows whose size is gone: one left with a size but no
    // payload (no writer leaves it) stays until the clearing takes its size off, then goes.
    await row("sized_only", { payload: null, bytes: 777, status: "expired", ageDays: 31 });
    await recountPayloadTotal(env.DB);
    expect(await inStep()).toBe(start + bytes + 777);
    await expiredUnpaidSessions(env.DB, Date.now(), 1000).run();
    expect(await sessionRow(`${PROBE}sized_only`)).not.toBeNull();
    expect(await inStep()).toBe(start + bytes + 777);
    await env.DB.batch(staleUnpaidPayloads(env.DB, Date.now(), 100));
    await expiredUnpaidSessions(env.DB, Date.now(), 1000).run();
    expect(await sessionRow(`${PROBE}sized_only`)).toBeNull();
    expect(await inStep()).toBe(start + bytes);
  });

  it("concurrent checkouts at the cap: exactly one takes the last room; a replay racing its first recording takes it once", async () => {
    await recountPayloadTotal(env.DB);
    await row("fill", { bytes: CAP - bytes - (await realSum()) });
    await recountPayloadTotal(env.DB);
    const record = (id: string) =>
      recordSession(env.DB, { id, skillId: "sha256", calls: 170, amountCents: 51, payload });
    const ids = Array.from({ length: 6 }, (_, i) => `${PROBE}race_${i}`);
    const recorded = await Promise.all(ids.map(record));
    expect(recorded.filter(Boolean)).toHaveLength(1);
    expect(await inStep()).toBe(CAP);

    await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${PROBE}race_%`).run();
    await recountPayloadTotal(env.DB);
    expect(await Promise.all([record(`${PROBE}twice`), record(`${PROBE}twice`)])).toEqual([true, true]);
    expect(await inStep()).toBe(CAP);
  });

  it("the Cron heals what the previous version wrote beside this one, and logs by how much", async () => {
    await recountPayloadTotal(env.DB);
    const start = await inStep();
    // The previous version's INSERT and expiry, verbatim: they run on the new schema, and leave
    // the total as it was.
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?7
       WHERE ?6 IS NULL OR (SELECT coalesce(sum(payload_bytes), 0) FROM checkout_sessions
  WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL) + ?6 <= ?8
       ON CONFLICT (id) DO NOTHING`,
    )
      .bind(`${PROBE}old_insert`, "sha256", 170, 51, "{}", 5000, Date.now(), CAP)
      .run();
    const cleared = await createCheckout("sha256", 170, payload);
    await env.DB.prepare(
      `UPDATE checkout_sessions SET status = 'expired', payload = NULL, payload_bytes = NULL, updated_at = ?2
       WHERE id = ?1 AND status = 'open' AND api_key_id IS NULL`,
    )
      .bind(cleared, Date.now())
      .run();
    expect(await total()).toBe(start + bytes);
    expect(await realSum()).toBe(start + 5000);

    const { thrown, lines } = await cronRun();
    expect(thrown).toBe("");
    expect(lines.join("\n")).toContain(
      `"checkout_payload_total":{"bytes":${start + 5000},"drift":${5000 - bytes}}`,
    );
    expect(await inStep()).toBe(start + 5000);

    // Its row gone (by hand): payload checkouts wait for the next run, which makes it again.
    await env.DB.prepare("DELETE FROM checkout_payload_total").run();
    expect(await total()).toBeNull();
    expect(await cronRun()).toMatchObject({ thrown: "" });
    expect(await inStep()).toBe(start + 5000);
  });

  it("a checkout reads a few rows however many sessions are unpaid", { timeout: 60_000 }, async () => {
    const unpaid = 20_000;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
       INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       SELECT ?1 || i, 'sha256', 170, 51, 'open', '{}', 2, ?3, ?3 FROM n`,
    )
      .bind(`${PROBE}many_`, unpaid, Date.now())
      .run();
    await recountPayloadTotal(env.DB);
    const counted = countingDb(env.DB);
    const res = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ skill_id: "sha256", payload }),
      }),
      { ...env, DB: counted.db },
    );
    expect(res.status).toBe(200);
    // Before: the check and the INSERT each summed all 20,000 rows (40,000 and more read).
    expect(counted.seen.rows).toBeLessThanOrEqual(10);
    await inStep();
  });

  it("each write reads its own rows by their key or the payload index, never every unpaid row", async () => {
    const sql: string[] = [];
    const chain = { bind: () => chain };
    const recording = {
      prepare: (q: string) => {
        sql.push(q);
        return chain;
      },
    } as unknown as D1Database;
    staleUnpaidPayloads(recording, 0, 1);
    const [staleSum, staleClear] = sql.splice(0);
    const plan = async (statement: string | undefined, ...params: unknown[]) =>
      (
        await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement}`)
          .bind(...params)
          .all<{ detail: string }>()
      ).results
        .map((r) => r.detail)
        .join("\n");
    // The clearing's sum and the clearing read the same index range by the same condition and
    // limit: the same rows.
    const range =
      "SEARCH checkout_sessions USING COVERING INDEX checkout_sessions_unpaid_payload (created_at<?)";
    expect(await plan(staleSum, 0, 1, 0)).toContain(range);
    expect(await plan(staleClear, 0, 1, 0, 0)).toContain(range);
    // What a grant, an expiry or a failed payment takes off: one row, by its id.
    const sessionId = `${PROBE}plan`;
    await recordSession(env.DB, { id: sessionId, skillId: "sha256", calls: 170, amountCents: 51, payload });
    moveTotal(recording, releasedBy("id = ?1"));
    const byId = await plan(sql.pop(), sessionId);
    expect(byId).toMatch(
      /SEARCH checkout_sessions USING INDEX sqlite_autoindex_checkout_sessions_1 \(id=\?\)/,
    );
    expect(byId).not.toMatch(/SCAN checkout_sessions/);
  });
});
