import { cut } from "../../text-cut";
import { normalizeText } from "./cache";
import type { WdEntity, WdSearchHit, WikidataClient } from "./wikidata";

/** osint_graph's steps on Wikidata: resolve the seed, walk its relations, name the nodes, sample paths. */

export const KINDS = ["person", "organization", "country", "place", "class", "industry", "entity"] as const;
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

const NODE_CAP = 60;
const PER_RELATION_CAP = 20;
const DISTANCE_DECAY = 0.85;

export interface GraphNode {
  id: string;
  name: string;
  type: Kind;
  confidence: number;
  depth: number;
  description?: string;
}
export interface GraphEdge {
  from: string;
  to: string;
  relation: string;
  property: string;
  weight: number;
}
/** A node during the walk: the node it was reached from, by which relation, and whether to go on. */
export type WalkNode = GraphNode & { parent?: string; via?: string; expand: boolean };
export interface SeedMatch {
  id: string;
  label: string;
  description: string;
  match_type: string;
}
export interface Walk {
  nodes: Map<string, WalkNode>;
  edges: Map<string, GraphEdge>;
  /** Entities read, with claims (expanded nodes) or labels only (the rest). */
  fetched: Map<string, WdEntity>;
  truncated: boolean;
}

export const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Match quality of the seed: exact label 1, exact alias 0.9, prefix 0.6; ×0.8 when ambiguous. */
function matchQuality(query: string, hits: WdSearchHit[]) {
  const [top] = hits;
  if (!top) return 0;
  const q = normalizeText(query);
  const exact = normalizeText(top.matchText || top.label) === q;
  let quality = exact ? (top.matchType === "alias" ? 0.9 : 1) : 0.6;
  const rivals = hits.slice(1).filter((h) => normalizeText(h.label) === q).length;
  if (exact && rivals > 0) quality *= 0.8;
  return quality;
}

/**
 * The seed item: a Q-id is taken as is (one Wikibase cannot parse, Q0 or Q99999999999, is then an
 * item Wikidata does not have), anything else goes through the search; null when nothing matches.
 */
export async function resolveSeed(wd: WikidataClient, seed: string) {
  if (/^Q\d+$/i.test(seed)) {
    const id = seed.toUpperCase();
    const match: SeedMatch = { id, label: id, description: "", match_type: "entityId" };
    return { id, quality: 1, match, candidates: [] };
  }
  const hits = await wd.search(cut(seed, 250));
  const [top] = hits;
  if (!top) return null;
  const match: SeedMatch = {
    id: top.id,
    label: top.label,
    description: top.description,
    match_type: top.matchType,
  };
  const candidates = hits.slice(1, 5).map((h) => ({ id: h.id, label: h.label, description: h.description }));
  return { id: top.id, quality: matchQuality(seed, hits), match, candidates };
}

/** Adds the targets of one node's relations (new nodes go to `next`) and the edges to them. */
function expandNode(walk: Walk, from: WalkNode, entity: WdEntity, depth: number, next: string[]) {
  for (const [property, { label, kind, expand }] of RELATION) {
    for (const st of (entity.claims?.[property] ?? []).slice(0, PER_RELATION_CAP)) {
      if (st.target === from.id) continue;
      const weight = round3((st.rank === "preferred" ? 1 : 0.8) * (st.ended ? 0.5 : 1));
      const confidence = round3(from.confidence * DISTANCE_DECAY * weight);
      let to = walk.nodes.get(st.target);
      if (!to) {
        if (walk.nodes.size >= NODE_CAP) {
          walk.truncated = true;
          continue;
        }
        to = {
          id: st.target,
          name: st.target,
          type: kind,
          confidence,
          depth,
          parent: from.id,
          via: label,
          expand,
        };
        walk.nodes.set(st.target, to);
        next.push(st.target);
      } else if (to.depth === depth && confidence > to.confidence) {
        to.confidence = confidence;
      }
      const key = `${from.id}|${property}|${st.target}`;
      const prev = walk.edges.get(key);
      if (!prev || prev.weight < weight)
        walk.edges.set(key, { from: from.id, to: st.target, relation: label, property, weight });
    }
  }
}

/**
 * Breadth first from the seed up to maxDepth, reading claims of one layer per step, within the
 * request budget and the node cap (either sets `truncated`). null when Wikidata has no seed item.
 */
