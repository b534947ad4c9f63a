import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import type { AppEnv } from "../env";
import { logWriteFailure, retryAfterAnswer } from "../http/after-response";
import { detail } from "../http/errors";
import { bodyText, parseJsonText } from "../http/json-text";
import { requestConfig } from "../http/request-config";
import { validationResponse } from "../http/validation";
import { microsToUsd } from "../money";
import { REFINERY_ID } from "../partners/data";
import { isSoldPerCall, servicePrices } from "../partners/pricing";
import { type refineryBody, refineryPartner } from "../partners/refinery-skill";
import { tryTargetOf } from "../partners/request";
import { callPartner } from "../partners/try-proxy";
import {
  CallerNotCharged,
  type TryTarget,
  type Unrecorded,
  UpstreamFailure,
  type UpstreamResult,
  upstreamPath,
} from "../partners/upstream";
import { authorizationKey } from "./ledger";
import {
  type Refund,
  type RefundOutcome,
  recorded,
  recordedUpstreamMicros,
  refundCaller,
  releaseUnrecordedDoubt,
  UNRECORDED_DOUBT,
} from "./refunds";
import { settlementDisagreement, settlementOutcome } from "./settlement";
import { x402Gate } from "./x402-lazy";

/**
 * A partner try call as sold: x402 only for services sold per call, the caller settled before an
 * x402-priced partner is paid, refunded what we kept when the partner then fails, and the answer
 * as the envelope of spec 2.6 with the charge (or refund) in it.
 */

/** Paid partner services go through x402 at the listing price; free and external ones do not. */
export function partnerGate(isPaid: (c: Context<AppEnv>) => boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!isPaid(c)) return next();
    // Card credits buy a skill's own calls only (checkout sells no key for these routes): with
    // x402 off, nothing can pay here, and the buyer is told so rather than sent to buy credits.
    if (!requestConfig(c).x402Enabled)
      return detail(
        c,
        402,
        "Payment required: partner services and refinery recipes are sold by x402 only, and x402 payments are off on this deployment; card credits cannot pay for them.",
      );
    return x402Gate(c, next);
  };
}

function envelope(
  t: TryTarget,
  result: Pick<UpstreamResult, "status" | "body" | "paidUpstream">,
  charged: boolean,
) {
  const prices = servicePrices(t.service, t.pc.multiplierMilli);
  return {
    partner_id: t.partner.id,
    service_id: t.service.id,
    method: t.service.method,
    upstream_path: t.path,
    upstream_status: result.status,
    charged,
    price_usd: prices.price_usd,
    partner_price_usd: t.service.partner_price_usd,
    paid_upstream: Boolean(result.paidUpstream),
    body: result.body,
  };
}

function failure(
  c: Context<AppEnv>,
  t: TryTarget,
  status: 502 | 504,
  message: string,
  upstreamStatus: number | null,
  refund?: RefundOutcome,
) {
  return detail(c, status, message, {
    partner_id: t.partner.id,
    service_id: t.service.id,
    upstream_status: upstreamStatus,
    ...chargedFields(refund),
  });
}

const chargedFields = (refund: RefundOutcome | undefined) =>
  refund
    ? {
        charged: true,
        refund: {
          status: refund.status,
          amount_usd: microsToUsd(refund.amount),
          transaction: refund.transaction,
        },
      }
    : { charged: false };

/**
 * The refund of a caller settled before we paid the partner, when the partner then failed: the
 * caller gets back what we kept (payments/refunds.ts). Undefined when the caller was not charged
 * (or its settlement is unconfirmed: reconciliation refunds it if it lands).
 *
 * What is paid back, and to whom, is what the caller signed for: the route's price, to the
 * authorization's `from`. The facilitator's answer only says that it settled; a payer, amount or
 * network it reports otherwise makes that answer suspect, so the refund is recorded, held for the
 * maintainer to check on chain, and not sent (nobody can make us pay out more than we collected,
 * or to someone who did not pay).
 */
