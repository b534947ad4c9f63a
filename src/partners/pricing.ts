import { microsToUsd as usd, usdToMicros } from "../money";
import type { PartnerService } from "./data";

/** The spec's pricing rule: listing price = multiplier × partner price, the multiplier at least 3. */
export const MIN_MULTIPLIER = 3;

/** Multiplier in thousandths, so every derived price stays exact integer micro-dollars. */
export function parseMultiplier(raw: string | undefined): { milli: bigint } | { error: string } {
  const value = raw === undefined || raw.trim() === "" ? MIN_MULTIPLIER : Number(raw);
  if (!Number.isFinite(value)) return { error: `PARTNER_PRICE_MULTIPLIER "${raw}" is not a number` };
  if (value < MIN_MULTIPLIER)
    return { error: `PARTNER_PRICE_MULTIPLIER ${value} is below the minimum of ${MIN_MULTIPLIER}` };
  const milli = Math.round(value * 1000);
  if (Math.abs(milli - value * 1000) > 1e-6)
    return { error: "PARTNER_PRICE_MULTIPLIER has more than 3 decimals" };
  return { milli: BigInt(milli) };
}

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
