import type { PublicConfig } from "../config";
import type { PricingConfig } from "../partners/config";
import { RECIPES } from "../partners/data";
import { partnerPricing, REFINERY_SLUG } from "../partners/pricing";
import { REFINERY_SKILL_PATH } from "../partners/refinery-skill";
import { sellables } from "../payments/sellables";
import { skills } from "../skills/registry";
import { bodySchema, withoutDialect } from "../skills/schema-docs";
import { priceDecimal, skillUrls } from "./identity";
import { paymentTerms } from "./payment-terms";

/** The refinery skill's service description: one price per recipe, from the gate's own pricing. */
function refinerySpec(cfg: PublicConfig, pc: PricingConfig) {
  const item = sellables(cfg, pc).find((s) => s.path === REFINERY_SKILL_PATH);
  if (!item?.priceForBody || !item.example) return undefined;
  const priceOf = item.priceForBody;
  const range = partnerPricing(pc).refinery;
  const byRecipe = Object.fromEntries(
    RECIPES.map((recipe) => [recipe, (priceOf({ recipe }) ?? item.priceMicros).toString()]),
  );
  return {
    id: REFINERY_SLUG.replaceAll("-", "_"),
    name: "Refinery recipes",
    description: item.description,
    method: "POST",
    endpoint: `${cfg.baseUrl}${REFINERY_SKILL_PATH}`,
    price: { mode: "dynamic", currency: "USD", min: range.min, max: range.max },
    x402: {
      scheme: "exact",
      network: cfg.network,
      asset: paymentTerms(cfg)?.asset,
      amount: item.priceMicros.toString(),
      amount_by_recipe: byRecipe,
      pay_to: paymentTerms(cfg)?.payTo,
    },
    input_schema: withoutDialect(item.example.inputSchema),
    example_request: item.example.input,
  };
}

/** The per-skill service description named by the OpenAPI `x-x402.specSource`. */
export function serviceSpec(cfg: PublicConfig, pc: PricingConfig | undefined, slug: string) {
  // The refinery skill is a partner's: not described while the partners are left out.
  if (slug === REFINERY_SLUG) return pc && refinerySpec(cfg, pc);
  const s = skills.find((k) => k.slug === slug);
  if (!s) return undefined;
  return {
    id: s.id,
    name: s.name,
    description: s.description,
    method: "POST",
    endpoint: skillUrls(cfg, s).endpoint,
    docs_url: skillUrls(cfg, s).docs,
    price: { mode: "fixed", currency: "USD", amount: priceDecimal(s) },
    x402: {
      scheme: "exact",
      network: cfg.network,
      asset: paymentTerms(cfg)?.asset,
      amount: s.price_atomic.toString(),
      pay_to: paymentTerms(cfg)?.payTo,
    },
    input_schema: bodySchema(s),
    example_request: s.example_request,
    example_response: s.example_response,
  };
}
