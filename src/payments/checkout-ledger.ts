import type { Bindings } from "../env";
import { zodItems } from "../http/validation";
import { skillById } from "../skills/registry";
import { runSkill } from "../skills/run";
import { NotImplemented } from "../skills/types";
import { hashKey, newApiKey } from "./credits";
import { openKey, sealKey } from "./key-reveal";

export interface SessionRow {
  id: string;
  skill_id: string;
  calls: number;
  amount_cents: number;
  status: "open" | "complete" | "expired";
  payload: string | null;
  payload_result: string | null;
  api_key_id: string | null;
  api_key_reveal: string | null;
  created_at: number;
}

export async function findSession(db: D1Database, id: string) {
  return db.prepare("SELECT * FROM checkout_sessions WHERE id = ?1").bind(id).first<SessionRow>();
}

export async function recordSession(
  db: D1Database,
  s: { id: string; skillId: string; calls: number; amountCents: number; payload: unknown },
) {
  const now = Date.now();
  await db
    .prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?6) ON CONFLICT (id) DO NOTHING`,
    )
    .bind(
      s.id,
      s.skillId,
      s.calls,
      s.amountCents,
      s.payload === undefined ? null : JSON.stringify(s.payload),
      now,
    )
    .run();
}

export type GrantOutcome = "granted" | "duplicate_event" | "already_granted" | "unknown_session";

/**
 * Grants a completed session's credits exactly once. The event id (when given), the key and the
 * session's new state are written in one D1 batch (a transaction): a redelivered event fails on
 * the webhook_events primary key and rolls back; a second grant of the same session matches no
 * row because `api_key_id` is already set.
 */
export async function grantCredits(
  env: Bindings,
  sessionId: string,
  event?: { id: string; type: string },
): Promise<GrantOutcome> {
  const db = env.DB;
  // Both grant paths (webhook, success page) run only with Stripe configured.
  if (!env.STRIPE_SECRET_KEY) throw new Error("STRIPE_SECRET_KEY is required to grant credits");
  const key = newApiKey();
  const keyId = crypto.randomUUID();
  const now = Date.now();
  const statements = [
    db
      .prepare(
        `INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at)
         SELECT ?1, ?2, skill_id, calls, calls, id, ?3 FROM checkout_sessions WHERE id = ?4 AND api_key_id IS NULL`,
      )
      .bind(keyId, await hashKey(key), now, sessionId),
    db
      .prepare(
        `UPDATE checkout_sessions SET status = 'complete', api_key_id = ?1, api_key_reveal = ?2, updated_at = ?3
         WHERE id = ?4 AND api_key_id IS NULL`,
      )
      .bind(keyId, await sealKey(env.STRIPE_SECRET_KEY, sessionId, key), now, sessionId),
  ];
  if (event) {
    statements.unshift(
      db
        .prepare("INSERT INTO webhook_events (event_id, type, received_at) VALUES (?1, ?2, ?3)")
        .bind(event.id, event.type, now),
    );
  }
  let results: D1Result[];
  try {
    results = await db.batch(statements);
  } catch (e) {
    if (event && /UNIQUE constraint failed: webhook_events/.test(String(e))) return "duplicate_event";
    throw e;
  }
  const updated = results[results.length - 1]?.meta.changes ?? 0;
  if (updated === 1) {
    // The grant is committed: a failure of the optional first call must not fail the webhook,
    // whose redelivery would find the event already recorded and never run the call.
    try {
      await runFirstPayload(env, sessionId, key);
    } catch (e) {
      console.error(JSON.stringify({ level: "error", session_id: sessionId, error: `first payload: ${e}` }));
    }
    return "granted";
  }
  return (await findSession(db, sessionId)) ? "already_granted" : "unknown_session";
}

/** Records an event that grants nothing (expired sessions, other types); false when seen before. */
export async function recordEvent(db: D1Database, event: { id: string; type: string }) {
  const r = await db
    .prepare(
      "INSERT INTO webhook_events (event_id, type, received_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )
    .bind(event.id, event.type, Date.now())
    .run();
  return r.meta.changes === 1;
}

export async function expireSession(db: D1Database, sessionId: string) {
  await db
    .prepare(
      "UPDATE checkout_sessions SET status = 'expired', updated_at = ?2 WHERE id = ?1 AND status = 'open'",
    )
    .bind(sessionId, Date.now())
    .run();
}

/**
 * A checkout may carry the body of the buyer's first call: it runs once, right after the grant,
 * and spends a credit only if it succeeds. Its answer is kept for the success page.
 */
async function runFirstPayload(env: Bindings, sessionId: string, key: string) {
  const session = await findSession(env.DB, sessionId);
  const skill = session && skillById(session.skill_id);
  if (!session?.payload || !skill) return;
  const body = JSON.parse(session.payload) as unknown;
  let result: { status: number; body: unknown };
  const parsed = skill.input.safeParse(body, { reportInput: true });
  if (!parsed.success) {
    result = { status: 422, body: { detail: zodItems(parsed.error, body, ["body"]) } };
  } else {
    try {
      result = { status: 200, body: await runSkill(skill, parsed.data, env, `checkout:${sessionId}`) };
    } catch (e) {
      result =
        e instanceof NotImplemented
          ? { status: 501, body: { detail: "not implemented" } }
          : { status: 500, body: { detail: "The skill failed; your credit was not spent." } };
    }
  }
  const spend =
    result.status === 200
      ? [
          env.DB.prepare(
            "UPDATE api_keys SET calls_left = calls_left - 1 WHERE key_hash = ?1 AND calls_left > 0",
          ).bind(await hashKey(key)),
        ]
      : [];
  await env.DB.batch([
    ...spend,
    env.DB.prepare("UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?2 WHERE id = ?3").bind(
      JSON.stringify(result),
      Date.now(),
      sessionId,
    ),
  ]);
}

/** The clear key, handed out once: compare-and-swap so two page loads cannot both see it. */
export async function takeKeyReveal(env: Bindings, sessionId: string): Promise<string | undefined> {
  const db = env.DB;
  // Never consume the one reveal without the secret that opens it.
  if (!env.STRIPE_SECRET_KEY) return undefined;
  const row = await db
    .prepare("SELECT api_key_reveal FROM checkout_sessions WHERE id = ?1")
    .bind(sessionId)
    .first<{ api_key_reveal: string | null }>();
  if (!row?.api_key_reveal) return undefined;
  const r = await db
    .prepare("UPDATE checkout_sessions SET api_key_reveal = NULL WHERE id = ?1 AND api_key_reveal = ?2")
    .bind(sessionId, row.api_key_reveal)
    .run();
  if (r.meta.changes !== 1) return undefined;
  return openKey(env.STRIPE_SECRET_KEY, sessionId, row.api_key_reveal);
}
