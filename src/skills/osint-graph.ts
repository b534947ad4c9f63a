import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const osintGraph = defineSkill({
  id: "osint_graph",
  name: "OSINT relation graph",
  category: "osint_graph",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Resolve an organisation or person on Wikidata and walk its public relations (instance of, country, employer, owner, parent, subsidiary, founder, member of) breadth first up to max_depth. Returns typed nodes with confidence, weighted edges, sample paths from the seed and the entity URLs used. Public data only.",
  input: z.object({
    seed_entity: z.string().min(1).max(500).meta({ description: "Name of the entity to start from." }),
    max_depth: z.int().min(1).max(4).default(2).meta({ description: "How many relation hops to walk." }),
  }),
  example_request: { seed_entity: "Cloudflare", max_depth: 2 },
  example_response: {
    skill: "osint_graph",
    seed_entity: "Cloudflare",
    max_depth: 2,
    disclaimer: "Built from public Wikidata statements only; verify before acting on it.",
    graph: {
      nodes: [
        { id: "Q4778915", name: "Cloudflare", type: "seed", confidence: 1 },
        { id: "Q4830453", name: "business", type: "instance of", confidence: 0.9 },
      ],
      edges: [{ from: "Q4778915", to: "Q4830453", relation: "instance of", weight: 0.9 }],
      max_depth: 2,
    },
    degrees_sample: [{ depth: 1, path: ["Cloudflare", "business"] }],
    sources: ["https://www.wikidata.org/wiki/Q4778915"],
    logged_for_realization: true,
  },
  run: () => notImplemented(),
});
