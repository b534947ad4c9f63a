import { type Context, Hono, type MiddlewareHandler } from "hono";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { detail, partnersMisconfigured } from "../http/errors";
import { parseJsonText, validationResponse } from "../http/validation";
import { PARTNERS } from "../partners/data";
import {
  flatServices,
  type PartnerConfig,
  partnerById,
  partnerConfig,
  partnerEntry,
} from "../partners/listing";
import { servicePrices } from "../partners/pricing";
import { refineryPartner } from "../partners/refinery-skill";
import {
  CallerNotCharged,
  callPartner,
  type TryTarget,
  UpstreamFailure,
  type UpstreamResult,
  upstreamPath,
} from "../partners/try-proxy";
import { idempotent } from "../payments/idempotency";
import { partnerQuota, quota } from "../payments/quotas";
import { signReceipt } from "../payments/receipts";
import { refundCaller } from "../payments/refunds";
import { guardAuthorization, recordPayment } from "../payments/settlement";
import { explain402, x402Gate } from "../payments/x402-gate";
import { recordCall } from "../stats/record";
import { partnerOps } from "./partner-operations";

export const partnerRoutes = new Hono<AppEnv>();

function configOr503(c: Context<AppEnv>): PartnerConfig | Response {
  const pc = partnerConfig(c.env);
  return "error" in pc ? partnersMisconfigured(c, pc.error) : pc;
}

partnerRoutes.get(partnerOps.list.route, (c) => {
  const pc = configOr503(c);
  if (pc instanceof Response) return pc;
  const cfg = publicConfig(c.env, c.req.url);
  return c.json({
    partners: PARTNERS.map((p) => partnerEntry(p, pc, cfg)),
    services: flatServices(pc),
    listing_status: "paid",
  });
});

partnerRoutes.get(partnerOps.one.route, (c) => {
  const pc = configOr503(c);
  if (pc instanceof Response) return pc;
  const partner = partnerById(c.req.param("partner_id"));
  if (!partner) return detail(c, 404, `Unknown partner "${c.req.param("partner_id")}"; see /api/partners.`);
  return c.json(partnerEntry(partner, pc, publicConfig(c.env, c.req.url)));
});

/** Reads the body once as text, so every later reader (x402's dynamic price, validation) shares it. */
const cacheBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "POST") await c.req.text();
  await next();
};

/** Paid partner services go through x402 at the listing price; free and external ones do not. */
function partnerGate(isPaid: (c: Context<AppEnv>) => boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!isPaid(c)) return next();
    if (!publicConfig(c.env, c.req.url).x402Enabled)
      return detail(c, 402, "Payment required: x402 payments are disabled.");
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
  refund?: Refund,
) {
  return detail(c, status, message, {
    partner_id: t.partner.id,
    service_id: t.service.id,
    upstream_status: upstreamStatus,
    ...chargedFields(refund),
  });
}

type Refund = Awaited<ReturnType<typeof refundCaller>>;
const chargedFields = (refund: Refund | undefined) =>
  refund
    ? {
        charged: true,
        refund: {
          status: refund.status,
          amount_usd: Number(refund.amount) / 1e6,
          transaction: refund.transaction,
        },
      }
    : { charged: false };

/**
 * The caller was settled before we paid the partner, and the partner then failed: the caller gets
 * back what we kept (payments/refunds.ts). Undefined when the caller was not charged.
 */
async function refundIfCharged(c: Context<AppEnv>, reason: string, handedOverMicros: bigint | undefined) {
  const payment = c.get("x402Payment");
  const settled = payment?.settlement && (await payment.settlement).result;
  if (!payment || !settled?.success) return undefined;
  return refundCaller(c.env, {
    requestId: c.get("requestId"),
    payment,
    payer: settled.payer ?? "",
    paidMicros: BigInt(settled.amount ?? payment.requirements.amount),
    withheldMicros: handedOverMicros ?? 0n,
    reason,
  });
}

/**
 * Calls the partner and answers: 2xx upstream → 200 envelope (and the caller's payment settles);
 * anything else → 502 envelope, not charged (or, when the caller had to be settled before we paid
 * the partner, charged and refunded what we kept). The external x403 partner is only probed.
 */
async function tryPartner(c: Context<AppEnv>, t: TryTarget) {
  const prices = servicePrices(t.service, t.pc.multiplierMilli);
  const paid = t.partner.listing_status === "paid" && prices.priceMicros > 0n;
  const collect = async () => {
    const payment = c.get("x402Payment");
    return payment ? (await payment.settle()).success : false;
  };
  let result: UpstreamResult;
  try {
    result = await callPartner(c.env, { ...t, ...(paid ? { collect } : {}) }, c.get("requestId"));
  } catch (e) {
    // The answer is replaced by the settlement's own failure (payments/x402-http.ts).
    if (e instanceof CallerNotCharged)
      return detail(c, 402, "Your payment did not settle", { charged: false });
    if (!(e instanceof UpstreamFailure)) throw e;
    const refund = await refundIfCharged(c, e.message, e.handedOverMicros);
    return failure(c, t, e.status, e.message, e.upstreamStatus, refund);
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
    const refund = await refundIfCharged(
      c,
      `the partner answered ${result.status}`,
      result.paidUpstream?.amountMicros ?? result.handedOverMicros,
    );
    return c.json({ ...envelope(t, result, false), ...chargedFields(refund) }, 502);
  }
  if (paid) {
    c.set("payout", {
      partnerId: t.partner.id,
      serviceId: t.service.id,
      shareMicros: prices.partnerMicros,
      feeMicros: prices.feeMicros,
      paidUpstream: Boolean(result.paidUpstream),
    });
  }
  return c.json(envelope(t, result, paid));
}

