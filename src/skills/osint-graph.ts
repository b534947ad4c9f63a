import * as z from "zod";
import type { Bindings } from "../env";
import { netConfig } from "../net/config";
import { cached, normalizeText } from "./lib/cache";
import { logCall } from "./lib/osint-calls";
import {
  canonicalizeWalk,
  type GraphEdge,
  type GraphNode,
  KINDS,
  nameNodes,
  resolveSeed,
  round3,
  type SeedMatch,
  sampleDegrees,
  type WalkNode,
  walkRelations,
} from "./lib/osint-walk";
import { searchOrRefuse } from "./lib/search-refused";
import { WikidataClient } from "./lib/wikidata";
import { OSINT_EXAMPLE } from "./osint-graph.example";
import { cacheState, defineSkill } from "./types";

const MAX_REQUESTS = 12;
const DISCLAIMER =
  "Built only from public Wikidata statements (community-edited, possibly incomplete or outdated); " +
  "not a background check. Verify before acting on it.";

interface Built {
  disclaimer: string;
  graph: { nodes: GraphNode[]; edges: GraphEdge[]; max_depth: number };
  degrees_sample: ReturnType<typeof sampleDegrees>;
  sources: string[];
  confidence: number;
  match: SeedMatch | null;
  candidates: { id: string; label: string; description: string }[];
  truncated: boolean;
  requests: number;
  note?: string;
}

/** Resolve the seed, walk its relations, name what was found, then shape the answer (lib/osint-walk.ts). */
export async function buildGraph(env: Bindings, seed: string, maxDepth: number): Promise<Built> {
  const wd = new WikidataClient(netConfig(env), MAX_REQUESTS);
  const trimmed = seed.trim();
  const empty = (note: string): Built => ({
    disclaimer: DISCLAIMER,
    graph: { nodes: [], edges: [], max_depth: maxDepth },
    degrees_sample: [],
    sources: [],
    confidence: 0,
    match: null,
    candidates: [],
    truncated: false,
    requests: wd.requests,
    note,
  });

  // Wikidata refuses an empty search (missingparam); a blank seed matches nothing.
  if (trimmed === "")
    return empty("The seed has no text to search for; nothing to graph. Give the entity's name or Q-id.");
  const resolved = await searchOrRefuse(
    () => resolveSeed(wd, trimmed),
    "seed_entity",
    "Wikidata cannot search this seed",
    seed,
  );
  if (!resolved)
    return empty(`No Wikidata item matches "${trimmed}"; nothing to graph. Try the entity's full name.`);
  const { match, quality } = resolved;
  const seedNode: WalkNode = {
    id: resolved.id,
    name: match.label,
    type: "entity",
    confidence: round3(quality),
    depth: 0,
    expand: true,
  };
  const walk = await walkRelations(wd, seedNode, maxDepth);
  if (!walk) return empty(`Wikidata has no item ${resolved.id}; nothing to graph.`);
  await nameNodes(wd, walk);
  canonicalizeWalk(walk, wd);
  match.id = seedNode.id;
  if (match.match_type === "entityId") {
    match.label = seedNode.name;
    match.description = seedNode.description ?? "";
  }

  const all = [...walk.nodes.values()];
  return {
    disclaimer: DISCLAIMER,
    graph: {
      nodes: all.map(({ id, name, type, confidence, depth, description }) => ({
        id,
        name,
        type,
        confidence,
        depth,
        ...(description ? { description } : {}),
      })),
      edges: [...walk.edges.values()].filter((e) => walk.nodes.has(e.from) && walk.nodes.has(e.to)),
      max_depth: maxDepth,
    },
    degrees_sample: sampleDegrees(walk.nodes, maxDepth),
    sources: all.filter((n) => walk.fetched.has(n.id)).map((n) => wd.entityUrl(n.id)),
    confidence: round3(quality),
    match,
    candidates: resolved.candidates,
    truncated: walk.truncated,
    requests: wd.requests,
  };
}

export const osintGraph = defineSkill({
  id: "osint_graph",
  name: "OSINT relation graph",
  category: "osint_graph",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Resolve an organisation or person on Wikidata and walk its public relations (owner, parent, subsidiary, founder, CEO, employer, member of, instance of, country, ...) breadth first up to max_depth, capped at 60 nodes. Returns typed nodes with confidence, weighted edges, real paths from the seed and the entity URLs used. Public data only.",
  input: () =>
    z.object({
      seed_entity: z
        .string()
        .min(1)
        .max(500)
        .meta({ description: "Name (or Wikidata Q-id) of the entity to start from." }),
      max_depth: z.int().min(1).max(4).default(2).meta({ description: "How many relation hops to walk." }),
    }),
  output: () =>
    z.object({
      seed_entity: z.string(),
      max_depth: z.int().min(1).max(4),
      disclaimer: z.string(),
      graph: z.object({
        nodes: z.array(
          z.object({
            id: z.string().meta({ description: "Wikidata Q-id." }),
            name: z.string(),
            type: z.enum(KINDS),
            confidence: z.number().min(0).max(1),
            depth: z.int().min(0),
            description: z.string().optional(),
          }),
        ),
        edges: z.array(
          z.object({
            from: z.string(),
            to: z.string(),
            relation: z.string(),
            property: z.string().meta({ description: "Wikidata property id." }),
            weight: z.number(),
          }),
        ),
        max_depth: z.int(),
      }),
      degrees_sample: z.array(
        z.object({ depth: z.int().min(1), path: z.array(z.string()), relations: z.array(z.string()) }),
      ),
      sources: z.array(z.string()).meta({ description: "Wikidata entity URLs read." }),
      logged_for_realization: z.boolean(),
      confidence: z.number().min(0).max(1).meta({ description: "Quality of the seed match." }),
      match: z
        .object({ id: z.string(), label: z.string(), description: z.string(), match_type: z.string() })
        .nullable(),
      candidates: z.array(z.object({ id: z.string(), label: z.string(), description: z.string() })),
      truncated: z.boolean(),
      requests: z.int().min(0).meta({ description: "Wikidata requests made." }),
      note: z.string().optional(),
      cache: cacheState,
    }),
  example_request: { seed_entity: "Cloudflare", max_depth: 2 },
  example_response: OSINT_EXAMPLE,
  async run({ seed_entity, max_depth }, ctx) {
    const { env, requestId } = ctx;
    const { value, cache } = await cached(ctx, "osint_graph", [normalizeText(seed_entity), max_depth], () =>
      buildGraph(env, seed_entity, max_depth),
    );
    // A cached graph is still a new call: it is logged every time.
    const logged = await logCall(env, requestId, max_depth, value.graph.nodes.length);
    const { disclaimer, graph, degrees_sample, sources, ...extra } = value;
    return {
      seed_entity,
      max_depth,
      disclaimer,
      graph,
      degrees_sample,
      sources,
      logged_for_realization: logged,
      ...extra,
      cache,
    };
  },
});