async function refundOwed(
  c: Context<AppEnv>,
  reason: string,
  handedOverMicros: bigint | undefined,
  inDoubt?: string,
): Promise<Refund | undefined> {
  const payment = c.get("x402Payment");
  const settled = payment?.settlement && (await payment.settlement).result;
  if (!payment || !settled || settlementOutcome(settled) !== "settled") return undefined;
  // Logged once, with the ledger row (settlement.ts recordPayment).
  const disagreement = settlementDisagreement(settled, payment.payload, payment.requirements);
  return {
    requestId: c.get("requestId"),
    network: payment.requirements.network,
    asset: payment.requirements.asset,
    payer: authorizationKey(payment.payload, payment.requirements)?.payer ?? "",
    paidMicros: BigInt(payment.requirements.amount),
    withheldMicros: handedOverMicros ?? 0n,
    reason,
    ...(inDoubt ? { inDoubt } : {}),
    ...(disagreement
      ? { hold: `the facilitator's settlement disagrees with the payment (${disagreement}): check the chain` }
      : {}),
  };
}

/**
 * Records and sends a charged caller's refund (refundOwed), if there is one; `after` runs after
 * each recording, the retried one's too (refundWithRecord's release of a listing it may rewrite).
 */
async function refundNow(
  c: Context<AppEnv>,
  refund: Refund | undefined,
  after?: () => Promise<unknown>,
): Promise<RefundOutcome | undefined> {
  if (!refund) return undefined;
  try {
    return await refundCaller(c.env, refund);
  } catch (e) {
    // The caller has paid: the answer says the refund is owed, and recording (then sending) it is
    // retried after the answer. Its nonce is the request's, so a retry never refunds twice.
    logWriteFailure(refund.requestId, "refund", e, 1);
    await retryAfterAnswer(c, "refund", async () => {
      await refundCaller(c.env, refund);
      await after?.();
    });
    return { status: "owed", amount: recorded(refund).amount, transaction: null };
  }
}

/**
 * Why a share kept back for an authorization whose record could not be written on the answer's
 * path is in doubt: its record is only retried after the answer, work a cut-off Worker never
 * finishes, and without it nothing would return or list the share. So the refund that keeps it is
 * recorded with its held listing (refunds.ts refundCaller: both or neither) before the answer,
 * whatever the retry then does. A record the retry writes takes the listing back
 * (refunds.ts releaseUnrecordedDoubt), checked after the retry's write and again after each
 * recording of the refund (its own retry's too, which writes the listing again), so reconciliation returns the share itself as for any recorded authorization; a Worker cut off
 * before that leaves the listing, for a person.
 */
const unrecordedDoubt = (handedOver: bigint | undefined, write: Unrecorded | undefined) =>
  write && handedOver
    ? `one was handed over for ${microsToUsd(handedOver)} USDC and ${UNRECORDED_DOUBT} (retried after it)`
    : undefined;

/**
 * The record's retry, handed to waitUntil before the refund is sent (which may wait 45 s on the
 * facilitator: a client gone meanwhile cancels anything started after it), and the refund: a
 * listing made only because the record was missing is taken back once both are in D1.
 */
async function refundWithRecord(
  c: Context<AppEnv>,
  write: Unrecorded | undefined,
  refund: Refund | undefined,
) {
  if (!write) return refundNow(c, refund);
  const release = () => releaseUnrecordedDoubt(c.env.DB, c.get("requestId"));
  await retryAfterAnswer(c, "upstream payment", async () => {
    await write();
    await release();
  });
  const outcome = await refundNow(c, refund, release);
  await release().catch(() => undefined);
  return outcome;
}

