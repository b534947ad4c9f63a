import type { Context, MiddlewareHandler, Next } from "hono";
import type { PublicConfig } from "../config";
import type { AppEnv } from "../env";
import { afterResponse, logWriteFailure, outlastingClient, writeOrRetryAfter } from "../http/after-response";
import { detail } from "../http/errors";
import { requestConfig } from "../http/request-config";
import type { Skill } from "../skills/types";
import {
  bearerKey,
  cardKeyAuthorization,
  findKey,
  hashKey,
  keyCanPay,
  MALFORMED_KEY,
  markNotSpent,
  refundCredit,
  spendCredit,
  spentBy,
} from "./credits";
import { paymentsUnavailable } from "./settlement";
import { x402Gate } from "./x402-lazy";

/**
 * Who pays for a call: nobody in free beta; a card-credit key when one is sent
 * (`Authorization: Bearer mk_...`); otherwise x402. A well-formed key is only noted here: its
 * credit is taken by cardCreditSpend once the body is valid (a call refused for its body spends
 * nothing and writes nothing, as an x402 call with a bad body is not settled); a key that cannot
 * pay is answered there (401/403) or by x402BesideDryKey (x402 sent beside it, or the 402).
 */
export function paymentGate(): MiddlewareHandler<AppEnv> {
  // Not async where it only passes the call on: an async step costs the chain's every call two
  // more promise jobs (docs/PERFORMANCE.md, stop 36). So are the steps below.
  return (c, next) => (requestConfig(c).freeBeta ? next() : gate(c, next));
}

function gate(c: Context<AppEnv>, next: Next) {
  const authorization = cardKeyAuthorization(c.req.header("authorization"), c.req.header("x-api-key"));
  return authorization !== undefined && /^Bearer\s+mk_/i.test(authorization)
    ? noteCardKey(c, next, authorization)
    : payWithoutCredit(c, next);
}

async function noteCardKey(c: Context<AppEnv>, next: Next, authorization: string) {
  const key = bearerKey(authorization);
  if (!key) return detail(c, 401, MALFORMED_KEY, {}, { "WWW-Authenticate": "Bearer" });
  c.set("cardKeyHash", await hashKey(key));
  return next();
}

/**
 * Takes a credit of the card key the gate noted, for a call whose body is valid, and gives it back
 * if the call fails. A key that takes none is answered as before the body was read: unknown 401,
 * another skill's, frozen or revoked 403; an empty one goes on to x402BesideDryKey with why.
 */
export function cardCreditSpend(skill: Skill): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const keyHash = c.get("cardKeyHash");
    return keyHash === undefined ? next() : spendOrRefuse(c, next, keyHash, skill);
  };
}

async function spendOrRefuse(c: Context<AppEnv>, next: Next, keyHash: string, skill: Skill) {
  const spent = await spend(c, keyHash, skill);
  if (spent === "unavailable") return paymentsUnavailable(c, "card");
  if (!spent) {
    const refused = await keyRefused(c, keyHash, skill);
    if (refused) return refused;
    noCreditNote(c, skill);
    return next(); // x402BesideDryKey: x402 sent beside the key pays, or the 402 says why
  }
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
        // The handler's answer stands whatever D1 does with the give-back: one it refuses is
        // retried after the answer (once at most: refundCredit is keyed by the request).
        let left = spent.calls_left;
        await giveBack(c, keyHash, (after) => {
          left = after ?? 0;
        });
        c.res.headers.set("X-Credits-Remaining", String(left));
      }
    })(),
  );
}

/**
 * A call whose card key took no credit (cardCreditSpend noted why in creditNote): x402 sent beside
 * the key pays it, else its 402. Verified here, after the body, so the payer's limit is checked
 * after this step (onlyBesideCardKey(payerQuota) in routes/skills.ts), not at its usual place.
 */
export function x402BesideDryKey(): MiddlewareHandler<AppEnv> {
  return (c, next) =>
    c.get("cardKeyHash") === undefined || c.get("cardCredit") ? next() : payWithoutCredit(c, next);
}

/**
 * `step` for a call sent with a card key only: payerQuota's second place, for x402 verified by
 * x402BesideDryKey (a call paid by x402 alone was counted at the first, and is not counted twice).
 */
export function onlyBesideCardKey(step: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return (c, next) => (c.get("cardKeyHash") === undefined ? next() : step(c, next));
}

/**
 * The 401/403 of a key that cannot pay a call of `skill` (or the 503 when D1 cannot be read:
 * nothing was taken); undefined for a key that only has no credit left.
 */
