import type { PublicConfig } from "../config";
import { type ErrorItem, zodItems } from "../http/validation";
import { formatUsd, microsToUsd, trimDecimal } from "../money";
import type { PricingConfig } from "../partners/listing";
import { servicePrices } from "../partners/pricing";
import { REFINERY_SKILL_PATH, refineryPartner } from "../partners/refinery-skill";
import { paidPartnerServices } from "../payments/sellables";
import { inputJsonSchema, outputJsonSchema, skills } from "../skills/registry";
import type { Skill } from "../skills/types";

export const SITE_NAME = "Agent Skills Marketplace";
export const SITE_SUMMARY =
  "Small, reliable operations for AI agents, sold by the call: JSON and text utilities, web utilities and analytic skills, paid per call with x402 (USDC on Base) or with card-bought credits.";

/** First sentence of a description, for one-line listings. */
export function firstSentence(text: string): string {
  const m = /^.*?[.!?](?=\s|$)/.exec(text);
  return m ? m[0] : text;
}

/** A JSON Schema without its `$schema` dialect key, ready to embed in another document. */
export const withoutDialect = ({ $schema: _drop, ...schema }: Record<string, unknown>) => schema;

/** JSON Schema of a skill's body, to embed. */
export const bodySchema = (skill: Skill) => withoutDialect(inputJsonSchema(skill));

/** JSON Schema of a skill's 200 body, to embed. */
export const responseSchema = (skill: Skill) => withoutDialect(outputJsonSchema(skill));

/** A string as one single-quoted shell word (for copy-paste curl lines). */
export const shQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

interface Bounds {
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}
/** Values of a property that its bounds reject, most readable first. */
function outOfBounds(p: Bounds): unknown[] {
  const out: unknown[] = [];
  if (p.maximum !== undefined) out.push(p.maximum + 1);
  if (p.minimum !== undefined) out.push(p.minimum - 1);
  if (p.maxLength !== undefined) out.push("x".repeat(p.maxLength + 1));
  return out;
}

/**
 * A 422 this skill really answers, with the body that causes it: `{}` when a field is required (or
 * a refinement rejects it), else the first field pushed past a bound, else a body that is not an
 * object. The body is validated with the skill's schema through the route's own FastAPI-shape
 * converter, so the example cannot disagree with the service.
 */
export function validationExample(skill: Skill): { body: unknown; detail: ErrorItem[] } {
  const props = (bodySchema(skill) as { properties?: Record<string, Bounds> }).properties ?? {};
  const candidates: unknown[] = [
    {},
    ...Object.entries(props).flatMap(([name, p]) => outOfBounds(p).map((v) => ({ [name]: v }))),
    [],
  ];
  for (const body of candidates) {
    const result = skill.input.safeParse(body, { reportInput: true });
    if (!result.success) return { body, detail: zodItems(result.error, body, ["body"]) };
  }
  throw new Error(`${skill.id}: every candidate body validated`);
}

export function skillUrls(cfg: PublicConfig, skill: Skill) {
  return {
    endpoint: `${cfg.baseUrl}${skill.endpoint}`,
    docs: `${cfg.baseUrl}/docs/${skill.slug}`,
    service: `${cfg.baseUrl}/services/${skill.slug}.json`,
  };
}

export const priceLabel = (skill: Skill) => formatUsd(skill.price_usd);
export const priceDecimal = (skill: Skill) => trimDecimal(skill.price_usd);

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

/** Public pages, in the order the sitemap and navigation list them. */
export function publicPages(cfg: PublicConfig): string[] {
  return [
    `${cfg.baseUrl}/`,
    `${cfg.baseUrl}/docs`,
    `${cfg.baseUrl}/docs/mcp`,
    ...skills.map((s) => `${cfg.baseUrl}/docs/${s.slug}`),
    `${cfg.baseUrl}/applet`,
  ];
}

export const PAYMENT_SUMMARY = (cfg: PublicConfig) =>
  `Every skill is priced per call. Pay with x402 v2 (scheme exact, network ${cfg.network}, USDC ${cfg.usdcAddress}, paid to ${cfg.payTo}): call once, read the 402 PAYMENT-REQUIRED challenge, sign it and retry with PAYMENT-SIGNATURE; @x402/fetch does this for you. Or buy a pack of calls by card (POST /api/cardpay/checkout) and send Authorization: Bearer mk_... . You are charged only when the call succeeds (2xx).`;
