import { type Context, Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { bindingsPresent } from "../http/bindings";
import { serveJson } from "../http/conditional-get";
import { detail } from "../http/errors";
import { partnerById, partnerEntry, partnersListing } from "../partners/listing";
import { partnerConfigOf, partnerConfigured, tryTargetOf } from "../partners/request";
import { cacheBody, knownTryTarget, refuseHead, tryResource, trySoldPerCall } from "../partners/try-steps";
import { idempotent } from "../payments/idempotency";
import { answerRefinery, answerTry, partnerGate } from "../payments/partner-calls";
import { partnerQuota, payerQuota, quota } from "../payments/quotas";
import { signReceipt } from "../payments/receipts";
import { guardAuthorization, recordPayment } from "../payments/settlement";
import { explain402 } from "../payments/x402-explain";
import { recordCall } from "../stats/record";
import { partnerOps } from "./partner-operations";

export const partnerRoutes = new Hono<AppEnv>();

/*
 * The listing and each entry, built once per configuration (the partner configuration is read
 * from the same bindings as the scope's) with an ETag: http/conditional-get.ts. A refused
 * configuration is partnerConfigured's 503, before.
 */
partnerRoutes.get(partnerOps.list.route, partnerConfigured, (c) =>
  serveJson(c, partnerOps.list.route, (cfg) => partnersListing(c.var.partnerConfig, cfg)),
);

partnerRoutes.get(partnerOps.one.route, partnerConfigured, (c) => {
  const partner = partnerById(c.req.param("partner_id"));
  if (!partner) return detail(c, 404, `Unknown partner "${c.req.param("partner_id")}"; see /api/partners.`);
  return serveJson(c, `/api/partners/${partner.id}`, (cfg) =>
    partnerEntry(partner, c.var.partnerConfig, cfg),
  );
});

/** Runs a middleware built per request from the partner and service in the path. */
const per =
  (make: (c: Context<AppEnv>) => MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> =>
  (c, next) =>
    make(c)(c, next);

const TRY_PATH = partnerOps.tryGet.route;
/** Paths whose HEAD is refused (refuseHead), for the 405's Allow header (app.ts). */
export const HEAD_REFUSED_PATHS: ReadonlySet<string> = new Set([TRY_PATH]);
for (const method of ["GET", "POST"] as const) {
  partnerRoutes.on(
    method,
    TRY_PATH,
    bindingsPresent,
    // Only known targets are measured: a made-up path must not add a row per invented name.
    per((c) => (tryTargetOf(c) ? recordCall(tryResource(c), () => 0) : (_c, next) => next())),
    refuseHead,
    knownTryTarget,
    partnerQuota,
    cacheBody,
    idempotent({ cardKeys: false }),
    signReceipt(tryResource),
    explain402,
    per((c) => recordPayment(tryResource(c))),
    partnerGate(trySoldPerCall),
    per((c) => payerQuota(tryResource(c))),
    per((c) => guardAuthorization(tryResource(c))),
    partnerConfigured,
    answerTry,
  );
}

/** The data-refinery partner as a native skill; each recipe at its service's price. */
partnerRoutes.post(
  partnerOps.refinery.route,
  bindingsPresent,
  recordCall("refinery_recipes", () => 0),
  quota("refinery_recipes"),
  cacheBody,
  idempotent({ cardKeys: false }),
  signReceipt("refinery_recipes"),
  explain402,
  recordPayment("refinery_recipes"),
  // Without a valid partner configuration the route answers 503, before any payment is asked.
  partnerGate((c) => !("error" in partnerConfigOf(c))),
  payerQuota("refinery_recipes"),
  partnerOps.refinery.validate,
  guardAuthorization("refinery_recipes"),
  partnerConfigured,
  answerRefinery,
);
