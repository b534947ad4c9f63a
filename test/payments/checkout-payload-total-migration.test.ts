import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0025 on a database that already holds checkout sessions: the running total of unpaid
 * payloads starts as the sum the cap counted (measured payloads of sessions never granted), so it
 * is right the moment the new version is up, and the previous version's writes still run on it.
 * Run against copies of the tables made by the migrations themselves, under other names.
 */
const PREFIX = "m0025_";

it("migration 0025 starts the unpaid payloads' total at their real sum, and the previous version's INSERT still runs", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox(PREFIX);
  const before = names.filter((n) => n < "0025_");
  expect(names).toContain("0025_checkout_payload_total.sql");
  for (const n of before) await apply(n.slice(0, 5));
  const session = (id: string, payload: string | null, bytes: number | null, keyId: string | null) =>
    insert(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, api_key_id, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?3, ?4, 1, 1)`,
      id,
      payload,
      bytes,
      keyId,
    );
  await session("cs_unpaid_a", '{"text":"a"}', 12, null);
  await session("cs_unpaid_b", '{"text":"bb"}', 13, null);
  // Not counted: granted (its payload kept for its first call), and not yet measured.
  await session("cs_paid", '{"text":"c"}', 12, "k1");
  await session("cs_unmeasured", '{"text":"d"}', null, null);
  await session("cs_bare", null, null, null);

  await apply("0025_");

  const first = async (sql: string) => env.DB.prepare(renamed(sql)).first();
  expect(await first("SELECT id, bytes, claim FROM checkout_payload_total")).toEqual({
    id: 1,
    bytes: 25,
    claim: null,
  });
  // One row, by its id: the Cron's recount can upsert it.
  await expect(first("INSERT INTO checkout_payload_total (id, bytes) VALUES (1, 0)")).rejects.toThrow(
    /UNIQUE constraint failed/,
  );
  // The previous version's INSERT, verbatim, on the new schema.
  const { meta } = await insert(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?7
       WHERE ?6 IS NULL OR (SELECT coalesce(sum(payload_bytes), 0) FROM checkout_sessions
  WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL) + ?6 <= ?8
       ON CONFLICT (id) DO NOTHING`,
    "cs_old_version",
    "sha256",
    170,
    51,
    "{}",
    2,
    5,
    256 * 1024 * 1024,
  );
  expect(meta.changes).toBe(1);
  await drop();
});
