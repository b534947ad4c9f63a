import { microsToUsd, trimDecimal, microsToUsd as usd, usdToMicros } from "../money";
import type { PricingConfig } from "./config";
import { PARTNERS, type Partner, type PartnerService } from "./data";
import { REFINERY_SKILL_PATH, refineryPartner } from "./refinery-skill";

export interface ServicePrices {
  partnerMicros: bigint;
  priceMicros: bigint;
  feeMicros: bigint;
  multiplier: number;
  price_usd: number;
  marketplace_fee_usd: number;
  partner_payout_usd: number;
  revenue_vs_cost: number | null;
  our_margin_vs_cost: number | null;
}

/** Every derived number of spec 2.7, computed (never stored) in integer micro-dollars. */
export function servicePrices(service: PartnerService, multiplierMilli: bigint): ServicePrices {
  const partnerMicros = usdToMicros(service.partner_price_usd);
  const priceMicros = (partnerMicros * multiplierMilli) / 1000n;
  const feeMicros = priceMicros - partnerMicros;
  const free = partnerMicros === 0n;
  return {
    partnerMicros,
    priceMicros,
    feeMicros,
    multiplier: Number(multiplierMilli) / 1000,
    price_usd: usd(priceMicros),
    marketplace_fee_usd: usd(feeMicros),
    partner_payout_usd: usd(partnerMicros),
    revenue_vs_cost: free ? null : Number((priceMicros * 1000n) / partnerMicros) / 1000,
    our_margin_vs_cost: free ? null : Number((feeMicros * 1000n) / partnerMicros) / 1000,
  };
}

/**
 * The one rule for "sold per call through x402": a paid listing whose price under the multiplier is
 * above zero. Free services (mcp_tools) and the external partner are proxied without payment.
 */
export const isSoldPerCall = (partner: Partner, service: PartnerService, pc: PricingConfig) =>
  partner.listing_status === "paid" && servicePrices(service, pc.multiplierMilli).priceMicros > 0n;

/** Every partner service sold per call, with its prices (the x402 gate and the documents share it). */
export function paidPartnerServices(pc: PricingConfig) {
  return PARTNERS.flatMap((partner) =>
    partner.services
      .filter((service) => isSoldPerCall(partner, service, pc))
      .map((service) => ({ partner, service, prices: servicePrices(service, pc.multiplierMilli) })),
  );
}

/** The refinery skill's slug: its service description lives at /services/<slug>.json like a skill's. */
export const REFINERY_SLUG = REFINERY_SKILL_PATH.replace(/^\/api\/skills\//, "");

/** Lowest and highest of some prices, in decimal dollars ("0.009", "3"). */
export interface PriceRange {
  min: string;
  max: string;
}
function rangeOf(micros: bigint[]): PriceRange {
  const sorted = [...micros].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const dollars = (m: bigint | undefined) => trimDecimal(microsToUsd(m ?? 0n));
  return { min: dollars(sorted[0]), max: dollars(sorted[sorted.length - 1]) };
}

/**
 * What the partner routes charge under the configured multiplier: the try routes sell every paid
 * partner service (the same list the x402 gate prices), the refinery skill each of its recipes.
 */
export function partnerPricing(pc: PricingConfig) {
  return {
    /** "3", "3.5": the listing price is this many times the partner's own price. */
    multiplier: trimDecimal(Number(pc.multiplierMilli) / 1000),
    tryRoutes: rangeOf(paidPartnerServices(pc).map((s) => s.prices.priceMicros)),
    refinery: rangeOf(
      refineryPartner().services.map((s) => servicePrices(s, pc.multiplierMilli).priceMicros),
    ),
  };
}
