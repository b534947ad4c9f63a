import type { Bindings } from "../../env";

/**
 * The D1 log of osint_graph calls (`osint_calls`): every call, including one served from the
 * cache, with its depth and the size of the graph it answered. Kept out of the skill's
 * definition, which holds only what the call computes.
 *
 * Not its seed: a seed is often a person's name, and the request id joins the row to the payer's
 * wallet in `payments`, so the log would keep "this wallet looked up this person" for good, which
 * the published terms do not say and settlement does not need. The column stays (written empty)
 * so that a Worker version still writing it keeps working during a rollout (migration 0016), and
 * the Cron blanks what such a version writes (seededCalls).
 */

/** Records the call for later settlement; true only when the row was written. */
export async function logCall(env: Bindings, requestId: string, maxDepth: number, nodes: number) {
  try {
    const result = await env.DB.prepare(
      "INSERT INTO osint_calls (request_id, seed_entity, max_depth, nodes, created_at) VALUES (?, '', ?, ?, ?)",
    )
      .bind(requestId, maxDepth, nodes, Date.now())
      .run();
    return result.success === true && (result.meta?.changes ?? 0) === 1;
  } catch (e) {
    console.error(
      JSON.stringify({ level: "error", request_id: requestId, error: `osint_calls insert: ${e}` }),
    );
    return false;
  }
}

/**
 * Rows an earlier Worker version logged with their seed (during a rollout or after a rollback):
 * blanked by the Cron, up to `limit` a statement. SQLite finds them through the partial index of
 * migration 0017 (osint_calls_seeded), so a run reads only such rows; without it (not yet
 * migrated) the statement still works, as a scan.
 */
export function seededCalls(db: D1Database, limit: number) {
  return db
    .prepare(
      `UPDATE osint_calls SET seed_entity = '' WHERE id IN
         (SELECT id FROM osint_calls WHERE seed_entity <> '' LIMIT ?1)`,
    )
    .bind(limit);
}
