import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0014 on a database holding rows written under every earlier migration (a claim from
 * before 0003 with no terms, one from 0011 with its queue column, an upstream row before and after
 * 0005's terms, a refund before and after 0010's nonce): it must apply and leave every row as it
 * was, in the queue and not resolved by hand. Run against copies of the tables made by migrations
 * 0001–0013 themselves, under other names, so the shared tables stay as they are.
 */
const PREFIX = "m0014_";

it("migration 0014 applies over rows of every earlier migration: each kept, in the queue, none resolved by hand", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox(PREFIX);
  expect(names).toContain("0014_by_hand.sql");

  await apply("0001_");
  await apply("0002_");
  await insert(
    "INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at) VALUES ('old', 'r-old', 'sha256', 'failed', 1, 1)",
  );
  await insert(
    "INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at) VALUES ('u-old', 'pricefeed', 'price', 10000, 200, 1)",
  );
  for (const n of ["0003_", "0004_", "0005_", "0006_", "0007_"]) await apply(n);
  await insert(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, error, created_at, updated_at)
     VALUES ('f-old', '0xabc', 3000, 0, 'r', 'owed', 'send failed', 1, 1)`,
  );
  for (const n of ["0008_", "0009_", "0010_", "0011_", "0012_", "0013_"]) await apply(n);
  await insert(
    `INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at, payer, pay_to, asset,
       network, amount_atomic, auth_nonce, valid_before, x402_version, payout, checked_at)
     VALUES ('new', 'r-new', 'sha256', 'running', 2, 2, '0x1', '0x2', '0x3', 'eip155:8453', 3000, '0x4', 5, 2, 'none', 9)`,
  );
  await insert(
    `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at, payer,
       pay_to, asset, network, auth_nonce, valid_before, chain_status, checked_at)
     VALUES ('u-new', 'pricefeed', 'price', 10000, 0, 2, '0x1', '0x2', '0x3', 'eip155:8453', '0x4', 5, 'landed', 9)`,
  );
  await insert(
    `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, tx_hash, created_at, updated_at,
       auth_nonce, asset, network, auth_from, valid_before, hold)
     VALUES ('f-new', '0xabc', 3000, 0, 'r', 'refunded', '0xtx', 2, 2, '0x5', '0x3', 'eip155:8453', '0x6', 7, NULL)`,
  );

  await apply("0014_");

  const all = async (sql: string) => (await env.DB.prepare(renamed(sql)).all()).results;
  expect(
    await all(
      "SELECT nonce, status, checked_at, no_log_runs, no_log_since, hold FROM payment_nonces ORDER BY nonce",
    ),
  ).toEqual([
    { nonce: "new", status: "running", checked_at: 9, no_log_runs: 0, no_log_since: null, hold: null },
    { nonce: "old", status: "failed", checked_at: null, no_log_runs: 0, no_log_since: null, hold: null },
  ]);
  expect(
    await all(
      "SELECT request_id, chain_status, no_log_runs, no_log_since, hold FROM upstream_payments ORDER BY id",
    ),
  ).toEqual([
    { request_id: "u-old", chain_status: null, no_log_runs: 0, no_log_since: null, hold: null },
    { request_id: "u-new", chain_status: "landed", no_log_runs: 0, no_log_since: null, hold: null },
  ]);
  expect(
    await all(
      "SELECT request_id, status, tx_hash, error, auth_nonce, resolved_at, resolved_note FROM refunds ORDER BY id",
    ),
  ).toEqual([
    {
      request_id: "f-old",
      status: "owed",
      tx_hash: null,
      error: "send failed",
      auth_nonce: null,
      resolved_at: null,
      resolved_note: null,
    },
    {
      request_id: "f-new",
      status: "refunded",
      tx_hash: "0xtx",
      error: null,
      auth_nonce: "0x5",
      resolved_at: null,
      resolved_note: null,
    },
  ]);
  // The held lists' indexes exist, on the copies too.
  const indexes = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE ?1")
    .bind(`${PREFIX}%_held`)
    .all<{ name: string }>();
  expect(indexes.results.map((i) => i.name).sort()).toEqual([
    `${PREFIX}payment_nonces_held`,
    `${PREFIX}upstream_payments_held`,
  ]);
  await drop();
});
