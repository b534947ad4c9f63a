import { bearerKey, findKey, hashKey, type KeyRow, keyCanPay, MALFORMED_KEY } from "../payments/credits";
import type { McpTool } from "./tools";

const CARD_KEY = /^Bearer\s+mk_/i;

/**
 * Whether the connection's card key goes with a tool call: `forward`, or not, with why (`why`, a
 * sentence shown with an unpaid call's answer: beside the x402 offer, or in the refusal of a
 * deployment that sells no x402).
 */
export type CardKeyUse = { forward: true } | { forward: false; why?: string };

/**
 * An MCP client sets its headers once per connection, not per call as an HTTP client can: a key
 * that cannot pay a tool must not stand in the way of paying it with x402. Sent on, such a key
 * got the gate's 401/403 without an offer, and a valid x402 payment beside it was refused unread
 * (a slugify key's connection could buy nothing else). So the key goes with the call only when it
 * is a known, usable key of the tool's own skill (the chain's own check, keyCanPay); then the
 * skill chain spends it once the arguments are valid, as for an HTTP caller (cardCreditSpend: an
 * exhausted key there gets the offer with its note, and a payment sent beside a key that pays is
 * not used: one credit, no USDC). Otherwise the call is paid by its x402 payment, or is unpaid and
 * gets the offer, with `why` the key did not pay.
 *
 * The key is read here and again by cardCreditSpend: a key disputed between the two reads goes on,
 * and is answered as an HTTP caller's would be, 403 without an offer (nothing is spent or
 * charged); the next call reads it frozen and gets the offer.
 */
export async function cardKeyUse(
  db: D1Database,
  authorization: string | undefined,
  t: McpTool,
  freeBeta: boolean | undefined,
): Promise<CardKeyUse> {
  if (!authorization || !CARD_KEY.test(authorization)) return { forward: false };
  if (!t.creditSkill) return { forward: false, why: "Card credits pay skill tools only." };
  // Free beta: the gate lets skill calls through unpaid and never reads the key, so neither is it
  // read here (a D1 read per call for nothing). It goes on as an HTTP caller's would.
  if (freeBeta) return { forward: true };
  const key = bearerKey(authorization);
  if (!key) return notUsed(MALFORMED_KEY);
  let row: KeyRow | null;
  try {
    row = await findKey(db, await hashKey(key));
  } catch {
    // Unread, the key goes on as before this check: the gate reads it again and answers a database
    // that fails as for any HTTP caller (a tool error), not a JSON-RPC internal error here.
    return { forward: true };
  }
  const refused = keyCanPay(row, t.creditSkill);
  return refused ? notUsed(refused.detail) : { forward: true };
}

const notUsed = (detail: string): CardKeyUse => ({
  forward: false,
  why: `The card-credit key on this connection was not used: ${/[.!?]$/.test(detail) ? detail : `${detail}.`}`,
});
