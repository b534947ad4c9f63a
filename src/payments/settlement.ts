import { decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { authorizationKey, claimAuthorization, recordSettledPayment, releaseAuthorization } from "./ledger";

function paymentOf(c: Context<AppEnv>): PaymentPayload | undefined {
  const header = c.req.header("payment-signature");
  if (!header) return undefined;
  try {
    return decodePaymentSignatureHeader(header);
  } catch {
    return undefined;
  }
}

/**
 * Runs after the x402 middleware verified the payment and after the body validated: claims the
 * authorization in D1 before the handler runs, so a replayed or concurrent duplicate signature
 * never runs the handler twice. A call that ends in an error frees it again (it was not settled).
 */
export function guardAuthorization(resource: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const payment = paymentOf(c);
    const auth = payment && authorizationKey(payment);
    if (!auth) return next();
    const requestId = c.get("requestId");
    if (!(await claimAuthorization(c.env.DB, auth.key, requestId, resource))) {
      return c.json(
        {
          error: "This payment authorization was already used for another call. Sign a new one.",
          reason: "payment_authorization_reused",
        },
        402,
      );
    }
    await next();
    if (c.res.status >= 400) await releaseAuthorization(c.env.DB, auth.key, requestId);
  };
}

/**
 * Outside the x402 middleware: once it settled (PAYMENT-RESPONSE on a 2xx), the payment becomes a
 * ledger row. A settlement that failed frees the authorization; nothing is written for it.
 */
export function recordPayment(resource: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const payment = paymentOf(c);
    const auth = payment && authorizationKey(payment);
    const header = c.res.headers.get("payment-response");
    if (!payment || !auth || !header) return;
    const settlement = decodePaymentResponseHeader(header);
    const requestId = c.get("requestId");
    if (settlement.success && c.res.status < 300) {
      await recordSettledPayment(c.env.DB, {
        key: auth.key,
        requestId,
        resource,
        payment,
        settlement,
        payout: c.get("payout"),
      });
    } else {
      await releaseAuthorization(c.env.DB, auth.key, requestId);
    }
  };
}
