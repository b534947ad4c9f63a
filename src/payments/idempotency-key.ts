import type { PaymentPayload } from "@x402/core/types";
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { validationResponse } from "../http/validation";
import { bearerKey, cardKeyAuthorization, hashKey } from "./credits";
import { decodePaymentSignatureHeader } from "./x402-headers";

export type Identified =
  | { key: string; principal: string; kind: "x402" | "card" }
  | { invalid: Response }
  | undefined;

/**
 * Which idempotency key a request carries, if any: the x402 payment-identifier extension
 * (`extensions["payment-identifier"].info.id` of the PAYMENT-SIGNATURE payload, scoped by the
 * payer) or, for a card-credit call, the `Idempotency-Key` header (scoped by the key's hash).
 */
export async function identify(c: Context<AppEnv>): Promise<Identified> {
  // The same reading of the card key as the payment gate's (Authorization: Bearer, or X-API-Key).
  const authorization = cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key"));
  const cardKey =
    authorization && /^Bearer\s+mk_/i.test(authorization) ? bearerKey(authorization) : undefined;
  if (cardKey) {
    const header = c.req.header("idempotency-key");
    if (header === undefined) return undefined;
    if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
      return {
        invalid: validationResponse(c, [
          {
            loc: ["header", "Idempotency-Key"],
            msg: "Idempotency-Key must be 1 to 255 visible ASCII characters",
            type: "value_error",
            input: header.slice(0, 256),
          },
        ]),
      };
    }
    const keyHash = await hashKey(cardKey);
    return { key: `card:${keyHash}:${header}`, principal: `card:${keyHash}`, kind: "card" };
  }
  const signature = c.req.header("payment-signature");
  if (!signature) return undefined;
  let payment: PaymentPayload;
  try {
    payment = decodePaymentSignatureHeader(signature);
  } catch {
    return undefined; // the payment middleware answers a malformed signature
  }
  const { isValidPaymentId, PAYMENT_IDENTIFIER } = await import("./paid-call-libs");
  // The id is checked with the extension's format rule only: its validatePaymentIdentifier also
  // compiles the echoed JSON Schema with ajv, which generates code (new Function) and so always
  // fails in workerd (no eval), rejecting every valid id.
  const id = (payment.extensions?.[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined)?.info?.id;
  if (id === undefined) return undefined; // the extension echoed without an id: not idempotent
  if (typeof id !== "string" || !isValidPaymentId(id)) {
    return {
      invalid: validationResponse(c, [
        {
          loc: ["header", "PAYMENT-SIGNATURE", "extensions", PAYMENT_IDENTIFIER, "info", "id"],
          msg: "Invalid payment identifier: use 16-128 characters of A-Z a-z 0-9 _ -",
          type: "value_error",
          input: typeof id === "string" ? id.slice(0, 256) : id,
        },
      ]),
    };
  }
  const from = await signedBy(payment);
  // Unsigned by its `from` (or not an EOA signature we can check here): no stored answer is
  // handed out for it; the call goes down the normal paid path, whose facilitator judges it.
  if (!from) return undefined;
  return { key: `x402:${id}`, principal: `x402:${from.toLowerCase()}`, kind: "x402" };
}

/**
 * The payer a fresh EIP-3009 authorization proves, by recovering its EIP-712 signature locally.
 * A replay hands out a paid answer without verifying the payment with the facilitator, so the
 * payer must be proven, not read from `from` (anyone can write another's address there).
 */
async function signedBy(payment: PaymentPayload): Promise<string | undefined> {
  const { authorization: auth, signature } = payment.payload as {
    authorization?: Record<string, string>;
    signature?: string;
  };
  const chainId = Number(/^eip155:(\d+)$/.exec(payment.accepted?.network ?? "")?.[1]);
  const extra = (payment.accepted?.extra ?? {}) as { name?: string; version?: string };
  if (!auth || typeof auth.from !== "string" || !signature || !chainId) return undefined;
  try {
    const { recoverTypedDataAddress, transferWithAuthorization } = await import("./paid-call-libs");
    const recovered = await recoverTypedDataAddress({
      ...transferWithAuthorization(auth, {
        name: extra.name,
        version: extra.version,
        chainId,
        verifyingContract: payment.accepted.asset as `0x${string}`,
      }),
      signature: signature as `0x${string}`,
    });
    return recovered.toLowerCase() === auth.from.toLowerCase() ? auth.from : undefined;
  } catch {
    return undefined;
  }
}
