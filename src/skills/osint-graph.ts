import { z } from "zod";
import type { Bindings } from "../env";
import { netConfig } from "../net/config";
import { cached, normalizeText } from "./lib/cache";
import { type WdEntity, WikidataClient } from "./lib/wikidata";
import { OSINT_EXAMPLE } from "./osint-graph.example";
import { cacheState, defineSkill } from "./types";

const KINDS = ["person", "organization", "country", "place", "class", "industry", "entity"] as const;
type Kind = (typeof KINDS)[number];

/**
 * Relations walked, in the order they are read (the node cap keeps the earlier ones). `kind` is what
 * the target usually is; `expand` says whether the walk continues from it: classes, countries,
 * places and industries are hubs that describe the world rather than the seed, so they are leaves.
 */
const RELATIONS: [property: string, label: string, kind: Kind, expand: boolean][] = [
  ["P749", "parent organization", "organization", true],
  ["P355", "has subsidiary", "organization", true],
  ["P127", "owned by", "entity", true],
  ["P1830", "owner of", "entity", true],
  ["P112", "founded by", "entity", true],
  ["P169", "chief executive officer", "person", true],
  ["P488", "chairperson", "person", true],
  ["P1037", "director / manager", "person", true],
  ["P3320", "board member", "person", true],
  ["P108", "employer", "organization", true],
  ["P463", "member of", "organization", true],
  ["P102", "member of political party", "organization", true],
  ["P69", "educated at", "organization", true],
  ["P414", "stock exchange", "organization", true],
  ["P361", "part of", "entity", true],
  ["P31", "instance of", "class", false],
  ["P17", "country", "country", false],
  ["P27", "country of citizenship", "country", false],
  ["P159", "headquarters location", "place", false],
  ["P740", "location of formation", "place", false],
  ["P452", "industry", "industry", false],
];
const RELATION = new Map(RELATIONS.map(([p, label, kind, expand]) => [p, { label, kind, expand }]));
const ORG_HINTS = ["P159", "P452", "P749", "P355", "P112", "P169", "P414", "P1830"];

export const NODE_CAP = 60;
const PER_RELATION_CAP = 20;
const MAX_REQUESTS = 12;
const DISTANCE_DECAY = 0.85;
const DISCLAIMER =
  "Built only from public Wikidata statements (community-edited, possibly incomplete or outdated); " +
  "not a background check. Verify before acting on it.";

interface GraphNode {
  id: string;
  name: string;
  type: Kind;
  confidence: number;
  depth: number;
  description?: string;
}
interface GraphEdge {
  from: string;
  to: string;
  relation: string;
  property: string;
  weight: number;
}
interface Built {
  disclaimer: string;
  graph: { nodes: GraphNode[]; edges: GraphEdge[]; max_depth: number };
  degrees_sample: { depth: number; path: string[]; relations: string[] }[];
  sources: string[];
  confidence: number;
  match: { id: string; label: string; description: string; match_type: string } | null;
  candidates: { id: string; label: string; description: string }[];
  truncated: boolean;
  requests: number;
  note?: string;
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Match quality of the seed: exact label 1, exact alias 0.9, prefix 0.6; ×0.8 when ambiguous. */
function matchQuality(query: string, hits: { label: string; matchType: string; matchText: string }[]) {
  const [top] = hits;
  if (!top) return 0;
  const q = normalizeText(query);
  const exact = normalizeText(top.matchText || top.label) === q;
  let quality = exact ? (top.matchType === "alias" ? 0.9 : 1) : 0.6;
  const rivals = hits.slice(1).filter((h) => normalizeText(h.label) === q).length;
  if (exact && rivals > 0) quality *= 0.8;
  return quality;
}

function refineKind(kind: Kind, entity: WdEntity | undefined): Kind {
  const claims = entity?.claims;
  if (!claims) return kind;
  if (claims.P31?.some((s) => s.target === "Q5")) return "person";
  if ((kind === "entity" || kind === "organization") && ORG_HINTS.some((p) => claims[p]))
    return "organization";
  return kind;
}

export async function buildGraph(env: Bindings, seed: string, maxDepth: number): Promise<Built> {
  const cfg = netConfig(env);
  const wd = new WikidataClient(cfg, MAX_REQUESTS);
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

  // Resolve the seed: a Q-id is taken as is, anything else goes through the search.
  let seedId: string;
  let seedQuality: number;
  let match: Built["match"];
  let candidates: Built["candidates"] = [];
  if (/^Q[1-9]\d*$/i.test(trimmed)) {
    seedId = trimmed.toUpperCase();
    seedQuality = 1;
    match = { id: seedId, label: seedId, description: "", match_type: "entityId" };
  } else {
    const hits = await wd.search(trimmed.slice(0, 250));
    const [top] = hits;
    if (!top)
      return empty(`No Wikidata item matches "${trimmed}"; nothing to graph. Try the entity's full name.`);
    seedId = top.id;
    seedQuality = matchQuality(trimmed, hits);
    match = { id: top.id, label: top.label, description: top.description, match_type: top.matchType };
    candidates = hits.slice(1, 5).map((h) => ({ id: h.id, label: h.label, description: h.description }));
  }

  const nodes = new Map<string, GraphNode & { parent?: string; via?: string; expand: boolean }>();
  const edges = new Map<string, GraphEdge>();
  const fetched = new Map<string, WdEntity>();
  let truncated = false;
  nodes.set(seedId, {
    id: seedId,
    name: match.label,
    type: "entity",
    confidence: round3(seedQuality),
    depth: 0,
    expand: true,
  });

  let frontier = [seedId];
  for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
    const wanted = frontier.filter((id) => !fetched.has(id));
    if (wd.exhausted) {
      truncated = true;
      break;
    }
    for (const [id, e] of await wd.entities(wanted, true)) fetched.set(id, e);
    if (depth === 1 && !fetched.has(seedId)) {
      return empty(`Wikidata has no item ${seedId}; nothing to graph.`);
    }
    if (wanted.some((id) => !fetched.has(id)) && wd.exhausted) truncated = true;
    const next: string[] = [];
    for (const fromId of frontier) {
      const from = nodes.get(fromId);
      const entity = fetched.get(fromId);
      if (!from || !entity?.claims) continue;
      for (const [property, { label, kind, expand }] of RELATION) {
        for (const st of (entity.claims[property] ?? []).slice(0, PER_RELATION_CAP)) {
          if (st.target === fromId) continue;
          const weight = round3((st.rank === "preferred" ? 1 : 0.8) * (st.ended ? 0.5 : 1));
          const confidence = round3(from.confidence * DISTANCE_DECAY * weight);
          let to = nodes.get(st.target);
          if (!to) {
            if (nodes.size >= NODE_CAP) {
              truncated = true;
              continue;
            }
            to = {
              id: st.target,
              name: st.target,
              type: kind,
              confidence,
              depth,
              parent: fromId,
              via: label,
              expand,
            };
            nodes.set(st.target, to);
            next.push(st.target);
          } else if (to.depth === depth && confidence > to.confidence) {
            to.confidence = confidence;
          }
          const key = `${fromId}|${property}|${st.target}`;
          const prev = edges.get(key);
          if (!prev || prev.weight < weight)
            edges.set(key, { from: fromId, to: st.target, relation: label, property, weight });
        }
      }
    }
    frontier = next.filter((id) => nodes.get(id)?.expand);
  }

