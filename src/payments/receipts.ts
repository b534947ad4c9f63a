import type { SettleResponse } from "@x402/core/types";
import type { Context, MiddlewareHandler } from "hono";
import { sha256Hex } from "../digest";
import type { AppEnv } from "../env";
import { ledgerResource } from "../http/mcp-request";
import { requestConfig } from "../http/request-config";
import { authorizationKey } from "./ledger";
import { receiptKey } from "./receipt-key";
import { decodePaymentResponseHeader, encodePaymentResponseHeader } from "./x402-headers";

/** The header every paid answer (x402 or card credit) carries its receipt in: a JWS compact string. */
export const RECEIPT_HEADER = "X-Payment-Receipt";

/**
 * What a receipt says (docs/receipts-and-retries.md). The first six fields are the offer-receipt
 * extension's receipt payload (§5.2); the rest bind the receipt to this exact answer and payment.
 */
export interface ReceiptClaims {
  version: 1;
  network: string;
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string;
  requestId: string;
  resource: string;
  paymentMethod: "x402" | "card_credit";
  amount?: string;
  asset?: string;
  payTo?: string;
  credits?: number;
  status: number;
  contentType: string;
  bodySha256: string;
}

/**
 * Outside the payment middlewares: a 2xx that was paid (settled x402, i.e. PAYMENT-RESPONSE or
 * X-PAYMENT-RESPONSE, or a spent card credit) gets a signed receipt over the exact body bytes it
 * delivers. A settled x402 answer also carries it where the extension puts it, in the settlement
 * response's `extensions["offer-receipt"].info.receipt`. Without a signing key nothing is added
 * (the deployment says so in /.well-known/did.json). `resource` is the route's; the receipt names
 * the ledger's (`mcp:<tool>` for a call MCP dispatched), as the payment and claim rows do.
 */
export function signReceipt(resource: string | ((c: Context<AppEnv>) => string)): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Read before next(), as recordPayment does: later middleware may replace c.req.raw.
    const raw = c.req.raw;
    await next();
    const res = c.res;
    if (res.status < 200 || res.status >= 300) return;
    const headerName = res.headers.has("payment-response")
      ? "payment-response"
      : res.headers.has("x-payment-response")
        ? "x-payment-response"
        : undefined;
    const card = c.get("cardCredit");
    if (!headerName && !card) return;
    const cfg = requestConfig(c);
    const key = receiptKey(c.env.RECEIPT_SIGNING_KEY, cfg.baseUrl);
    if ("error" in key) return;
    let settlement: SettleResponse | undefined;
    if (headerName) {
      try {
        settlement = decodePaymentResponseHeader(res.headers.get(headerName) as string);
      } catch {
        return; // not a settlement we can vouch for
      }
      if (!settlement.success) return;
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    c.res = new Response(bytes, res);
    try {
      const claims = receiptClaims(c, {
        resource: ledgerResource(raw, typeof resource === "string" ? resource : resource(c)),
        resourceUrl: `${cfg.baseUrl}${c.req.path}`,
        settlement,
        cardKeyHash: card?.keyHash,
        status: res.status,
        contentType: res.headers.get("content-type") ?? "",
        bodySha256: await sha256Hex(bytes),
      });
      const { createJWS, OFFER_RECEIPT } = await import("./paid-call-libs");
      const jws = await createJWS(claims, key.signer);
      c.res.headers.set(RECEIPT_HEADER, jws);
      if (headerName && settlement) {
        const receipt = { format: "jws", signature: jws };
        settlement.extensions = { ...settlement.extensions, [OFFER_RECEIPT]: { info: { receipt } } };
        c.res.headers.set(headerName, encodePaymentResponseHeader(settlement));
      }
    } catch (e) {
      // The call is paid: a receipt that cannot be made never turns its answer into a 500 (which
      // would also free its idempotency key and invite a second payment). It goes out unsigned.
      console.error(
        JSON.stringify({ level: "error", request_id: c.get("requestId"), error: `receipt signing: ${e}` }),
      );
    }
  };
}

function receiptClaims(
  c: Context<AppEnv>,
  a: {
    resource: string;
    resourceUrl: string;
    settlement?: SettleResponse;
    cardKeyHash?: string;
    status: number;
    contentType: string;
    bodySha256: string;
  },
): ReceiptClaims {
  const base = {
    version: 1 as const,
    resourceUrl: a.resourceUrl,
    issuedAt: Math.floor(Date.now() / 1000),
    requestId: c.get("requestId"),
    resource: a.resource,
    status: a.status,
    contentType: a.contentType,
    bodySha256: a.bodySha256,
  };
  if (!a.settlement) {
    // Card credits move no money on a chain: no network transaction; the payer is the key's hash
    // (the buyer can recompute it from the key; it reveals nothing about the key).
    return {
      ...base,
      network: "card_credit",
      payer: `mk_sha256:${a.cardKeyHash}`,
      paymentMethod: "card_credit",
      credits: 1,
    };
  }
  // What the route asked for, as the gate matched it and the facilitator verified the payment
  // against (as the ledger row records it), never the payload's own `accepted`: the payer writes
  // that, and its `extra` may legally hold more than the route's.
  // Network, amount and payer are the requirements' and the authorization's signer's, as the
  // ledger row's are: the facilitator's answer only says that it settled, and in which transaction
  // (a /settle naming another payer or amount is not ours to sign for).
  const payment = c.get("x402Payment");
  const requirements = payment?.requirements;
  const s = a.settlement;
  const payer = requirements ? authorizationKey(payment.payload, requirements)?.payer : undefined;
  return {
    ...base,
    network: requirements?.network ?? s.network,
    payer: payer ?? "",
    ...(s.transaction ? { transaction: s.transaction } : {}),
    paymentMethod: "x402",
    ...(requirements
      ? { amount: requirements.amount, asset: requirements.asset, payTo: requirements.payTo }
      : {}),
  };
}
