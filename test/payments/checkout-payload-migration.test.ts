import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0015 on a database that already holds checkout sessions (one from 0001 with a
 * payload never paid, one paid after 0004 with its payload and answer, one without a payload):
 * it must apply, read no payload and leave every row as it was, its new columns empty; the Cron
 * then measures the unpaid payload (test/payments/checkout-payload-clearing.test.ts). Run against
 * copies of the tables made by migrations 0001–0014 themselves, under other names, so the shared
 * tables stay as they are.
 */
const PREFIX = "m0015_";

it("migration 0015 applies over existing checkout sessions: each kept, its size and pending mark empty", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox(PREFIX);
  expect(names).toContain("0015_checkout_payload_bytes.sql");

  await apply("0001_");
  await insert(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, created_at, updated_at)
     VALUES ('cs_old', 'sha256', 170, 51, 'open', '{"text":"é"}', 1, 1)`,
  );
  for (const n of ["0002_", "0003_", "0004_", "0005_", "0006_", "0007_"]) await apply(n);
  await insert(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_result, api_key_id,
       payment_intent, payload_started_at, created_at, updated_at)
     VALUES ('cs_paid', 'sha256', 170, 51, 'complete', '{"text":"a"}', '{"status":200}', 'k1', 'pi_1', 3, 2, 3)`,
  );
  await insert(
    `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at)
     VALUES ('k1', 'h1', 'sha256', 170, 169, 'cs_paid', 2)`,
  );
  for (const n of ["0008_", "0009_", "0010_", "0011_", "0012_", "0013_", "0014_"]) await apply(n);
  await insert(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at)
     VALUES ('cs_bare', 'sha256', 170, 51, 'expired', 4, 4)`,
  );

  await apply("0015_");

  const all = async (sql: string) => (await env.DB.prepare(renamed(sql)).all()).results;
  expect(
    await all(
      `SELECT id, status, payload, payload_result, api_key_id, payment_intent, payload_bytes, payment_pending_at
       FROM checkout_sessions ORDER BY created_at`,
    ),
  ).toEqual([
    {
      id: "cs_old",
      status: "open",
      payload: '{"text":"é"}',
      payload_result: null,
      api_key_id: null,
      payment_intent: null,
      payload_bytes: null,
      payment_pending_at: null,
    },
    {
      id: "cs_paid",
      status: "complete",
      payload: '{"text":"a"}',
      payload_result: '{"status":200}',
      api_key_id: "k1",
      payment_intent: "pi_1",
      payload_bytes: null,
      payment_pending_at: null,
    },
    {
      id: "cs_bare",
      status: "expired",
      payload: null,
      payload_result: null,
      api_key_id: null,
      payment_intent: null,
      payload_bytes: null,
      payment_pending_at: null,
    },
  ]);
  // Only the unpaid payload is waiting to be measured; the cap counts nothing yet.
  expect(
    await all(
      "SELECT id FROM checkout_sessions WHERE payload IS NOT NULL AND payload_bytes IS NULL AND api_key_id IS NULL",
    ),
  ).toEqual([{ id: "cs_old" }]);
  const indexes = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND name LIKE ?2",
  )
    .bind(`${PREFIX}checkout_sessions`, `${PREFIX}checkout_sessions_un%`)
    .all<{ name: string }>();
  expect(indexes.results.map((i) => i.name).sort()).toEqual([
    `${PREFIX}checkout_sessions_unmeasured_payload`,
    `${PREFIX}checkout_sessions_unpaid_payload`,
  ]);
  await drop();
});