  // Names for the nodes whose claims were never read (leaves and the last layer).
  const unnamed = [...nodes.keys()].filter((id) => !fetched.has(id));
  if (unnamed.length > 0) {
    for (const [id, e] of await wd.entities(unnamed, false)) fetched.set(id, e);
    if (unnamed.some((id) => !fetched.has(id)) && wd.exhausted) truncated = true;
  }
  for (const node of nodes.values()) {
    const e = fetched.get(node.id);
    if (e?.label) node.name = e.label;
    if (e?.description) node.description = e.description;
    node.type = refineKind(node.type, e);
  }
  const seedNode = nodes.get(seedId);
  if (seedNode && match.match_type === "entityId") {
    match.label = seedNode.name;
    match.description = seedNode.description ?? "";
  }

  const pathTo = (id: string) => {
    const names: string[] = [];
    const relations: string[] = [];
    for (let n = nodes.get(id); n; n = n.parent ? nodes.get(n.parent) : undefined) {
      names.unshift(n.name);
      if (n.via) relations.unshift(n.via);
    }
    return { names, relations };
  };
  const degrees_sample: Built["degrees_sample"] = [];
  const all = [...nodes.values()];
  for (let depth = 1; depth <= maxDepth; depth++) {
    const layer = all.filter((n) => n.depth === depth).sort((a, b) => b.confidence - a.confidence);
    for (const n of layer.slice(0, 3)) {
      const { names, relations } = pathTo(n.id);
      degrees_sample.push({ depth, path: names, relations });
    }
  }

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
      edges: [...edges.values()].filter((e) => nodes.has(e.from) && nodes.has(e.to)),
      max_depth: maxDepth,
    },
    degrees_sample,
    sources: all.filter((n) => fetched.has(n.id)).map((n) => wd.entityUrl(n.id)),
    confidence: round3(seedQuality),
    match,
    candidates,
    truncated,
    requests: wd.requests,
  };
}

/** Records the call for later settlement; true only when the row was written. */
async function logCall(env: Bindings, requestId: string, seed: string, maxDepth: number, nodes: number) {
  try {
    const result = await env.DB.prepare(
      "INSERT INTO osint_calls (request_id, seed_entity, max_depth, nodes, created_at) VALUES (?, ?, ?, ?, ?)",
    )
      .bind(requestId, seed, maxDepth, nodes, Date.now())
      .run();
    return result.success === true && (result.meta?.changes ?? 0) === 1;
  } catch (e) {
    console.error(
      JSON.stringify({ level: "error", request_id: requestId, error: `osint_calls insert: ${e}` }),
    );
    return false;
  }
}

export const osintGraph = defineSkill({
  id: "osint_graph",
  name: "OSINT relation graph",
  category: "osint_graph",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Resolve an organisation or person on Wikidata and walk its public relations (owner, parent, subsidiary, founder, CEO, employer, member of, instance of, country, ...) breadth first up to max_depth, capped at 60 nodes. Returns typed nodes with confidence, weighted edges, real paths from the seed and the entity URLs used. Public data only.",
  input: z.object({
    seed_entity: z
      .string()
      .min(1)
      .max(500)
      .meta({ description: "Name (or Wikidata Q-id) of the entity to start from." }),
    max_depth: z.int().min(1).max(4).default(2).meta({ description: "How many relation hops to walk." }),
  }),
  output: z.object({
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
  async run({ seed_entity, max_depth }, { env, requestId }) {
    const { value, cache } = await cached(env, "osint_graph", [normalizeText(seed_entity), max_depth], () =>
      buildGraph(env, seed_entity, max_depth),
    );
    // A cached graph is still a new call: it is logged every time.
    const logged = await logCall(env, requestId, seed_entity, max_depth, value.graph.nodes.length);
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
