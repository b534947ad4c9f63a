import * as z from "zod";
import { nonFiniteItems } from "../http/json-text";
import { type ErrorItem, validate } from "../http/validation";
import { jsonByteLength } from "../skills/lib/output-size";
import type { Skill } from "../skills/types";
import { MAX_CALLS } from "./credits";

/**
 * Bytes of JSON a checkout's first-call payload may hold. It is kept in the session's D1 row until
 * the call runs, and D1 refuses a row over 2,000,000 bytes; the call's answer joins it there when
 * it is at most 512 KiB (idempotent-results' D1_BODY_MAX; a larger one goes to KV), so 1 MiB +
 * 512 KiB leaves ~400 KB for the rest of the row (test/payments/checkout-d1-row.test.ts). Checked
 * before Stripe is asked: a payload D1 refused made the create a 500 after the session existed.
 * Larger first calls are made with the key once it is paid.
 */
export const FIRST_CALL_MAX_BYTES = 1024 * 1024;

/** Body of POST /api/cardpay/checkout: which skill, how many calls, and an optional first call. */
export const checkoutRequest = z.object({
  skill_id: z.string().min(1).max(64).meta({ description: "Skill id, e.g. json_sort." }),
  payload: z
    .looseObject({})
    .optional()
    .meta({
      description: `Body of your first call; it runs once when the payment completes. Checked before payment against the skill's own request schema (422 on ["body","payload",...], as the skill's route answers). At most ${FIRST_CALL_MAX_BYTES} bytes (1 MiB) of JSON, else 422 payload_too_large; make larger calls with the key.`,
    }),
  quantity: z.int().min(1).max(MAX_CALLS).optional().meta({
    description:
      "Calls to buy; raised to the smallest pack that reaches the $0.50 card minimum, then to a whole number of cents in total, so each call costs exactly its price (at $0.003 a call, 171 → 180 calls for $0.54).",
  }),
});

/**
 * The 422 item for a payload over FIRST_CALL_MAX_BYTES (measured as the JSON the row stores,
 * stopping at the bound), or undefined. The input is not echoed: it is the oversized payload.
 */
export function payloadTooLarge(payload: unknown): ErrorItem | undefined {
  if (payload === undefined || jsonByteLength(payload, FIRST_CALL_MAX_BYTES) <= FIRST_CALL_MAX_BYTES) {
    return undefined;
  }
  return {
    loc: ["body", "payload"],
    msg: `The first call's payload may be at most ${FIRST_CALL_MAX_BYTES} bytes of JSON (1 MiB); buy without it, or with a smaller one, and make larger calls with the key`,
    type: "payload_too_large",
    input: null,
    ctx: { max_bytes: FIRST_CALL_MAX_BYTES },
  };
}

/**
 * The 422 items for a first-call payload the skill's own route would refuse, or undefined: the
 * skill's input schema and the route's FastAPI items (jsonBody's), located under body.payload.
 * Checked before Stripe is asked: it was applied only when the paid call ran, so the buyer paid
 * and then read a 422 on the success page. The schema only: the skill is not run (checks in its
 * code, e.g. text the encoding cannot hold, still answer on the success page, credit unspent).
 */
export function payloadInvalid(skill: Skill, payload: unknown): ErrorItem[] | undefined {
  if (payload === undefined) return undefined;
  // Judged as runFirstPayload will read it back from the row: the checkout body keeps integers
  // past 2^53 as raw JSON (for json_sort and json_flatten), another skill reads them as numbers.
  const body = skill.exactIntegers ? payload : (JSON.parse(JSON.stringify(payload)) as unknown);
  // Read back as a number, an integer past a double's range is Infinity: the route's finite_number.
  const nonFinite = nonFiniteItems(body).map((i) => ({ ...i, loc: ["body", "payload", ...i.loc.slice(1)] }));
  if (nonFinite.length > 0) return nonFinite;
  const result = validate(skill.input, body, ["body", "payload"]);
  return result.ok ? undefined : result.items;
}

/** An Idempotency-Key as clients send it (IETF draft): printable ASCII, at most 255 characters. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
export const idempotencyHeader = z
  .string()
  .regex(IDEMPOTENCY_KEY_PATTERN, "Idempotency-Key must be 1 to 255 printable ASCII characters");
