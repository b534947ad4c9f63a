import type { PublicConfig } from "../config";
import { formatUsd, trimDecimal } from "../money";
import { skills } from "../skills/registry";
import type { Skill } from "../skills/types";
import { PAYMENTS_MISCONFIGURED, paymentTerms } from "./payment-terms";

/** Who this site is and how it writes a skill's name, price and links: shared by pages and documents. */

export const SITE_NAME = "Agent Skills Marketplace";
export const SITE_SUMMARY =
  "Small, reliable operations for AI agents, sold by the call: JSON and text utilities, web utilities and analytic skills, paid per call with x402 (USDC on Base) or with card-bought credits.";

/** First sentence of a description, for one-line listings. */
export function firstSentence(text: string): string {
  const m = /^.*?[.!?](?=\s|$)/.exec(text);
  return m ? m[0] : text;
}

/** A string as one single-quoted shell word (for copy-paste curl lines). */
export const shQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

export function skillUrls(cfg: PublicConfig, skill: Skill) {
  return {
    endpoint: `${cfg.baseUrl}${skill.endpoint}`,
    docs: `${cfg.baseUrl}/docs/${skill.slug}`,
    service: `${cfg.baseUrl}/services/${skill.slug}.json`,
  };
}

export const priceLabel = (skill: Skill) => formatUsd(skill.price_usd);
export const priceDecimal = (skill: Skill) => trimDecimal(skill.price_usd);

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

const payingTo = (cfg: PublicConfig) => {
  const terms = paymentTerms(cfg);
  return terms ? `USDC ${terms.asset}, paid to ${terms.payTo}` : PAYMENTS_MISCONFIGURED;
};

export const PAYMENT_SUMMARY = (cfg: PublicConfig) =>
  `Every skill is priced per call. Pay with x402 v2 (scheme exact, network ${cfg.network}, ${payingTo(cfg)}): call once, read the 402 PAYMENT-REQUIRED challenge, sign it and retry with PAYMENT-SIGNATURE; @x402/fetch does this for you. Or buy a pack of calls by card (POST /api/cardpay/checkout) and send Authorization: Bearer mk_... . You are charged only when the call succeeds (2xx); a payment settled for a call that then failed is refunded (see the refunds in /contracts/humanless.json).`;