function lookup(c: Context<AppEnv>) {
  const partner = partnerById(c.req.param("partner_id") ?? "");
  const service = partner?.services.find((s) => s.id === c.req.param("service_id"));
  return partner && service ? { partner, service } : undefined;
}

const tryResource = (c: Context<AppEnv>) =>
  `partner:${c.req.param("partner_id")}/${c.req.param("service_id")}`;

/** Runs a middleware built per request from the partner and service in the path. */
const per =
  (make: (c: Context<AppEnv>) => MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> =>
  (c, next) =>
    make(c)(c, next);

/**
 * Hono answers HEAD with the GET route, but x402 prices only GET and POST: a HEAD would run the
 * handler unpaid (and could pay the partner from the operating wallet). It is refused outright.
 */
const refuseHead: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method !== "HEAD") return next();
  return detail(c, 405, "Method Not Allowed", {}, { Allow: "GET, POST" });
};

const TRY_PATH = partnerOps.tryGet.route;
for (const method of ["GET", "POST"] as const) {
  partnerRoutes.on(
    method,
    TRY_PATH,
    // Only known targets are measured: a made-up path must not add a row per invented name.
    per((c) => (lookup(c) ? recordCall(tryResource(c), () => 0) : (_c, next) => next())),
    refuseHead,
    async (c, next) => {
      // Unknown targets and unsafe path parameters are refused before any payment is asked for.
      if (!lookup(c)) return detail(c, 404, "Unknown partner or service; see /api/partners.");
      const found = lookup(c);
      const res = found && upstreamPath(found.service, c.req.query());
      if (res && "errors" in res) return validationResponse(c, res.errors);
      await next();
    },
    partnerQuota,
    cacheBody,
    idempotent(),
    signReceipt(tryResource),
    explain402,
    per((c) => recordPayment(tryResource(c))),
    partnerGate((c) => {
      const found = lookup(c);
      const pc = partnerConfig(c.env);
      if (!found || "error" in pc) return false;
      return (
        found.partner.listing_status === "paid" &&
        servicePrices(found.service, pc.multiplierMilli).priceMicros > 0n
      );
    }),
    per((c) => guardAuthorization(tryResource(c))),
    async (c) => {
      const pc = configOr503(c);
      if (pc instanceof Response) return pc;
      const found = lookup(c);
      const target = found && upstreamPath(found.service, c.req.query());
      if (!found || !target || "errors" in target) return detail(c, 404, "Unknown partner or service");
      let body: unknown;
      if (c.req.method === "POST") {
        const text = await c.req.text();
        if (text.trim()) {
          const parsed = parseJsonText(text);
          if (!parsed.ok) return validationResponse(c, [parsed.item]);
          if (parsed.value === null || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
            return validationResponse(c, [
              {
                loc: ["body"],
                msg: "Input should be a valid dictionary",
                type: "dict_type",
                input: parsed.value,
              },
            ]);
          }
          body = parsed.value;
        }
      }
      return tryPartner(c, { ...found, pc, path: target.path, body });
    },
  );
}

/** The data-refinery partner as a native skill; each recipe at its service's price. */
partnerRoutes.post(
  partnerOps.refinery.route,
  recordCall("refinery_recipes", () => 0),
  quota("refinery_recipes"),
  cacheBody,
  idempotent(),
  signReceipt("refinery_recipes"),
  explain402,
  recordPayment("refinery_recipes"),
  // Without a valid partner configuration the handler answers 503, before any payment is asked.
  partnerGate((c) => !("error" in partnerConfig(c.env))),
  partnerOps.refinery.validate,
  guardAuthorization("refinery_recipes"),
  async (c) => {
    const pc = configOr503(c);
    if (pc instanceof Response) return pc;
    const body = c.req.valid("json");
    const partner = refineryPartner();
    const service = partner.services.find((s) => s.id === body.recipe);
    if (!service) return detail(c, 404, "Unknown recipe");
    const res = await tryPartner(c, { partner, service, pc, path: service.path, body });
    if (res.status !== 200) return res;
    const env = (await res.json()) as ReturnType<typeof envelope>;
    return c.json({
      skill: "refinery_recipes",
      recipe: body.recipe,
      partner_id: partner.id,
      price_usd: env.price_usd,
      result: env.body,
    });
  },
);