async function keyRefused(c: Context<AppEnv>, keyHash: string, skill: Skill) {
  let row: Awaited<ReturnType<typeof findKey>>;
  try {
    row = await findKey(c.env.DB, keyHash);
  } catch {
    return paymentsUnavailable(c, "card"); // nothing taken; a 500 here said nothing of the credit
  }
  const refused = keyCanPay(row, skill.id);
  if (!refused) return undefined;
  const challenge = refused.status === 401 ? { "WWW-Authenticate": "Bearer" } : undefined;
  return detail(c, refused.status, refused.detail, {}, challenge);
}

/** Why the 402 of a key with no credit left: only the ways to pay this deployment has on. */
function noCreditNote(c: Context<AppEnv>, skill: Skill) {
  const cfg = requestConfig(c);
  const empty = `This key has no ${skill.id} credits left.`;
  // "Buy more" read as a top-up of this key; a checkout sells a new pack under a new key.
  const buy = `Buy a new pack with POST /api/cardpay/checkout {"skill_id":"${skill.id}"}: it comes with a new key (a key cannot be topped up)`;
  c.set(
    "creditNote",
    cfg.cardpayEnabled && cfg.x402Enabled
      ? `${empty} ${buy}, or pay this call with x402.`
      : cfg.cardpayEnabled
        ? `${empty} ${buy}.`
        : cfg.x402Enabled
          ? `${empty} Pay this call with x402 (card payments are off on this deployment).`
          : `${empty} This deployment takes no other payment now (card and x402 payments are off).`,
  );
}

/** A call no credit pays: x402's, or the 402 of a deployment that takes no x402. */
function payWithoutCredit(c: Context<AppEnv>, next: Next): ReturnType<MiddlewareHandler<AppEnv>> {
  const cfg = requestConfig(c);
  if (!cfg.x402Enabled) return refusedWithoutX402(c, cfg);
  return x402Gate(c, next);
}

async function refusedWithoutX402(c: Context<AppEnv>, cfg: PublicConfig) {
  return detail(
    c,
    402,
    c.get("creditNote") ??
      (cfg.cardpayEnabled
        ? "Payment required: x402 payments are disabled; buy card credits."
        : "Payment required: this deployment takes no payment now (card and x402 payments are off)."),
  );
}

/**
 * Takes a credit of `skill` from the key: what is left after it, null when the key had none to
 * take, or "unavailable" when D1 failed and no credit is kept (the documented 503
 * payments_unavailable; the same request may be sent again). D1 can commit the spend and then
 * fail to answer ("Network connection lost"): the spend is read back by the request id, and a
 * spend that did land carries on as paid. Read back as not spent, the request's marker is written
 * first (markNotSpent): a spend batch D1 commits later then takes nothing; a spend that committed
 * before the marker is read back and carries on as paid. When the first read does not answer,
 * whatever the spend may have taken is given back (nothing, if it took nothing; the give-back
 * writes the marker too); when only the marker is refused, once, after the answer.
 */
async function spend(c: Context<AppEnv>, keyHash: string, skill: Skill) {
  const requestId = c.get("requestId");
  const db = c.env.DB;
  try {
    return (await spendCredit(db, keyHash, skill, requestId)) ?? null;
  } catch (e) {
    logWriteFailure(requestId, "card credit spend", e, 1);
  }
  let spent: Awaited<ReturnType<typeof spentBy>>;
  try {
    spent = await spentBy(db, requestId);
  } catch {
    await giveBack(c, keyHash, () => undefined);
    return "unavailable" as const;
  }
  if (spent) return spent;
  try {
    await markNotSpent(db, keyHash, requestId).run();
    return (await spentBy(db, requestId)) ?? ("unavailable" as const);
  } catch (e) {
    // Read back as not spent, and the marker refused too. A spend D1 commits later would then
    // take its credit unopposed, so the give-back (which writes the marker too) is sent once,
    // after the answer; its failure is logged as attempt 1, never `final`: a full database
    // refuses every card_spends insert, the spend's own among them, and four refused give-backs
    // would raise a maintainer's final line for a credit never taken.
    logWriteFailure(requestId, "card credit not-spent marker", e, 1);
    await afterResponse(
      c,
      refundCredit(db, keyHash, requestId).catch((err: unknown) =>
        logWriteFailure(requestId, `card credit give-back (key_hash ${keyHash})`, err, 1),
      ),
    );
    return "unavailable" as const;
  }
}

/**
 * Gives back the credit this request spent, now or, if D1 refuses, retried after the answer; the
 * last failure's line (`final: true`) names the key's hash and the request for a maintainer
 * (docs/OPERATIONS.md, "Log lines"). `given` gets the key's calls left once it is done.
 */
function giveBack(c: Context<AppEnv>, keyHash: string, given: (left: number | undefined) => void) {
  return writeOrRetryAfter(c, `card credit give-back (key_hash ${keyHash})`, async () =>
    given(await refundCredit(c.env.DB, keyHash, c.get("requestId"))),
  );
}
