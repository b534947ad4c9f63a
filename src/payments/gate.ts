import type { MiddlewareHandler } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { outlastingClient } from "../http/after-response";
import { detail } from "../http/errors";
import type { Skill } from "../skills/types";
import {
  bearerKey,
  cardKeyAuthorization,
  findKey,
  hashKey,
  keyCanPay,
  MALFORMED_KEY,
  refundCredit,
  spendCredit,
} from "./credits";
import { x402Gate } from "./x402-lazy";

/**
 * Who pays for a call: nobody in free beta; a card-credit key when one is sent
 * (`Authorization: Bearer mk_...`); otherwise x402.
 */
export function paymentGate(skill: Skill): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const cfg = publicConfig(c.env, c.req.url);
    if (cfg.freeBeta) return next();
    const authorization = cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key"));
    if (authorization !== undefined && /^Bearer\s+mk_/i.test(authorization)) {
      const key = bearerKey(authorization);
      if (!key) return detail(c, 401, MALFORMED_KEY, {}, { "WWW-Authenticate": "Bearer" });
      const keyHash = await hashKey(key);
      const spent = await spendCredit(c.env.DB, keyHash, skill);
      if (spent) {
        c.header("X-Credits-Remaining", String(spent.calls_left));
        c.set("cardCredit", { keyHash }); // receipts.ts signs a card_credit receipt for a 2xx
        // A call that did not succeed spends nothing. The call and the give-back are one piece of
        // work kept alive past the client: a client that disconnects (an agent timing out on a slow
        // skill) cancels the request's pending work, the call's own fetches included, and the
        // give-back after it never ran, so the credit was kept for a call that never succeeded.
        // Kept alive, it finishes within Cloudflare's 30 s after the disconnect; a call still
        // running then is cancelled there, and keeps its credit.
        await outlastingClient(
          c,
          (async () => {
            await next();
            if (c.res.status >= 400) {
              // What the key holds now: a refund or dispute meanwhile may have kept the credit (a
              // key whose dispute was lost matches no row there, and holds nothing).
              const left = await refundCredit(c.env.DB, keyHash);
              c.res.headers.set("X-Credits-Remaining", String(left ?? 0));
            }
          })(),
        );
        return;
      }
      const refused = keyCanPay(await findKey(c.env.DB, keyHash), skill.id);
      if (refused) {
        const challenge = refused.status === 401 ? { "WWW-Authenticate": "Bearer" } : undefined;
        return detail(c, refused.status, refused.detail, {}, challenge);
      }
      // Only the ways to pay this deployment has on (a checkout that is off answers 503).
      const empty = `This key has no ${skill.id} credits left.`;
      c.set(
        "creditNote",
        cfg.cardpayEnabled && cfg.x402Enabled
          ? `${empty} Buy more with POST /api/cardpay/checkout, or pay this call with x402.`
          : cfg.cardpayEnabled
            ? `${empty} Buy more with POST /api/cardpay/checkout.`
            : cfg.x402Enabled
              ? `${empty} Pay this call with x402 (card payments are off on this deployment).`
              : `${empty} This deployment takes no other payment now (card and x402 payments are off).`,
      );
    }
    if (!cfg.x402Enabled) {
      return detail(
        c,
        402,
        c.get("creditNote") ??
          (cfg.cardpayEnabled
            ? "Payment required: x402 payments are disabled; buy card credits."
            : "Payment required: this deployment takes no payment now (card and x402 payments are off)."),
      );
    }
    return x402Gate(c, next);
  };
}
