import type { Context, MiddlewareHandler } from "hono";
import { partnersMisconfigured } from "../http/errors";
import { logOncePerValue } from "../http/log-once";
import { type PartnerConfig, type PricingConfig, partnerConfig, pricingConfig, type Refused } from "./config";
import type { Partner, PartnerService } from "./data";
import { partnerById } from "./listing";

/** What one request read of the partner configuration, each part parsed on first use. */
interface PartnerSetup {
  pricing?: PricingConfig | Refused;
  partners?: PartnerConfig | Refused;
  /** The partner and service a try route's path names; null when it names none. */
  target?: { partner: Partner; service: PartnerService } | null;
}

declare module "hono" {
  interface ContextVariableMap {
    partnerSetup: PartnerSetup | undefined;
    /** Set by `partnerConfigured("partners")`: the multiplier and base URLs, known good. */
    partnerConfig: PartnerConfig;
    /** Set by `partnerConfigured(...)`: the multiplier, known good. */
    pricingConfig: PricingConfig;
  }
}

function setupOf(c: Context): PartnerSetup {
  let setup = c.get("partnerSetup");
  if (!setup) {
    setup = {};
    c.set("partnerSetup", setup);
  }
  return setup;
}

/**
 * A refused partner configuration answers 503 on every partner route, and said nothing in the log:
 * one line per isolate and configuration (the error names the variable and why).
 */
function logged<T extends object>(c: Context, read: T | Refused): T | Refused {
  const { PARTNER_PRICE_MULTIPLIER: m, PARTNER_BASE_URLS: urls, PARTNER_WALLETS: wallets } = c.env;
  if ("error" in read)
    logOncePerValue("partner configuration", `${m}\n${urls}\n${wallets}`, {
      level: "error",
      msg: "partner configuration invalid",
      error: read.error,
    });
  return read;
}

/** The multiplier alone, parsed once per request (documents and prices need nothing else). */
export function pricingOf(c: Context): PricingConfig | Refused {
  const setup = setupOf(c);
  setup.pricing ??= logged(c, pricingConfig(c.env));
  return setup.pricing;
}

/**
 * The multiplier, or none when it is invalid: pages and discovery that list every skill stay up
 * with the partners left out (the partner routes keep their 503).
 */
export function pricingIfValid(c: Context): PricingConfig | undefined {
  const pricing = pricingOf(c);
  return "error" in pricing ? undefined : pricing;
}

/** The whole partner configuration, parsed once per request. */
export function partnerConfigOf(c: Context): PartnerConfig | Refused {
  const setup = setupOf(c);
  setup.partners ??= logged(c, partnerConfig(c.env));
  return setup.partners;
}

/** The partner and service of `/api/partners/:partner_id/try/:service_id`, looked up once per request. */
export function tryTargetOf(c: Context) {
  const setup = setupOf(c);
  if (setup.target === undefined) {
    const partner = partnerById(c.req.param("partner_id") ?? "");
    const service = partner?.services.find((s) => s.id === c.req.param("service_id"));
    setup.target = partner && service ? { partner, service } : null;
  }
  return setup.target ?? undefined;
}

/**
 * The one place a bad partner configuration becomes the documented 503. "pricing" needs only the
 * multiplier (documents that quote partner prices: a bad base URL must not take them down);
 * "partners" needs the base URLs too (the listing and the proxy). Later steps read `c.var`.
 */
export const partnerConfigured =
  (part: "pricing" | "partners"): MiddlewareHandler =>
  async (c, next) => {
    if (part === "pricing") {
      const pricing = pricingOf(c);
      if ("error" in pricing) return partnersMisconfigured(c, pricing.error);
      c.set("pricingConfig", pricing);
    } else {
      const pc = partnerConfigOf(c);
      if ("error" in pc) return partnersMisconfigured(c, pc.error);
      c.set("pricingConfig", pc);
      c.set("partnerConfig", pc);
    }
    await next();
  };
