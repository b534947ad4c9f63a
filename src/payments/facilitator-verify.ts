import type { HTTPFacilitatorClient } from "@x402/core/server";
import {
  FacilitatorResponseError,
  type PaymentPayload,
  type PaymentRequirements,
  VerifyError,
  type VerifyResponse,
} from "@x402/core/types";
import * as z from "zod";
import { FACILITATOR_RETRY_AFTER_S } from "./settlement";

/** The bounds on a facilitator's own Retry-After passed on to the buyer. */
const MIN_RETRY_AFTER_S = 1;
const MAX_RETRY_AFTER_S = 60;

/**
 * A facilitator's 429 on /verify: no verdict on the payment (x402-gate.ts answers it as the 503
 * facilitator_unavailable), with the wait the facilitator asked for, bounded.
 */
export class FacilitatorRateLimited extends FacilitatorResponseError {
  constructor(
    message: string,
    readonly retryAfterS: number,
  ) {
    super(message);
    this.name = "FacilitatorRateLimited";
  }
}

/**
 * A Retry-After header's wait in whole seconds (delta-seconds or an HTTP date), within 1..60 s;
 * undefined if there is none or it cannot be read. Bounded: a facilitator's "come back in an
 * hour" would strand a buyer that could retry sooner, and "0" would invite a busy loop.
 */
export function boundedRetryAfter(header: string | null, now = Date.now()): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  // An HTTP date ends in GMT (RFC 9110 IMF-fixdate and its obsolete forms); Date.parse alone
  // would take "-5" for a year.
  const seconds = /^\d+$/.test(value)
    ? Number(value)
    : / GMT$/.test(value)
      ? Math.ceil((Date.parse(value) - now) / 1000)
      : Number.NaN;
  if (Number.isNaN(seconds)) return undefined;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(MIN_RETRY_AFTER_S, seconds));
}

// @x402/core's verifyResponseSchema (not exported): what a 2xx /verify answer must hold.
const optional = <T extends z.ZodType>(t: T) => t.nullish().transform((v) => v ?? undefined);
const verifyAnswer = z.object({
  isValid: z.boolean(),
  invalidReason: optional(z.string()),
  invalidMessage: optional(z.string()),
  payer: optional(z.string()),
  extensions: optional(z.record(z.string(), z.unknown())),
  extra: optional(z.record(z.string(), z.unknown())),
});

/** @x402/core's excerpt of a facilitator answer in its error messages. */
function excerpt(text: string, limit = 200) {
  const compact = text.trim().replace(/\s+/g, " ");
  if (!compact) return "<empty response>";
  return compact.length <= limit ? compact : `${compact.slice(0, limit - 3)}...`;
}

/**
 * POST /verify as @x402/core's HTTPFacilitatorClient.verify does (the same request, the same
 * errors and result), keeping what that client drops: an error answer's Retry-After, which it
 * gives no way to read (its fetch is its own). A 429 is thrown as FacilitatorRateLimited whatever
 * its body (a rate limit is no verdict on the payment, even in a verify answer's shape), with the
 * facilitator's own wait or ours. An EXTENSION-RESPONSES header, which the library only attaches
 * to the result and nothing here reads, is not.
 */
export async function verifyAtFacilitator(
  client: HTTPFacilitatorClient,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Promise<VerifyResponse> {
  const { headers: auth } = await client.createAuthHeaders("verify");
  const response = await fetch(`${client.url}/verify`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...auth },
    redirect: "follow",
    body: JSON.stringify(
      { x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements },
      (_key, value) => (typeof value === "bigint" ? value.toString() : value),
    ),
    signal: AbortSignal.timeout(client.timeoutMs),
  });
  const text = await response.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (response.status === 429) {
    const wait = boundedRetryAfter(response.headers.get("retry-after")) ?? FACILITATOR_RETRY_AFTER_S;
    throw new FacilitatorRateLimited(`Facilitator verify rate limited (429): ${excerpt(text)}`, wait);
  }
  if (!response.ok) {
    if (typeof data === "object" && data !== null && "isValid" in data) {
      throw new VerifyError(response.status, data as VerifyResponse);
    }
    throw new Error(
      `Facilitator verify failed (${response.status}): ${excerpt(data === undefined ? text : JSON.stringify(data))}`,
    );
  }
  if (data === undefined) {
    throw new FacilitatorResponseError(`Facilitator verify returned invalid JSON: ${excerpt(text)}`);
  }
  const parsed = verifyAnswer.safeParse(data);
  if (!parsed.success) {
    throw new FacilitatorResponseError(`Facilitator verify returned invalid data: ${excerpt(text)}`);
  }
  return parsed.data;
}
