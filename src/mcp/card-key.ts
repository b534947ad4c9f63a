import { bearerKey, findKey, hashKey, type KeyRow, keyRefusal } from "../payments/credits";
import type { McpTool } from "./tools";

const CARD_KEY = /^Bearer\s+mk_/i;

/**
 * Whether the connection's card key goes with a tool call: `forward`, or not, with why (`note`,
 * shown beside the x402 offer of an unpaid call).
 */
export type CardKeyUse = { forward: true } | { forward: false; note?: string };

/**
 * An MCP client sets its headers once per connection, not per call as an HTTP client can: a key
 * that cannot pay a tool must not stand in the way of paying it with x402. Sent on, such a key
 * got the gate's 401/403 without an offer, and a valid x402 payment beside it was refused unread
 * (a slugify key's connection could buy nothing else). So the key goes with the call only when it
 * is a known, usable key of the tool's own skill; then the gate spends it as for an HTTP caller
 * (an exhausted key there gets the offer with the gate's own note, and a payment sent beside a key
 * that pays is not used: one credit, no USDC). Otherwise the call is paid by its x402 payment, or
 * is unpaid and gets the offer, with this note saying why the key did not pay.
 */
export async function cardKeyUse(
  db: D1Database,
  authorization: string | undefined,
  t: McpTool,
): Promise<CardKeyUse> {
  if (!authorization || !CARD_KEY.test(authorization)) return { forward: false };
  if (!t.creditSkill) {
    return { forward: false, note: "Card credits pay skill tools only: pay this call with x402." };
  }
  const key = bearerKey(authorization);
  if (!key) return notUsed("The card-credit key on this connection is malformed");
  let row: KeyRow | null;
  try {
    row = await findKey(db, await hashKey(key));
  } catch {
    // Unread, the key goes on as before this check: the gate reads it again and answers a database
    // that fails as for any HTTP caller (a tool error), not a JSON-RPC internal error here.
    return { forward: true };
  }
  if (!row) return notUsed("The card-credit key on this connection is unknown");
  if (row.skill_id !== t.creditSkill) {
    return notUsed(`The card-credit key on this connection buys calls of ${row.skill_id} only`);
  }
  const refused = keyRefusal(row);
  return refused ? notUsed(refused.replace(/\.$/, "")) : { forward: true };
}

const notUsed = (why: string): CardKeyUse => ({
  forward: false,
  note: `${why}: pay this call with x402 (the offer is here).`,
});
