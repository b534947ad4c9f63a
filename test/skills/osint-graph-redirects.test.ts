import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Merged Wikidata items: wbgetentities answers an old id under the id asked, with the item it now
 * redirects to (`{"Q53265341": {"redirects": {"from": "Q53265341", "to": "Q11036"}, "id": "Q11036",
 * …}}`), and statements of other items may still name the old id. A stub of fetch serves these
 * items (ids the fixture Wikidata does not hold) in that shape.
 */

type Item = [label: string, claims: Record<string, string[]>];
const ITEMS: Record<string, Item> = {
  Q91000002: ["Merged Works", { P112: ["Q91000003"], P463: ["Q91000005"] }],
  Q91000003: ["Ada Merged", { P31: ["Q5"], P108: ["Q91000002"], P463: ["Q91000004"] }],
  Q91000005: ["Merged Guild", { P31: ["Q91000006"] }],
  Q91000006: ["guild", {}],
  Q5: ["human", {}],
};
/** Old id → the item it was merged into. */
const REDIRECTS: Record<string, string> = { Q91000001: "Q91000002", Q91000004: "Q91000005" };

function entity(asked: string, props: string[]) {
  const id = REDIRECTS[asked] ?? asked;
  const item = ITEMS[id];
  if (!item) return { id: asked, missing: "" };
  const [label, claims] = item;
  const out: Record<string, unknown> = { type: "item", id };
  if (id !== asked) out.redirects = { from: asked, to: id };
  if (props.includes("labels")) out.labels = { en: { language: "en", value: label } };
  if (props.includes("descriptions")) out.descriptions = {};
  if (props.includes("claims"))
    out.claims = Object.fromEntries(
      Object.entries(claims).map(([p, targets]) => [
        p,
        targets.map((t, n) => ({
          mainsnak: {
            snaktype: "value",
            property: p,
            datavalue: { value: { "entity-type": "item", id: t }, type: "wikibase-entityid" },
            datatype: "wikibase-item",
          },
          type: "statement",
          id: `${id}$${p}-${n}`,
          rank: "normal",
        })),
      ]),
    );
  return out;
}

function serveWikidata() {
  const asked: string[][] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new URL(new Request(input, init).url);
    const q = url.searchParams;
    const ids = (q.get("ids") ?? "").split("|");
    if (!url.href.startsWith(env.WIKIDATA_API_BASE) || !ids.some((id) => id.startsWith("Q9100000")))
      return real(input, init);
    asked.push(ids);
    const props = (q.get("props") ?? "").split("|");
    const body = { entities: Object.fromEntries(ids.map((id) => [id, entity(id, props)])), success: 1 };
    return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  });
  return asked;
}

afterEach(() => {
  vi.restoreAllMocks();
});

interface OsintBody {
  graph: {
    nodes: { id: string; name: string; depth: number }[];
    edges: { from: string; to: string; property: string }[];
  };
  degrees_sample: { depth: number; path: string[] }[];
  sources: string[];
  match: { id: string; label: string } | null;
  requests: number;
}

describe("osint_graph on merged Wikidata items", () => {
  it(
    "a seed that is an old id is graphed once, under the item it redirects to",
    async () => {
      const asked = serveWikidata();
      const res = await postJson("/api/skills/osint-graph", { seed_entity: "Q91000001", max_depth: 2 });
      expect(res.status).toBe(200);
      const body = await res.json<OsintBody>();
      const ids = body.graph.nodes.map((n) => n.id);
      // One node per item: the seed's old id and a statement's old id are the items they became.
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(["Q5", "Q91000002", "Q91000003", "Q91000005", "Q91000006"]);
      expect(body.match).toMatchObject({ id: "Q91000002", label: "Merged Works" });
      expect(body.graph.nodes.find((n) => n.id === "Q91000002")?.depth).toBe(0);
      // Edges join nodes of the graph, each once, none from an item to itself.
      const keys = body.graph.edges.map((e) => `${e.from}|${e.property}|${e.to}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.sort()).toEqual([
        "Q91000002|P112|Q91000003",
        "Q91000002|P463|Q91000005",
        "Q91000003|P108|Q91000002",
        "Q91000003|P31|Q5",
        "Q91000003|P463|Q91000005",
        "Q91000005|P31|Q91000006",
      ]);
      expect(new Set(body.sources).size).toBe(body.sources.length);
      expect(body.sources.some((s) => /Q9100000[14]$/.test(s))).toBe(false);
      for (const s of body.degrees_sample) expect(s.path[0]).toBe("Merged Works");
      // No more requests than before: the claims of two layers and the labels of one leaf.
      expect(body.requests).toBeLessThanOrEqual(3);
      expect(asked.length).toBe(body.requests);
    },
    SKILL_TEST_TIMEOUT,
  );
});
