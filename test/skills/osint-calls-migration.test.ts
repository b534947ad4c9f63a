import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { pruneExpired } from "../../src/ops/database";
import { migrationSandbox } from "../fixtures/migrations";

/**
 * Migration 0016 on a call log that holds seeds (written by every version before it): the seeds
 * are blanked, every row is kept with its request id, depth and size, and a row written the old
 * way after it (a previous Worker version during a rollout) still inserts; the Cron blanks it.
 */
it("migration 0016 blanks the osint_graph seeds logged before it and keeps each call", async () => {
  const { apply, insert, renamed, drop, names } = await migrationSandbox("m0016_");
  expect(names).toContain("0016_osint_calls_no_seed.sql");
  for (const m of names) {
    if (m.startsWith("0016_")) break;
    await apply(m.slice(0, 5));
  }
  const oldInsert = (id: string, seed: string) =>
    insert(
      "INSERT INTO osint_calls (request_id, seed_entity, max_depth, nodes, created_at) VALUES (?, ?, 2, 7, 1)",
      id,
      seed,
    );
  await oldInsert("r-1", "Jane Q. Public");
  await oldInsert("r-2", "");
  await apply("0016_");
  await oldInsert("r-3", "written by the previous version");
  const rows = await env.DB.prepare(
    renamed("SELECT request_id, seed_entity, max_depth, nodes FROM osint_calls ORDER BY id"),
  ).all();
  expect(rows.results).toEqual([
    { request_id: "r-1", seed_entity: "", max_depth: 2, nodes: 7 },
    { request_id: "r-2", seed_entity: "", max_depth: 2, nodes: 7 },
    { request_id: "r-3", seed_entity: "written by the previous version", max_depth: 2, nodes: 7 },
  ]);
  // 0017: the Cron's blanking statement reads those rows through a partial index, not the table.
  await apply("0017_");
  const plan = await env.DB.prepare(
    renamed(
      "EXPLAIN QUERY PLAN UPDATE osint_calls SET seed_entity = '' WHERE id IN (SELECT id FROM osint_calls WHERE seed_entity <> '' LIMIT 1000)",
    ),
  ).all<{ detail: string }>();
  expect(plan.results.map((r) => r.detail).join("\n")).toMatch(
    /USING (COVERING )?INDEX m0016_osint_calls_seeded/,
  );
  await drop();
});

it("the Cron blanks a seed an earlier Worker version logged after the migration (a rollout, a rollback)", async () => {
  const requestId = `old-version-${crypto.randomUUID()}`;
  await env.DB.prepare(
    "INSERT INTO osint_calls (request_id, seed_entity, max_depth, nodes, created_at) VALUES (?1, 'Jane Q. Public', 2, 7, 1)",
  )
    .bind(requestId)
    .run();
  const pruned = await pruneExpired(env.DB);
  expect(pruned.osint_seeds.deleted).toBeGreaterThanOrEqual(1);
  expect(
    await env.DB.prepare("SELECT seed_entity, max_depth, nodes FROM osint_calls WHERE request_id = ?1")
      .bind(requestId)
      .first(),
  ).toEqual({ seed_entity: "", max_depth: 2, nodes: 7 });
});
