import type { PublicConfig } from "../config";
import { publishableUrl } from "../redact";
import { baseUrlOf, type PartnerConfig, walletOf } from "./config";
import { PARTNERS, type Partner, type PartnerService } from "./data";
import { servicePrices } from "./pricing";

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
    // Published: never a key the URL may carry in its query or userinfo.
    facilitator: partner.external ? "" : publishableUrl(cfg.facilitatorUrl),
    ownership_wallet: walletOf(partner, pc),
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

/** GET /api/partners: every partner, the flattened service list, and the marketplace's own status. */
export const partnersListing = (pc: PartnerConfig, cfg: PublicConfig) => ({
  partners: PARTNERS.map((p) => partnerEntry(p, pc, cfg)),
  services: flatServices(pc),
  listing_status: "paid",
});
