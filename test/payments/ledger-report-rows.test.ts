import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ledgerReport, paymentsQuery } from "../../src/payments/ledger-report";
import { countingDb } from "../fixtures/rows-read";

// GET /api/admin/payments over a ledger of a few thousand payments and refunds: a filtered view
// reads about what it shows, and answers what the query before it answered on the same rows.
const SEEDED = 3000;
const tag = `lr${crypto.randomUUID().slice(0, 8)}`;
const id = (i: number) => `${tag}-req-${i}`;
const resourceOf = (i: number) => `${tag}-skill-${i % 3}`;

const NOTHING_OWED = "(status = 'refunded' AND resolved_at IS NOT NULL AND tx_hash IS NULL)";

/**
 * The ledger's three reads as they were written before (`?2 IS NULL OR …`, refund totals by IN),
 * the refunds counted as the report counts them now: a payment's own and every `<id>:…` row (its
 * share's return, the rests of hand refunds).
 */
async function oldReport(db: D1Database, q: { resource?: string; request_id?: string; limit: number }) {
  const where = "WHERE (?1 IS NULL OR resource = ?1) AND (?2 IS NULL OR request_id = ?2)";
  const args = [q.resource ?? null, q.request_id ?? null];
  const [rows, totals, refunded] = await db.batch([
    db
      .prepare(
        `SELECT request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at, reconciled_at
       FROM payments ${where} ORDER BY id DESC LIMIT ?3`,
      )
      .bind(...args, q.limit),
    db
      .prepare(
        `SELECT count(*) AS count, coalesce(sum(amount_atomic), 0) AS amount_atomic FROM payments ${where}`,
      )
      .bind(...args),
    db
      .prepare(
        // Read as the report reads it since a share kept in doubt can be recorded as nothing owed
        // (refunded by hand with no transfer): not among the refunds recorded or landed, apart.
        `SELECT count(CASE WHEN NOT ${NOTHING_OWED} THEN 1 END) AS count,
                coalesce(sum(CASE WHEN NOT ${NOTHING_OWED} THEN amount_micro ELSE 0 END), 0) AS amount_atomic,
                coalesce(sum(CASE WHEN status = 'refunded' AND NOT ${NOTHING_OWED} THEN amount_micro ELSE 0 END), 0)
                  AS refunded_atomic,
                coalesce(sum(CASE WHEN ${NOTHING_OWED} THEN amount_micro ELSE 0 END), 0) AS nothing_owed_atomic
         FROM refunds WHERE request_id IN (SELECT request_id FROM payments ${where})
            OR substr(request_id, 1, instr(request_id, ':') - 1) IN (SELECT request_id FROM payments ${where})`,
      )
      .bind(...args),
  ]);
  return {
    payments: rows?.results,
    totals: totals?.results[0],
    refunds: refunded?.results[0],
    rowsRead: [rows, totals, refunded].reduce((n, r) => n + (r?.meta.rows_read ?? 0), 0),
  };
}

/** env.DB, summing the rows read (meta.rows_read) by statements on the payments or refunds tables. */
const countingLedgerDb = (db: D1Database) => countingDb(db, (sql) => /FROM (payments|refunds)\b/.test(sql));

beforeAll(async () => {
  const now = Date.now();
  const ids = JSON.stringify(Array.from({ length: SEEDED }, (_, i) => i));
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at)
       SELECT ?1 || '-nonce-' || value, ?1 || '-req-' || value, ?1 || '-skill-' || (value % 3), 'settled', ?2, ?2
       FROM json_each(?3)`,
    ).bind(tag, now, ids),
    env.DB.prepare(
      `INSERT INTO payments (request_id, resource, amount_atomic, asset, payer, pay_to, network, tx_hash, nonce, created_at)
       SELECT ?1 || '-req-' || value, ?1 || '-skill-' || (value % 3), 1000 + value, '0xusdc', '0xpayer', '0xpayto',
              'eip155:8453', '0xtx' || value, ?1 || '-nonce-' || value, ?2
       FROM json_each(?3)`,
    ).bind(tag, now, ids),
    // A refund for every payment: its own (owed or refunded) for most, a kept-back share's
    // return (`:withheld`) for every seventh as well, one in two of those recorded as nothing owed
    // (a share kept in doubt that the partner was paid: refunded by hand, with no transfer).
    env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
       SELECT ?1 || '-req-' || value, '0xpayer', 100 + value, 0, 'test', CASE WHEN value % 2 THEN 'refunded' ELSE 'owed' END, ?2, ?2
       FROM json_each(?3)`,
    ).bind(tag, now, ids),
    env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at,
         resolved_at)
       SELECT ?1 || '-req-' || value || ':withheld', '0xpayer', 7, 0, 'test', 'refunded', ?2, ?2,
              CASE WHEN value % 2 THEN NULL ELSE ?2 END
       FROM json_each(?3) WHERE value % 7 = 0`,
    ).bind(tag, now, ids),
    // The rests of hand refunds paid short, owed: of a payment's own refund for every eleventh, and
    // of a kept share's return, a rest's rest too, for every seventy-seventh.
    env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
       SELECT ?1 || '-req-' || j.value || r.suffix, '0xpayer', 11, 0, 'test', 'owed', ?2, ?2
       FROM json_each(?3) j
       JOIN (SELECT ':rest' AS suffix, 11 AS every UNION ALL SELECT ':withheld:rest', 77
             UNION ALL SELECT ':withheld:rest:rest', 77) r ON j.value % r.every = 0`,
    ).bind(tag, now, ids),
  ]);
});

