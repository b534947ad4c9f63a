import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0028 (call_log.n) only adds a column with a default: the previous version's INSERT
 * (eight columns, no count) still runs on the new schema while both versions serve, and each of
 * its rows counts one call in the figures' sum. Run against copies of the tables.
 */
const PREFIX = "m0028_";

it("migration 0028 keeps the previous version's call-log INSERT running, each of its rows one call", async () => {
  const { names, apply, insert, renamed, drop } = await migrationSandbox(PREFIX);
  expect(names).toContain("0028_call_log_count.sql");
  for (const n of names.filter((x) => x < "0028_")) await apply(n.slice(0, 5));
  await apply("0028_");
  // The previous version's INSERT, verbatim (stats/record.ts before 0028).
  await insert(
    `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8), (?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)`,
    1,
    "slugify",
    402,
    "payment_required",
    1,
    "none",
    0,
    "http",
    2,
    "slugify",
    402,
    "payment_required",
    1,
    "none",
    0,
    "http",
  );
  await insert(
    `INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport, n)
           VALUES (3, 'slugify', 402, 'payment_required', 1, 'none', 0, 'http', 5)`,
  );
  expect(await env.DB.prepare(renamed("SELECT sum(n) AS calls FROM call_log")).first()).toEqual({ calls: 7 });
  await drop();
});