export async function walkRelations(
  wd: WikidataClient,
  seed: WalkNode,
  maxDepth: number,
): Promise<Walk | null> {
  const walk: Walk = {
    nodes: new Map([[seed.id, seed]]),
    edges: new Map(),
    fetched: new Map(),
    truncated: false,
  };
  let frontier = [seed.id];
  for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
    const wanted = frontier.filter((id) => !walk.fetched.has(id));
    if (wd.exhausted) {
      walk.truncated = true;
      break;
    }
    for (const [id, e] of await wd.entities(wanted, true)) walk.fetched.set(id, e);
    if (depth === 1 && !walk.fetched.has(seed.id)) return null;
    if (wanted.some((id) => !walk.fetched.has(id)) && wd.exhausted) walk.truncated = true;
    const next: string[] = [];
    for (const fromId of frontier) {
      const from = walk.nodes.get(fromId);
      const entity = walk.fetched.get(fromId);
      if (from && entity?.claims) expandNode(walk, from, entity, depth, next);
    }
    frontier = next.filter((id) => walk.nodes.get(id)?.expand);
  }
  return walk;
}

function refineKind(kind: Kind, entity: WdEntity | undefined): Kind {
  const claims = entity?.claims;
  if (!claims) return kind;
  if (claims.P31?.some((s) => s.target === "Q5")) return "person";
  if ((kind === "entity" || kind === "organization") && ORG_HINTS.some((p) => claims[p]))
    return "organization";
  return kind;
}

/** Names, descriptions and refined types for every node; labels are read for those never fetched. */
export async function nameNodes(wd: WikidataClient, walk: Walk) {
  const unnamed = [...walk.nodes.keys()].filter((id) => !walk.fetched.has(id));
  if (unnamed.length > 0) {
    for (const [id, e] of await wd.entities(unnamed, false)) walk.fetched.set(id, e);
    if (unnamed.some((id) => !walk.fetched.has(id)) && wd.exhausted) walk.truncated = true;
  }
  for (const node of walk.nodes.values()) {
    const e = walk.fetched.get(node.id);
    if (e?.label) node.name = e.label;
    if (e?.description) node.description = e.description;
    node.type = refineKind(node.type, e);
  }
}

/**
 * One node per item: the walk reaches a merged item under its old id (the seed given as one, a
 * statement not yet updated) as well as under the id Wikidata redirects it to. Every id becomes
 * the item's own (`wd.redirects`); of two nodes of one item the one the walk reached first (the
 * shallower) stays, with the other's confidence if that is higher at the same depth; edges are
 * re-pointed, each kept once, none from an item to itself. A node's parent is always a shallower
 * node, so the paths of sampleDegrees cannot turn into loops.
 */
export function canonicalizeWalk(walk: Walk, wd: WikidataClient) {
  if (wd.redirects.size === 0) return;
  const id = (x: string) => wd.canonical(x);
  const nodes = new Map<string, WalkNode>();
  for (const node of walk.nodes.values()) {
    node.id = id(node.id);
    if (node.parent !== undefined) node.parent = id(node.parent);
    const kept = nodes.get(node.id);
    if (!kept) nodes.set(node.id, node);
    else if (kept.depth === node.depth && node.confidence > kept.confidence) {
      kept.confidence = node.confidence;
      kept.parent = node.parent;
      kept.via = node.via;
    }
  }
  const edges = new Map<string, GraphEdge>();
  for (const e of walk.edges.values()) {
    const [from, to] = [id(e.from), id(e.to)];
    if (from === to) continue;
    const key = `${from}|${e.property}|${to}`;
    const prev = edges.get(key);
    if (!prev || prev.weight < e.weight) edges.set(key, { ...e, from, to });
  }
  walk.nodes = nodes;
  walk.edges = edges;
  walk.fetched = new Map([...walk.fetched].map(([x, e]) => [id(x), e]));
}

/** The three most confident nodes of each depth, each with its real path (names and relations) from the seed. */
export function sampleDegrees(nodes: Map<string, WalkNode>, maxDepth: number) {
  const pathTo = (id: string) => {
    const names: string[] = [];
    const relations: string[] = [];
    for (let n = nodes.get(id); n; n = n.parent ? nodes.get(n.parent) : undefined) {
      names.unshift(n.name);
      if (n.via) relations.unshift(n.via);
    }
    return { names, relations };
  };
  const sample: { depth: number; path: string[]; relations: string[] }[] = [];
  const all = [...nodes.values()];
  for (let depth = 1; depth <= maxDepth; depth++) {
    const layer = all.filter((n) => n.depth === depth).sort((a, b) => b.confidence - a.confidence);
    for (const n of layer.slice(0, 3)) {
      const { names, relations } = pathTo(n.id);
      sample.push({ depth, path: names, relations });
    }
  }
  return sample;
}
