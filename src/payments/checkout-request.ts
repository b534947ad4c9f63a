import * as z from "zod";
import { MAX_CALLS } from "./credits";

/** Body of POST /api/cardpay/checkout: which skill, how many calls, and an optional first call. */
export const checkoutRequest = z.object({
  skill_id: z.string().min(1).max(64).meta({ description: "Skill id, e.g. json_sort." }),
  payload: z
    .looseObject({})
    .optional()
    .meta({ description: "Body of your first call; it runs once when the payment completes." }),
  quantity: z
    .int()
    .min(1)
    .max(MAX_CALLS)
    .optional()
    .meta({ description: "Calls to buy; raised to the smallest pack that reaches the $0.50 card minimum." }),
});

// An Idempotency-Key as clients send it (IETF draft): printable ASCII, at most 255 characters.
export const idempotencyHeader = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key must be 1 to 255 printable ASCII characters");