/**
 * What the route answers for an error thrown after the caller may have been charged: the
 * partner's own failures as they are; anything else (a bug, storage) as a 502 once the caller's
 * payment was settled, so a charged caller is refunded, never answered 500. Before any settlement
 * it stays an error of ours (nothing charged).
 *
 * Such an error comes from outside payPartner and callPartner's read of the paid answer, which
 * answer their own with what was handed over (partners/pay-partner.ts, try-proxy.ts), e.g. from
 * their own error handling: what is kept back is what the request's recorded authorization can
 * still move, returned by reconciliation once it expires unused. None recorded, or none readable,
 * and the wallet may still have signed one whose record was lost with this error: the listed
 * share is kept back, never more than the partner could collect, and listed for a person
 * (`inDoubt`, refunds.ts inDoubtReturn) rather than kept quietly.
 */
async function asUpstreamFailure(
  c: Context<AppEnv>,
  t: TryTarget,
  e: unknown,
): Promise<{ f: UpstreamFailure; inDoubt?: string }> {
  if (e instanceof UpstreamFailure) return { f: e };
  if (!c.get("x402Payment")?.settlement) throw e;
  const requestId = c.get("requestId");
  console.error(
    JSON.stringify({ level: "error", request_id: requestId, error: `partner call after settlement: ${e}` }),
  );
  const f = new UpstreamFailure(502, "The partner call failed after your payment settled");
  const recordedMicros = await recordedUpstreamMicros(c.env.DB, requestId).catch(() => null);
  if (typeof recordedMicros === "bigint") {
    f.handedOverMicros = recordedMicros;
    return { f };
  }
  f.handedOverMicros = servicePrices(t.service, t.pc.multiplierMilli).partnerMicros;
  const unread = recordedMicros === null ? "; the request's upstream payments could not be read" : "";
  return { f, inDoubt: `after an error of ours: ${e}${unread}` };
}

/**
 * Calls the partner and answers: 2xx upstream → 200 envelope (and the caller's payment settles);
 * anything else → 502 envelope, not charged (or, when the caller had to be settled before we paid
 * the partner, charged and refunded what we kept). The external x403 partner is only probed.
 */
async function tryPartner(c: Context<AppEnv>, t: TryTarget) {
  const prices = servicePrices(t.service, t.pc.multiplierMilli);
  const paid = isSoldPerCall(t.partner, t.service, t.pc);
  // Only a settlement that names its transaction pays the partner (settlementOutcome): an
  // unconfirmed one leaves the caller's payment to reconciliation, and costs us nothing meanwhile.
  const collect = async () => {
    const payment = c.get("x402Payment");
    return payment ? settlementOutcome(await payment.settle()) === "settled" : false;
  };
  let result: UpstreamResult;
  try {
    result = await callPartner(c.env, { ...t, ...(paid ? { collect } : {}) }, c.get("requestId"));
  } catch (e) {
    // The answer is replaced by the settlement's own failure (payments/x402-http.ts).
    if (e instanceof CallerNotCharged)
      return detail(c, 402, "Your payment did not settle", { charged: false });
    const { f, inDoubt } = await asUpstreamFailure(c, t, e);
    const doubt = inDoubt ?? unrecordedDoubt(f.handedOverMicros, f.unrecorded);
    const outcome = await refundWithRecord(
      c,
      f.unrecorded,
      await refundOwed(c, f.message, f.handedOverMicros, doubt),
    );
    return failure(c, t, f.status, f.message, f.upstreamStatus, outcome);
  }
  if (t.partner.listing_status === "external_x403") {
    // Probing the grant challenge only: we hold no grants, so anything but the 403 is not ours to relay.
    if (result.status === 403) return c.json(envelope(t, result, false));
    return failure(
      c,
      t,
      502,
      "The external partner did not answer with its 403 grant challenge",
      result.status,
    );
  }
  if (result.status < 200 || result.status >= 300) {
    const handedOver = result.paidUpstream?.amountMicros ?? result.handedOverMicros;
    const outcome = await refundWithRecord(
      c,
      result.unrecorded,
      await refundOwed(
        c,
        `the partner answered ${result.status}`,
        handedOver,
        unrecordedDoubt(handedOver, result.unrecorded),
      ),
    );
    return c.json({ ...envelope(t, result, false), ...chargedFields(outcome) }, 502);
  }
  // Served: the share is the partner's whatever its record does, so a write that fails is only retried.
  if (result.unrecorded) await retryAfterAnswer(c, "upstream payment", result.unrecorded);
  if (paid) {
    // A partner we paid ourselves got what we signed (at most its listed price): that is its
    // share, and the rest of the price our fee. Otherwise it is owed its listed price.
    const shareMicros = result.paidUpstream?.amountMicros ?? prices.partnerMicros;
    c.set("payout", {
      partnerId: t.partner.id,
      serviceId: t.service.id,
      shareMicros,
      feeMicros: prices.priceMicros - shareMicros,
      paidUpstream: Boolean(result.paidUpstream),
    });
  }
  return c.json(envelope(t, result, paid));
}

