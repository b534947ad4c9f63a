import { env } from "cloudflare:test";
import { expect, it } from "vitest";

/**
 * Migration 0013 on a database that already holds one transaction recorded for two batches (in two
 * letter cases): it must apply and keep every batch as it is, and the batches written since are
 * unique by the hash in any case. Run against a copy of payout_batches as 0001 created it, under
 * another name, so the shared tables stay as they are.
 */
it("migration 0013 applies over existing duplicate tx hashes: history kept, new batches unique in any letter case", async () => {
  const migration = (env.TEST_MIGRATIONS as { name: string; queries: string[] }[]).find((m) =>
    m.name.startsWith("0013_"),
  );
  expect(migration).toBeDefined();
  const table = "m0013_payout_batches";
  await env.DB.batch([
    env.DB.prepare(`DROP TABLE IF EXISTS ${table}`),
    env.DB.prepare(
      `CREATE TABLE ${table} (id INTEGER PRIMARY KEY AUTOINCREMENT, partner_id TEXT NOT NULL,
         amount_micro INTEGER NOT NULL, tx_hash TEXT NOT NULL, created_at INTEGER NOT NULL)`,
    ),
  ]);
  const a = `0x${"ab".repeat(32)}`;
  const upper = (h: string) => h.toUpperCase().replace("0X", "0x");
  await env.DB.prepare(
    `INSERT INTO ${table} (partner_id, amount_micro, tx_hash, created_at) VALUES
       ('pricefeed', 10, ?1, 0), ('textkit', 20, ?2, 0), ('textkit', 40, ?1, 0)`,
  )
    .bind(a, upper(a))
    .run();
  for (const q of migration?.queries ?? []) await env.DB.prepare(q.replaceAll("payout_batches", table)).run();
  const rows = (
    await env.DB.prepare(`SELECT amount_micro, tx_hash, tx_unique FROM ${table} ORDER BY id`).all()
  ).results;
  expect(rows).toEqual([
    { amount_micro: 10, tx_hash: a, tx_unique: 0 },
    { amount_micro: 20, tx_hash: upper(a), tx_unique: 0 },
    { amount_micro: 40, tx_hash: a, tx_unique: 0 },
  ]);
  const insert = (hash: string) =>
    env.DB.prepare(
      `INSERT INTO ${table} (partner_id, amount_micro, tx_hash, created_at, tx_unique) VALUES ('x', 1, ?1, 0, 1)`,
    )
      .bind(hash)
      .run();
  const b = `0x${"12ef".repeat(16)}`;
  await insert(b);
  await expect(insert(upper(b))).rejects.toThrow(/UNIQUE constraint failed/);
  await env.DB.prepare(`DROP TABLE ${table}`).run();
});
