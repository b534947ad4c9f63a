import * as z from "zod";
import type { PublicConfig } from "../config";
import type { PricingConfig } from "../partners/config";
import type { Partner, PartnerService } from "../partners/data";
import { tryPath } from "../partners/listing";
import { paidPartnerServices, servicePrices } from "../partners/pricing";
import {
  REFINERY_SKILL_PATH,
  refineryBody,
  refineryExample,
  refineryPartner,
} from "../partners/refinery-skill";
import { inputJsonSchema, skills } from "../skills/registry";

/** One thing sold per call through x402. */
export interface Sellable {
  /** Ledger resource name: a skill id, or `partner:<partner>/<service>`. */
  resource: string;
  methods: ("GET" | "POST")[];
  path: string;
  /** Fixed price, or the price when the body names nothing (the highest it can be). */
  priceMicros: bigint;
  /** Price that depends on the request body (the refinery recipe). */
  priceForBody?: (body: unknown) => bigint | undefined;
  description: string;
  tags: string[];
  example?: { input: Record<string, unknown>; inputSchema: Record<string, unknown>; output: unknown };
  partner?: { partner: Partner; service: PartnerService };
}

/**
 * Everything this marketplace sells through x402, in one list the gate and the manifests share.
 * Without a valid partner multiplier only the skills are sold (partner routes answer 503).
 */
export function sellables(_cfg: PublicConfig, pc: PricingConfig | undefined): readonly Sellable[] {
  // The list depends only on the partner multiplier, and building it converts the refinery body to
  // JSON Schema: once per isolate and multiplier (an MCP request, which lists every tool, spent
  // ~0.6 ms of its ~1.4 ms rebuilding it).
  const key = pc ? pc.multiplierMilli.toString() : "skills only";
  let list = built.get(key);
  if (!list) {
    list = Object.freeze(buildSellables(pc));
    built.set(key, list);
  }
  return list;
}
const built = new Map<string, readonly Sellable[]>();

function buildSellables(pc: PricingConfig | undefined): Sellable[] {
  const fromSkills: Sellable[] = skills.map((s) => ({
    resource: s.id,
    methods: ["POST"],
    path: s.endpoint,
    priceMicros: s.price_atomic,
    description: s.description,
    tags: [s.category],
    example: {
      input: s.example_request as Record<string, unknown>,
      inputSchema: inputJsonSchema(s),
      output: s.example_response,
    },
  }));
  if (!pc) return fromSkills;
  const fromPartners: Sellable[] = paidPartnerServices(pc).map(({ partner, service, prices }) => ({
    resource: `partner:${partner.id}/${service.id}`,
    methods: ["GET", "POST"],
    path: tryPath(partner, service),
    priceMicros: prices.priceMicros,
    description: `${partner.name}: ${service.description} (hosted partner, ${service.method} ${service.path})`,
    tags: ["hosted_partner"],
    partner: { partner, service },
  }));
  const refinery = refineryPartner();
  const recipePrice = (recipe: string) => {
    const service = refinery.services.find((s) => s.id === recipe);
    return service ? servicePrices(service, pc.multiplierMilli).priceMicros : undefined;
  };
  const highest = refinery.services.reduce((m, s) => {
    const p = servicePrices(s, pc.multiplierMilli).priceMicros;
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max rejects
    return p > m ? p : m;
  }, 0n);
  const refinerySkill: Sellable = {
    resource: "refinery_recipes",
    methods: ["POST"],
    path: REFINERY_SKILL_PATH,
    priceMicros: highest,
    priceForBody: (body) => {
      const recipe = (body as { recipe?: unknown } | undefined)?.recipe;
      return typeof recipe === "string" ? recipePrice(recipe) : undefined;
    },
    description: `${refinery.name} recipes as a native skill: eval_set, rag_chunks, policy_digest or custom, each priced like its partner service.`,
    tags: ["hosted_partner"],
    example: {
      input: refineryExample,
      inputSchema: z.toJSONSchema(refineryBody, { io: "input" }) as Record<string, unknown>,
      output: { recipe: "policy_digest", partner_id: refinery.id },
    },
  };
  return [...fromSkills, ...fromPartners, refinerySkill];
}