/**
 * A try call's optional POST body: a JSON object, or nothing; anything else is a 422. A refinery
 * recipe's `recipe`, when given, is the recipe in the path (spec 2.8): the call is priced by the
 * path, so another recipe would be sold at this one's price. Answered here, before the partner is
 * called, so the caller is never settled for it.
 */
async function objectBody(c: Context<AppEnv>, t: Pick<TryTarget, "partner" | "service">) {
  if (c.req.method !== "POST") return { body: undefined };
  // Strict UTF-8, as every JSON body: bytes that are no UTF-8 are the 422 a syntax error is, not
  // U+FFFD sent on to the partner in their place.
  const read = await bodyText(c);
  if (!read.ok) return validationResponse(c, [read.item]);
  const text = read.text;
  // No body, or JSON null (FastAPI reads both as none): the call takes no body. Anything else is
  // parsed, whitespace alone included (no value: json_invalid), as every JSON body is.
  if (text === "" && !read.bom) return { body: undefined };
  const parsed = parseJsonText(text);
  if (!parsed.ok) return validationResponse(c, parsed.items ?? [parsed.item]);
  const value = parsed.value;
  if (value === null) return { body: undefined };
  if (typeof value !== "object" || Array.isArray(value)) {
    return validationResponse(c, [
      { loc: ["body"], msg: "Input should be a valid dictionary", type: "dict_type", input: value },
    ]);
  }
  const recipe = (value as Record<string, unknown>).recipe;
  if (t.partner.id === REFINERY_ID && recipe !== undefined && recipe !== t.service.id) {
    const expected = `'${t.service.id}'`;
    return validationResponse(c, [
      {
        loc: ["body", "recipe"],
        msg: `Input should be ${expected}`,
        type: "literal_error",
        input: recipe,
        ctx: { expected },
      },
    ]);
  }
  return { body: value };
}

/** GET|POST /api/partners/:partner_id/try/:service_id, after the payment steps. */
export async function answerTry(c: Context<AppEnv>) {
  const found = tryTargetOf(c);
  const target = found && upstreamPath(found.service, c.req.query());
  if (!found || !target || "errors" in target) return detail(c, 404, "Unknown partner or service");
  const read = await objectBody(c, found);
  if (read instanceof Response) return read;
  return tryPartner(c, { ...found, pc: c.var.partnerConfig, path: target.path, body: read.body });
}

/** POST /api/skills/refinery-recipes: the recipe's partner service, answered in the skill's shape. */
export async function answerRefinery(
  c: Context<AppEnv, string, { out: { json: z.infer<typeof refineryBody> } }>,
) {
  const body = c.req.valid("json");
  const partner = refineryPartner();
  const service = partner.services.find((s) => s.id === body.recipe);
  if (!service) return detail(c, 404, "Unknown recipe");
  const res = await tryPartner(c, { partner, service, pc: c.var.partnerConfig, path: service.path, body });
  if (res.status !== 200) return res;
  const env = (await res.json()) as ReturnType<typeof envelope>;
  return c.json({
    skill: "refinery_recipes",
    recipe: body.recipe,
    partner_id: partner.id,
    price_usd: env.price_usd,
    result: env.body,
  });
}
