import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0026 (card_spends) only adds a table: the previous version's spend and give-back
 * (main's payments/credits.ts, one UPDATE each, never reading card_spends) still run on the new
 * schema while both versions serve. Run against copies of the tables made by the migrations.
 */
const PREFIX = "m0026_";

it("migration 0026 keeps the previous version's spend and give-back running", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox(PREFIX);
  expect(names).toContain("0026_card_spends.sql");
  for (const n of names.filter((x) => x < "0026_")) await apply(n.slice(0, 5));
  await insert(
    `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at)
     VALUES ('k0026', 'h0026', 'uuid_mint', 10, 5, 0)`,
  );
  await apply("0026_");
  const first = (sql: string, ...args: unknown[]) =>
    env.DB.prepare(renamed(sql))
      .bind(...args)
      .first<{ calls_left: number }>();
  // The previous version's spend, verbatim (spendCreditStatement with its spendCredit's WHERE).
  expect(
    await first(
      "UPDATE api_keys SET calls_left = calls_left - 1 WHERE calls_left > 0 AND key_hash = ?1 AND skill_id = ?2 AND dispute_status IS NULL RETURNING calls_left",
      "h0026",
      "uuid_mint",
    ),
  ).toEqual({ calls_left: 4 });
  // Its give-back, verbatim.
  expect(
    await first(
      `UPDATE api_keys SET
         calls_left = CASE WHEN revoke_debt > 0 THEN calls_left ELSE min(calls_left + 1, calls_total - calls_revoked) END,
         revoke_debt = max(0, revoke_debt - 1)
       WHERE key_hash = ?1 AND dispute_status IS NOT 'lost' RETURNING calls_left`,
      "h0026",
    ),
  ).toEqual({ calls_left: 5 });
  expect(await first("SELECT count(*) AS calls_left FROM card_spends")).toEqual({ calls_left: 0 });
  await drop();
});
