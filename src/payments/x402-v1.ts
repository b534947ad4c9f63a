import {
  decodePaymentSignatureHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import { isRecord } from "../is-record";

/**
 * x402 v1 clients (`x402-fetch`, `x402-axios`, still the most installed) next to v2 ones.
 *
 * Why a v1 payment can go down the v2 path unchanged: for the `exact` scheme on EVM, the v1
 * `X-PAYMENT` payload and the v2 `PAYMENT-SIGNATURE` payload carry the same EIP-3009
 * `transferWithAuthorization` (same EIP-712 domain: the asset contract, its name/version from the
 * requirements' `extra`, the chain id), only the envelope differs (v1 names the network "base"
 * and carries no `accepted`). So a v1 payload is lifted into a v2 one against the route's own
 * requirements and verified, claimed (one nonce table for both versions) and settled by the same
 * facilitator as v2. What v1 cannot carry: the resource. A v1 signature is bound to an amount,
 * a payee and a validity window, not to one route (README.md, "Paying for a call", step 3).
 */

const V1_NAME_BY_CHAIN = new Map<number, string>(
  Object.entries(EVM_NETWORK_CHAIN_ID_MAP).map(([name, id]) => [id as number, name]),
);

/** v1 network name of a CAIP-2 EVM network (`eip155:8453` → `base`), if v1 has one. */
export function v1NetworkName(network: string): string | undefined {
  const m = /^eip155:(\d+)$/.exec(network);
  return m ? V1_NAME_BY_CHAIN.get(Number(m[1])) : undefined;
}

/** The v1 form of one v2 requirement, as v1 clients parse it (PaymentRequirementsSchema of `x402`). */
export function v1Requirement(
  req: PaymentRequirements,
  resource: PaymentRequired["resource"],
  outputSchema?: Record<string, unknown>,
): PaymentRequirementsV1 | undefined {
  const network = v1NetworkName(req.network);
  if (!network) return undefined;
  return {
    scheme: req.scheme,
    network: network as PaymentRequirementsV1["network"],
    maxAmountRequired: req.amount,
    resource: resource?.url ?? "",
    description: resource?.description ?? "",
    mimeType: resource?.mimeType ?? "application/json",
    payTo: req.payTo,
    maxTimeoutSeconds: req.maxTimeoutSeconds,
    asset: req.asset,
    ...(outputSchema ? { outputSchema } : {}),
    ...(req.extra ? { extra: req.extra } : {}),
  } as PaymentRequirementsV1;
}

/**
 * The v1 `outputSchema` of a route, from its v2 bazaar declaration (the offer's
 * `extensions.bazaar.info`, as the server sent it, method included): one source for both versions.
 * Shaped as the v1 middleware (x402-express, x402-hono) built it, `{ input: { type: "http",
 * method, discoverable, queryParams?, bodyType?, bodyFields? }, output? }`, and read back by
 * @x402/extensions' `extractDiscoveryInfoV1` into the same info (bodyFields is the body's sample,
 * output the answer's). Undefined for an offer with no HTTP declaration.
 */
export function v1OutputSchema(
  extensions: PaymentRequired["extensions"],
): Record<string, unknown> | undefined {
  const info = (extensions?.bazaar as { info?: unknown } | undefined)?.info as
    | { input?: Record<string, unknown>; output?: { example?: unknown } }
    | undefined;
  const input = info?.input;
  if (input?.type !== "http" || typeof input.method !== "string") return undefined;
  // v1's HTTPRequestStructure: query values are strings, body fields an object.
  const queryParams = isRecord(input.queryParams)
    ? Object.fromEntries(Object.entries(input.queryParams).filter(([, v]) => typeof v === "string"))
    : undefined;
  const output = info?.output?.example;
  return {
    input: {
      type: "http",
      method: input.method,
      discoverable: true,
      ...(queryParams ? { queryParams } : {}),
      ...(typeof input.bodyType === "string" ? { bodyType: input.bodyType } : {}),
      ...(isRecord(input.body) ? { bodyFields: input.body } : {}),
    },
    ...(output !== undefined ? { output } : {}),
  };
}

export type Lifted =
  | { ok: true; header: string; payload: PaymentPayload }
  | { ok: false; reason: string; message: string };

/** Where a payer put its v1 and its v2 payment: HTTP's headers, or an MCP call's `_meta` keys. */
export interface PaymentFields {
  v1: string;
  v2: string;
}

export const HTTP_FIELDS: PaymentFields = { v1: "X-PAYMENT", v2: "PAYMENT-SIGNATURE" };

/**
 * Reads an `X-PAYMENT` header and lifts it into the v2 payload the rest of the gate handles.
 * `requirements` are the route's own; a payload for another scheme or network is refused here
 * with a machine reason in the same snake_case vocabulary as the facilitator's, naming `fields`
 * (an MCP payer's `_meta` keys for a call that came over MCP).
 */
export function liftV1Payment(
  header: string,
  requirements: PaymentRequirements,
  resource: PaymentRequired["resource"],
  fields: PaymentFields = HTTP_FIELDS,
): Lifted {
  let v1: PaymentPayloadV1;
  try {
    // The v1 header is the same base64 JSON encoding as v2's.
    v1 = decodePaymentSignatureHeader(header) as unknown as PaymentPayloadV1;
  } catch {
    return {
      ok: false,
      reason: "invalid_payment_header",
      message: `${fields.v1} is not base64-encoded JSON`,
    };
  }
  if (v1?.x402Version !== 1) {
    return {
      ok: false,
      reason: "invalid_x402_version",
      message: `${fields.v1} must carry an x402Version 1 payload; send v2 payloads in ${fields.v2}`,
    };
  }
  if (v1.scheme !== requirements.scheme) {
    return {
      ok: false,
      reason: "unsupported_scheme",
      message: `this route is paid with the "${requirements.scheme}" scheme`,
    };
  }
  const network = v1NetworkName(requirements.network);
  if (v1.network !== network) {
    return {
      ok: false,
      reason: "invalid_network",
      message: `this route is paid on "${network ?? requirements.network}", not "${String(v1.network)}"`,
    };
  }
  if (typeof v1.payload !== "object" || v1.payload === null) {
    return { ok: false, reason: "invalid_payload", message: `${fields.v1} carries no payload` };
  }
  const payload: PaymentPayload = {
    x402Version: 2,
    ...(resource ? { resource } : {}),
    accepted: requirements,
    payload: v1.payload as Record<string, unknown>,
  };
  return { ok: true, header: encodePaymentSignatureHeader(payload), payload };
}

/** `X-PAYMENT-RESPONSE` for a v1 client: the settle response with the v1 network name. */
export function v1PaymentResponse(settlement: SettleResponse): string {
  return encodePaymentResponseHeader(settlementInV1Terms(settlement));
}

/** A settle response in v1 terms (the network as v1 names it). */
export function settlementInV1Terms(settlement: SettleResponse): SettleResponse {
  return {
    ...settlement,
    network: (v1NetworkName(settlement.network) ?? settlement.network) as SettleResponse["network"],
  };
}