afterAll(async () => {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM refunds WHERE request_id LIKE ?1").bind(`${tag}-%`),
    env.DB.prepare("DELETE FROM payments WHERE request_id LIKE ?1").bind(`${tag}-%`),
    env.DB.prepare("DELETE FROM payment_nonces WHERE request_id LIKE ?1").bind(`${tag}-%`),
  ]);
});

describe("GET /api/admin/payments over thousands of payments and refunds", () => {
  const views: [string, Record<string, string>][] = [
    ["every payment", {}],
    ["one request id", { request_id: id(1401) }],
    ["one request id with a kept share returned", { request_id: id(1407) }],
    ["one request id with a kept share owed to nobody", { request_id: id(700) }],
    ["one request id with the rests of hand refunds", { request_id: id(77) }],
    ["one resource", { resource: resourceOf(1) }],
    ["one resource and a request id of it", { resource: resourceOf(1), request_id: id(1) }],
    ["a resource and a request id of another", { resource: resourceOf(1), request_id: id(2) }],
    ["an unknown request id", { request_id: `${tag}-nobody` }],
    ["an empty request id", { request_id: "" }],
  ];

  it.each(views)("%s: the rows and totals the query before answered", async (_, params) => {
    const q = paymentsQuery.parse({ ...params, limit: "50" });
    const report = await ledgerReport(env.DB, q);
    const old = await oldReport(env.DB, q);
    expect(report.payments).toEqual(old.payments);
    expect(report.totals).toEqual(old.totals);
    expect(report.refunds).toEqual(old.refunds);
  });

  it("a view of one request id reads a handful of ledger rows, not the tables", async () => {
    const q = paymentsQuery.parse({ request_id: id(1400) });
    const counting = countingLedgerDb(env.DB);
    const report = await ledgerReport(counting.db, q);
    expect(report.payments).toHaveLength(1);
    // Its own refund, owed; its kept share owed to nobody, refunded to nobody.
    expect(report.refunds).toEqual({
      count: 1,
      amount_atomic: 100 + 1400,
      refunded_atomic: 0,
      nothing_owed_atomic: 7,
    });
    const old = await oldReport(env.DB, q);
    console.log(`?request_id=… read ${counting.seen.rows} ledger rows; before: ${old.rowsRead}`);
    expect(old.rowsRead).toBeGreaterThan(4 * SEEDED);
    expect(counting.seen.rows).toBeLessThanOrEqual(10);
  });

  it("a view of one resource reads about its own payments and refunds", async () => {
    const q = paymentsQuery.parse({ resource: resourceOf(2) });
    const counting = countingLedgerDb(env.DB);
    const report = await ledgerReport(counting.db, q);
    expect(report.totals).toMatchObject({ count: SEEDED / 3 });
    const old = await oldReport(env.DB, q);
    console.log(`?resource=… read ${counting.seen.rows} ledger rows; before: ${old.rowsRead}`);
    // Its 1,000 payments (an index entry and a row each) read by each of the three statements,
    // and their refunds by the join: none of the other resources' rows.
    const own = SEEDED / 3;
    // Those the totals count, and the ones owed to nobody they leave out (7 micro-USDC each).
    const refunds = report.refunds as { count: number; nothing_owed_atomic: number };
    const ownRefunds = Number(refunds.count) + Number(refunds.nothing_owed_atomic) / 7;
    expect(counting.seen.rows).toBeLessThanOrEqual(3 * 2 * own + ownRefunds + 50);
    expect(counting.seen.rows).toBeLessThan(old.rowsRead);
  });
});
