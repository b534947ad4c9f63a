import { sha256Hex } from "../digest";
import type { Skill } from "../skills/types";

/**
 * Card-bought credits. A key `mk_<base64url>` holds N calls of one skill; only its SHA-256 is
 * stored. Spending is one conditional UPDATE, so the last credit cannot be spent twice.
 */
export const KEY_PREFIX = "mk_";

export function newApiKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  let b64 = "";
  for (const b of bytes) b64 += String.fromCharCode(b);
  return `${KEY_PREFIX}${btoa(b64).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** What api_keys stores instead of a key (and what rate limits and receipts name it by). */
export const hashKey = (key: string): Promise<string> => sha256Hex(key);

/**
 * The key of `Bearer mk_…`. The scheme is read in any case, as HTTP authentication schemes are
 * (RFC 9110 §11.1: `bearer mk_…` was refused as a malformed key); the key itself is case-exact.
 */
export function bearerKey(header: string | undefined): string | undefined {
  const m = /^(\S+)\s+(mk_[A-Za-z0-9_-]{16,128})\s*$/.exec(header ?? "");
  return m?.[1]?.toLowerCase() === "bearer" ? m[2] : undefined;
}

/**
 * The card-credit key as `Bearer mk_…`, from the forms agents send: `Authorization: Bearer mk_…`,
 * and as aliases `Authorization: mk_…` (no scheme) and `X-API-Key: mk_…` (with or without Bearer).
 * Any other Authorization value is returned unchanged.
 */
export function cardKeyAuthorization(authorization?: string, apiKey?: string): string | undefined {
  const asBearer = (v: string | undefined) => {
    const t = v?.trim() ?? "";
    return t.startsWith(KEY_PREFIX) ? `Bearer ${t}` : /^Bearer\s+mk_/i.test(t) ? t : undefined;
  };
  return asBearer(authorization) ?? asBearer(apiKey) ?? authorization;
}

export interface KeyRow {
  id: string;
  skill_id: string;
  calls_total: number;
  calls_left: number;
  created_at: number;
  dispute_status: "open" | "lost" | null;
}

export async function findKey(db: D1Database, keyHash: string) {
  return db
    .prepare(
      "SELECT id, skill_id, calls_total, calls_left, created_at, dispute_status FROM api_keys WHERE key_hash = ?1",
    )
    .bind(keyHash)
    .first<KeyRow>();
}

/**
 * The one statement that takes a credit: never below zero, and only from the key `where` picks
 * (SQL over api_keys; its own parameters). Call paths and the checkout's first call share it.
 */
export function spendCreditStatement(db: D1Database, where: string) {
  return db.prepare(
    `UPDATE api_keys SET calls_left = calls_left - 1 WHERE calls_left > 0 AND ${where} RETURNING calls_left`,
  );
}

/**
 * How long a spend's row (card_spends, migration 0026) is kept once given back (given_back = 1,
 * or a request's marker that it spent nothing): far past any call's give-back and any spend batch
 * D1 commits late. Deleted by each spend (a few) and by the Cron (ops/database.ts).
 */
export const CARD_SPEND_KEPT_MS = 60 * 60 * 1000;
/**
 * How long a spend not given back is kept: a failed call's give-back D1 refused every time is
 * logged (`final: true`) for a maintainer, who reads the row to give it back (docs/OPERATIONS.md,
 * "Log lines"); weeks, like the Stripe event ids (webhook-events.ts).
 */
export const CARD_SPEND_UNRETURNED_KEPT_DAYS = 35;
/** Old spend rows one spend deletes at most: it adds one, so a backlog drains a few at a time. */
const EXPIRED_SPENDS_PER_SPEND = 10;

/**
 * The delete of up to `limit` spend rows past their keeping as of `now`, of one kind: given
 * back (CARD_SPEND_KEPT_MS) or not (CARD_SPEND_UNRETURNED_KEPT_DAYS), by the (given_back,
 * spent_at) index: D1 has no DELETE … LIMIT. Run by each spend (a few of each kind) and, in
 * chunks, by the Cron (ops/database.ts).
 */
export function expiredSpends(db: D1Database, now: number, limit: number, givenBack: boolean) {
  const kept = givenBack ? CARD_SPEND_KEPT_MS : CARD_SPEND_UNRETURNED_KEPT_DAYS * 86_400_000;
  return db
    .prepare(
      "DELETE FROM card_spends WHERE rowid IN (SELECT rowid FROM card_spends WHERE given_back = ?3 AND spent_at < ?1 LIMIT ?2)",
    )
    .bind(now - kept, limit, givenBack ? 1 : 0);
}

/**
 * Takes one credit of `skill` from the key for request `requestId`; undefined when none was
 * taken. The spend is recorded under the request id in the same batch (one transaction, the same
 * condition), so a spend whose outcome D1 did not report can be read back (spentBy), and its
 * give-back happens once (refundCredit). The INSERT has no ON CONFLICT: a row already under the
 * request (markNotSpent's, or a give-back's) fails it, and with it the whole batch, before the
 * UPDATE runs; the UPDATE also takes only with the row this batch wrote (its spent_at, not given
 * back).
 */
export async function spendCredit(db: D1Database, keyHash: string, skill: Skill, requestId: string) {
  const now = Date.now();
  // The old rows go first: a database at its size cap can reuse their pages for the new one.
  const [, , , spent] = await db.batch<{ calls_left: number }>([
    expiredSpends(db, now, EXPIRED_SPENDS_PER_SPEND, true),
    expiredSpends(db, now, EXPIRED_SPENDS_PER_SPEND, false),
    db
      .prepare(
        `INSERT INTO card_spends (request_id, key_hash, spent_at)
         SELECT ?3, key_hash, ?4 FROM api_keys
         WHERE calls_left > 0 AND key_hash = ?1 AND skill_id = ?2 AND dispute_status IS NULL`,
      )
      .bind(keyHash, skill.id, requestId, now),
    spendCreditStatement(
      db,
      `key_hash = ?1 AND skill_id = ?2 AND dispute_status IS NULL
       AND EXISTS (SELECT 1 FROM card_spends WHERE request_id = ?3 AND spent_at = ?4 AND given_back = 0)`,
    ).bind(keyHash, skill.id, requestId, now),
  ]);
  return spent?.results[0];
}

/**
 * Whether request `requestId` spent a credit (read back after a spend D1 answered with an error,
 * which may have committed): the key's calls left if it did, null if it did not. A row given back
 * (or a marker, markNotSpent) is no spend.
 */
export async function spentBy(db: D1Database, requestId: string) {
  return db
    .prepare(
      `SELECT k.calls_left FROM card_spends s JOIN api_keys k ON k.key_hash = s.key_hash
       WHERE s.request_id = ?1 AND s.given_back = 0`,
    )
    .bind(requestId)
    .first<{ calls_left: number }>();
}

/**
 * The row "request `requestId` spent nothing" (given_back = 1), unless it has one: a spend batch
 * of the request that D1 commits only now, after its error was read back as "not spent", then
 * fails on the row's primary key and takes nothing. Read back after it (spentBy): a spend that
 * committed first keeps its row, and the call is paid.
 */
export function markNotSpent(db: D1Database, keyHash: string, requestId: string) {
  return db
    .prepare(
      `INSERT INTO card_spends (request_id, key_hash, spent_at, given_back) VALUES (?1, ?2, ?3, 1)
       ON CONFLICT (request_id) DO NOTHING`,
    )
    .bind(requestId, keyHash, Date.now());
}

/** A granted pack as it stands now: what refunds (calls_revoked) and a dispute left of it. */
export interface PackStanding {
  calls_left: number;
  calls_total: number;
  calls_revoked: number;
  dispute_status: "open" | "lost" | null;
}

/** The pack a checkout granted, for the success page: its calls left and what took them back. */
export async function packStanding(db: D1Database, keyId: string) {
  return db
    .prepare("SELECT calls_left, calls_total, calls_revoked, dispute_status FROM api_keys WHERE id = ?1")
    .bind(keyId)
    .first<PackStanding>();
}

/**
 * Gives back the credit request `requestId` spent, for a call that failed; never past what refunds
 * and disputes left. A refund that found the credits in flight (card-refunds.ts applyRefund) left a
 * revoke_debt: a failed call pays that first, so the credit it took stays revoked. One UPDATE (SET
 * reads the row as it was), so concurrent failures and refunds cannot both count the same credit.
 * Only while the spend's row says it was not given back, and that is set in the same batch: a
 * give-back retried after D1 lost its answer (it may have committed) gives nothing twice, and a
 * request that spent nothing gets nothing (and its marker, markNotSpent, stops a late spend of it).
 * Returns the key's calls_left after (undefined for a
 * key whose dispute was lost, which holds nothing).
 */
export async function refundCredit(db: D1Database, keyHash: string, requestId: string) {
  const [, , , left] = await db.batch<{ calls_left: number }>([
    db
      .prepare(
        `UPDATE api_keys SET
           calls_left = CASE WHEN revoke_debt > 0 THEN calls_left ELSE min(calls_left + 1, calls_total - calls_revoked) END,
           revoke_debt = max(0, revoke_debt - 1)
         WHERE key_hash = ?1 AND dispute_status IS NOT 'lost'
           AND EXISTS (SELECT 1 FROM card_spends WHERE request_id = ?2 AND key_hash = ?1 AND given_back = 0)`,
      )
      .bind(keyHash, requestId),
    db.prepare("UPDATE card_spends SET given_back = 1 WHERE request_id = ?1").bind(requestId),
    // No row: the request spent nothing, or its spend has not committed yet; the marker makes
    // such a spend fail (spendCredit), so a give-back sent before it cannot lose its credit.
    markNotSpent(db, keyHash, requestId),
    db
      .prepare("SELECT calls_left FROM api_keys WHERE key_hash = ?1 AND dispute_status IS NOT 'lost'")
      .bind(keyHash),
  ]);
  return left?.results[0]?.calls_left;
}

/**
 * Why a key may not spend at all (its card payment is disputed), or undefined. A dispute freezes
 * the credits (403, not 402: paying by x402 instead is possible, but this key is not usable).
 */
export function keyRefusal(row: Pick<KeyRow, "dispute_status">): string | undefined {
  if (row.dispute_status === "open") {
    return "This key's credits are frozen: the card payment that bought them is disputed. They come back if the dispute is decided in our favour.";
  }
  if (row.dispute_status === "lost") {
    return "This key's credits were revoked: the card payment that bought them was charged back.";
  }
  return undefined;
}

/** Why a `Bearer mk_…` value that is no key at all pays nothing (the gate's 401). */
export const MALFORMED_KEY = "Malformed card-credit key";

/** Why a key cannot pay a call of `skillId`, as the gate answers it; undefined when it can. */
export type KeyRefused = { status: 401 | 403; detail: string };

/**
 * Whether the key `row` (null: no such key) may pay a call of `skillId`, credits left aside: the
 * one check the gate answers HTTP callers with and the MCP router decides a connection's key by
 * (mcp/card-key.ts), so the two cannot come to judge a key differently.
 */
export function keyCanPay(row: KeyRow | null, skillId: string): KeyRefused | undefined {
  if (!row) return { status: 401, detail: "Unknown card-credit key" };
  if (row.skill_id !== skillId) {
    return { status: 403, detail: `This key buys calls of ${row.skill_id}; it cannot pay for ${skillId}.` };
  }
  const refused = keyRefusal(row);
  return refused ? { status: 403, detail: refused } : undefined;
}

/** Stripe's minimum charge, in micro-dollars. */
export const MIN_CHARGE_MICROS = 500_000n;
const CENT = 10_000n;
export const MAX_CALLS = 100_000;

/**
 * The number of calls a checkout sells: at least `wanted`, enough to reach Stripe's minimum, and a
 * whole number of cents in total so every call costs exactly its listed price (0.003 → packs of 10).
 */
export function packSize(priceMicros: bigint, wanted = 1): number {
  let n = BigInt(Math.max(1, wanted));
  const minimum = (MIN_CHARGE_MICROS + priceMicros - 1n) / priceMicros;
  if (n < minimum) n = minimum;
  while ((n * priceMicros) % CENT !== 0n) n++;
  return Number(n);
}

/**
 * A pack's calls (packSize) and what it costs in cents, exact (a whole number by packSize's rule):
 * the one price the checkout charges and the pages' buy labels show.
 */
export function packPrice(priceMicros: bigint, wanted = 1): { calls: number; amountCents: number } {
  const calls = packSize(priceMicros, wanted);
  return { calls, amountCents: Number((BigInt(calls) * priceMicros) / CENT) };
}
