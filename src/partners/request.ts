import type { Context, MiddlewareHandler } from "hono";
import { partnersEnabled } from "../config";
import { detail, partnersMisconfigured } from "../http/errors";
import { logOncePerValue } from "../http/log-once";
import { type PartnerConfig, type PricingConfig, partnerConfig, type Refused } from "./config";
import type { Partner, PartnerService } from "./data";
import { partnerById } from "./listing";

/** What one request read of the partner configuration, each part parsed on first use. */
interface PartnerSetup {
  partners?: PartnerConfig | Refused;
  /** The partner and service a try route's path names; null when it names none. */
  target?: { partner: Partner; service: PartnerService } | null;
}

declare module "hono" {
  interface ContextVariableMap {
    partnerSetup: PartnerSetup | undefined;
    /** Set by `partnerConfigured`: the multiplier, base URLs and wallets, known good. */
    partnerConfig: PartnerConfig;
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
 * one line per isolate and configuration (the error names the variable and why). Partners turned
 * off on purpose are said at info: nothing to fix, no alert.
 */
function logged<T extends object>(c: Context, read: T | Refused): T | Refused {
  const { PARTNER_PRICE_MULTIPLIER: m, PARTNER_BASE_URLS: urls, PARTNER_WALLETS: wallets } = c.env;
  if ("error" in read)
    logOncePerValue(
      "partner configuration",
      `${c.env.PARTNERS_ENABLED}\n${m}\n${urls}\n${wallets}`,
      read.off
        ? { level: "info", msg: "partners turned off", error: read.error }
        : { level: "error", msg: "partner configuration invalid", error: read.error },
    );
  return read;
}

/** The partner routes' 503: the maintainer's choice in its own words, else what is misconfigured. */
const refusal = (c: Context, read: Refused) =>
  read.off ? detail(c, 503, read.error) : partnersMisconfigured(c, read.error);

/** PARTNERS_ENABLED = "false": what the partner routes say (a choice, not a fault). */
const PARTNERS_OFF: Refused = {
  error: 'Hosted partners are turned off on this deployment (PARTNERS_ENABLED = "false")',
  off: true,
};

/**
 * The whole partner configuration, parsed once per request; refused on purpose while
 * PARTNERS_ENABLED is "false" (the partner routes, discovery and MCP read it; reconciliation reads
 * pricingConfig, so a share owed for a partner call made before is still priced).
 */
export function partnerConfigOf(c: Context): PartnerConfig | Refused {
  const setup = setupOf(c);
  setup.partners ??= logged(c, partnersEnabled(c.env) ? partnerConfig(c.env) : PARTNERS_OFF);
  return setup.partners;
}

/**
 * The one test of whether discovery lists the partners: the prices of a partner configuration
 * that can be read whole, or none. Pages and documents then list the skills only and stay up
 * (the partner routes keep their 503); a bad base URL or wallet leaves the partners out as a
 * bad multiplier does, so no document lists what /api/partners refuses.
 */
export function listedPartnerPricing(c: Context): PricingConfig | undefined {
  const pc = partnerConfigOf(c);
  return "error" in pc ? undefined : pc;
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
 * The one place a refused partner configuration becomes the partner routes' documented 503 (the
 * listing and the proxy; documents leave the partners out instead). Later steps read `c.var`.
 */
export const partnerConfigured: MiddlewareHandler = async (c, next) => {
  const pc = partnerConfigOf(c);
  if ("error" in pc) return refusal(c, pc);
  c.set("partnerConfig", pc);
  await next();
};
