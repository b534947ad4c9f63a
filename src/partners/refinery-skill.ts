import * as z from "zod";
import { PARTNERS, RECIPES, REFINERY_ID } from "./data";

/**
 * The data-refinery partner sold as a native skill (spec 2.8): one endpoint, the recipe in the
 * body, each recipe priced like its partner service. Not one of the catalog's 15 skills.
 */
export const REFINERY_SKILL_PATH = "/api/skills/refinery-recipes";

export const refineryBody = z.object({
  raw: z.string().min(1).max(100_000).meta({ description: "The raw text to refine." }),
  request: z.string().max(4000).meta({ description: "What you want from it." }),
  recipe: z.enum(RECIPES).meta({ description: "eval_set, rag_chunks, policy_digest or custom." }),
});

export const refineryPartner = () => {
  const partner = PARTNERS.find((p) => p.id === REFINERY_ID);
  if (!partner) throw new Error("refinery partner missing from data");
  return partner;
};

export const refineryExample = {
  raw: "Refunds are due within 30 days of purchase. Customers must keep the receipt.",
  request: "List the obligations.",
  recipe: "policy_digest" as const,
};
