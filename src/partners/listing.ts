import type { PublicConfig } from "../config";
import type { Bindings } from "../env";
import { PARTNERS, type Partner, type PartnerService } from "./data";
import { parseMultiplier, servicePrices } from "./pricing";

/** What partner prices need: the multiplier alone (documents and the x402 gate use only this). */
export interface PricingConfig {
  multiplierMilli: bigint;
}

export function pricingConfig(env: Bindings): PricingConfig | { error: string } {
  const m = parseMultiplier(env.PARTNER_PRICE_MULTIPLIER);
  return "error" in m ? { error: m.error } : { multiplierMilli: m.milli };
}

/**
 * Partner configuration for the listing and the try proxy: the multiplier and per-partner base
 * URL overrides. A bad base URL disables only these, never the skills or the documents.
 */
export function partnerConfig(
  env: Bindings,
): (PricingConfig & { baseUrls: Record<string, string> }) | { error: string } {
  const pricing = pricingConfig(env);
  if ("error" in pricing) return pricing;
  const urls = parseBaseUrls(env.PARTNER_BASE_URLS);
  if ("error" in urls) return urls;
  return { ...pricing, baseUrls: urls.baseUrls };
}

const isHttpUrl = (value: unknown) =>
  typeof value === "string" && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);

/** PARTNER_BASE_URLS must be a JSON object of http(s) URLs; anything else is refused, not guessed at. */
function parseBaseUrls(raw: string | undefined): { baseUrls: Record<string, string> } | { error: string } {
  if (!raw?.trim()) return { baseUrls: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { error: "PARTNER_BASE_URLS is not valid JSON" };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "PARTNER_BASE_URLS is not a JSON object" };
  }
  const bad = Object.entries(value).find(([, url]) => !isHttpUrl(url));
  if (bad) return { error: `PARTNER_BASE_URLS["${bad[0]}"] is not an http(s) URL` };
  return { baseUrls: value as Record<string, string> };
}

export type PartnerConfig = Exclude<ReturnType<typeof partnerConfig>, { error: string }>;

export const baseUrlOf = (partner: Partner, pc: PartnerConfig) =>
  (pc.baseUrls[partner.id] ?? partner.base_url).replace(/\/+$/, "");
export const tryPath = (partner: Partner, service: PartnerService) =>
  `/api/partners/${partner.id}/try/${service.id}`;

function serviceEntry(service: PartnerService, pc: PartnerConfig) {
  const p = servicePrices(service, pc.multiplierMilli);
  return {
    id: service.id,
    name: service.name,
    description: service.description,
    method: service.method,
    path: service.path,
    partner_price_usd: service.partner_price_usd,
    price_usd: p.price_usd,
    cost_multiplier: p.multiplier,
    marketplace_fee_usd: p.marketplace_fee_usd,
    partner_payout_usd: p.partner_payout_usd,
    revenue_vs_cost: p.revenue_vs_cost,
    our_margin_vs_cost: p.our_margin_vs_cost,
    ...(service.test_params ? { test_params: service.test_params } : {}),
    ...(service.test_body ? { test_body: service.test_body } : {}),
    ...(service.test_headers ? { test_headers: service.test_headers } : {}),
  };
}

/** Spec 2.6. */
export function partnerEntry(partner: Partner, pc: PartnerConfig, cfg: PublicConfig) {
  return {
    id: partner.id,
    name: partner.name,
    provider: partner.provider,
    github: partner.github,
    base_url: baseUrlOf(partner, pc),
    icon: partner.icon,
    category: "hosted_partner",
    description: partner.description,
    network: "base",
    facilitator: partner.external ? "" : cfg.facilitatorUrl,
    ownership_wallet: partner.ownership_wallet,
    listing_status: partner.listing_status,
    cost_multiplier: Number(pc.multiplierMilli) / 1000,
    ...(partner.external
      ? { billing_model: partner.external.billing_model, protocol: partner.external.protocol }
      : {}),
    services: partner.services.map((s) => serviceEntry(s, pc)),
  };
}

/** Spec 2.7's flattened list: the service fields (no test_*, no our_margin_vs_cost) plus the partner's. */
export function flatServices(pc: PartnerConfig) {
  return PARTNERS.flatMap((partner) =>
    partner.services.map((service) => {
      const {
        test_params: _p,
        test_body: _b,
        test_headers: _h,
        our_margin_vs_cost: _m,
        ...fields
      } = serviceEntry(service, pc);
      const base = baseUrlOf(partner, pc);
      return {
        ...fields,
        partner_id: partner.id,
        partner_name: partner.name,
        provider: partner.provider,
        github: partner.github,
        base_url: base,
        listing_status: partner.listing_status,
        service_id: service.id,
        icon: partner.icon,
        try_url: tryPath(partner, service),
        external_url: `${base}${service.path}`,
      };
    }),
  );
}

export function partnerById(id: string) {
  return PARTNERS.find((p) => p.id === id);
}
