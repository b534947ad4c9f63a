import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { osintGraph } from "../../src/skills/osint-graph";
import { skillById } from "../../src/skills/registry";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { postJson, postJsonSettled } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

interface Graph {
  nodes: { id: string; name: string; type: string; confidence: number; depth: number }[];
  edges: { from: string; to: string; relation: string; weight: number }[];
  max_depth: number;
}
interface OsintBody {
  skill: string;
  seed_entity: string;
  max_depth: number;
  disclaimer: string;
  graph: Graph;
  degrees_sample: { depth: number; path: string[] }[];
  sources: string[];
  logged_for_realization: boolean;
  confidence: number;
  truncated: boolean;
  note?: string;
  cache: "hit" | "miss";
}

async function graph(seed_entity: string, max_depth?: number) {
  const res = await postJsonSettled("/api/skills/osint-graph", { seed_entity, max_depth });
  expect(res.status).toBe(200);
  return { res, body: await res.json<OsintBody>() };
}
const ids = (b: OsintBody) => b.graph.nodes.map((n) => n.id).sort();

describe("osint_graph on the Wikidata fixture", () => {
  it(
    "the catalog example is its real output (entity URLs on the configured host)",
    async () => {
      const skill = skillById("osint_graph");
      const res = await postJson("/api/skills/osint-graph", skill?.example_request);
      const body = await res.json<OsintBody>();
      const { cache, ...rest } = body;
      const { cache: _, ...expected } = JSON.parse(
        JSON.stringify(skill?.example_response).replaceAll(
          "https://www.wikidata.org/wiki/",
          `${FIXTURE}/wiki/`,
        ),
      );
      expect(rest).toEqual(expected);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "answers every field of spec 2.4 with the right types",
    async () => {
      const { body } = await graph("Acme Holdings", 2);
      expect(body).toMatchObject({ skill: "osint_graph", seed_entity: "Acme Holdings", max_depth: 2 });
      expect(body.disclaimer).toMatch(/only from public Wikidata statements/);
      expect(body.graph.max_depth).toBe(2);
      for (const n of body.graph.nodes) {
        expect(n).toEqual(
          expect.objectContaining({
            id: expect.any(String),
            name: expect.any(String),
            type: expect.any(String),
          }),
        );
        expect(n.confidence).toBeGreaterThan(0);
        expect(n.confidence).toBeLessThanOrEqual(1);
      }
      const nodeIds = new Set(body.graph.nodes.map((n) => n.id));
      for (const e of body.graph.edges) {
        expect(nodeIds.has(e.from) && nodeIds.has(e.to)).toBe(true);
        expect(typeof e.relation).toBe("string");
        expect(e.weight).toBeGreaterThan(0);
      }
      expect(body.sources).toContain(`${FIXTURE}/wiki/Q90000001`);
      expect(body.logged_for_realization).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "max_depth 1 stops at the seed's own statements; 2 and 4 walk further",
    async () => {
      const one = (await graph("Acme Holdings", 1)).body;
      expect(ids(one)).toEqual(["Q30", "Q4830453", "Q90000001", "Q90000002", "Q90000010", "Q90000030"]);
      expect(Math.max(...one.graph.nodes.map((n) => n.depth))).toBe(1);

      const two = (await graph("Acme Holdings", 2)).body;
      expect(ids(two)).toEqual([
        "Q30",
        "Q4830453",
        "Q5",
        "Q90000001",
        "Q90000002",
        "Q90000003",
        "Q90000010",
        "Q90000011",
        "Q90000030",
      ]);
      const four = (await graph("Acme Holdings", 4)).body;
      expect(ids(four)).toEqual(expect.arrayContaining(["Q90000004", "Q90000005", "Q90000020"]));
      expect(four.graph.nodes.find((n) => n.id === "Q90000005")?.depth).toBe(4);
      // The cycle back to the seed is an edge, not a second seed node.
      expect(four.graph.nodes.filter((n) => n.id === "Q90000001")).toHaveLength(1);
      expect(four.graph.edges).toContainEqual(
        expect.objectContaining({ from: "Q90000002", to: "Q90000001", relation: "parent organization" }),
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "types, confidences, weights and real paths",
    async () => {
      const { body } = await graph("Acme Holdings", 2);
      const node = (id: string) => body.graph.nodes.find((n) => n.id === id);
      expect(node("Q90000001")).toMatchObject({ type: "organization", confidence: 1, depth: 0 });
      expect(node("Q90000010")).toMatchObject({ name: "Ada Example", type: "person" });
      expect(node("Q30")).toMatchObject({ type: "country" });
      expect(node("Q4830453")).toMatchObject({ type: "class" });
      // Preferred rank weighs 1, normal 0.8, an ended relation (P582 qualifier) half of that.
      const edge = (to: string) => body.graph.edges.find((e) => e.from === "Q90000001" && e.to === to);
      expect(edge("Q90000002")).toMatchObject({ relation: "has subsidiary", weight: 1 });
      expect(edge("Q90000010")).toMatchObject({ relation: "founded by", weight: 0.8 });
      expect(edge("Q90000030")).toMatchObject({ relation: "owned by", weight: 0.4 });
      // Confidence decays with distance: seed × 0.85 × weight per hop.
      expect(node("Q90000002")?.confidence).toBe(0.85);
      expect(node("Q90000003")?.confidence).toBe(0.578);
      // A deprecated statement is never walked.
      expect(node("Q90000099")).toBeUndefined();
      // Every sampled path starts at the seed and follows real edges.
      expect(body.degrees_sample.length).toBeGreaterThan(0);
      const byName = new Map(body.graph.nodes.map((n) => [n.name, n.id]));
      for (const { depth, path } of body.degrees_sample) {
        expect(path[0]).toBe("Acme Holdings");
        expect(path).toHaveLength(depth + 1);
        for (let i = 1; i < path.length; i++) {
          const from = byName.get(path[i - 1] as string);
          const to = byName.get(path[i] as string);
          expect(
            body.graph.edges.some((e) => e.from === from && e.to === to),
            `${path[i - 1]} -> ${path[i]}`,
          ).toBe(true);
        }
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "caps the graph at 60 nodes and says it was truncated",
    async () => {
      const { body } = await graph("Hub Conglomerate", 2);
      expect(body.graph.nodes).toHaveLength(60);
      expect(body.truncated).toBe(true);
      expect(body.graph.nodes.filter((n) => n.depth === 1)).toHaveLength(20);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a Q-id is taken as the seed without a search",
    async () => {
      const { body } = await graph("Q90000003", 1);
      expect(body.graph.nodes[0]).toMatchObject({ id: "Q90000003", name: "Acme Robotics", depth: 0 });
      expect(ids(body)).toEqual(["Q90000003", "Q90000004"]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an unknown Q-id is a clear empty answer",
    async () => {
      const { body } = await graph("Q99999999", 2);
      expect(body.graph.nodes).toEqual([]);
      expect(body.note).toBe("Wikidata has no item Q99999999; nothing to graph.");
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each(["Q99999999999", "Q2147483648", "Q0", "Q007", "q0"])(
    "a Q-id Wikibase cannot parse (%s) is answered like an unknown one, without asking Wikidata",
    async (seed) => {
      // wbgetentities refuses the whole request (no-such-entity, HTTP 200): it was a 502.
      const id = seed.toUpperCase();
      const before = await upstreamRequests(`ids=${id}&`);
      const { body } = await graph(seed, 2);
      expect(body.graph.nodes).toEqual([]);
      expect(body.note).toBe(`Wikidata has no item ${id}; nothing to graph.`);
      expect(await upstreamRequests(`ids=${id}&`)).toBe(before);
      expect(await upstreamRequests(`search=${seed}&`)).toBe(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the largest id Wikibase parses is still asked for",
    async () => {
      const { body } = await graph("Q2147483647", 1);
      expect(body.note).toBe("Wikidata has no item Q2147483647; nothing to graph.");
      expect(await upstreamRequests("ids=Q2147483647&")).toBeGreaterThan(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a seed of spaces only is a 200 with an empty graph, without a search",
    async () => {
      // Wikidata refuses search= (missingparam, HTTP 200): it was a 502.
      const before = await upstreamRequests("action=wbsearchentities&search=&");
      const { body } = await graph("  \t ", 2);
      expect(body.graph).toEqual({ nodes: [], edges: [], max_depth: 2 });
      expect(body.confidence).toBe(0);
      expect(body.note).toMatch(/no text to search for/);
      expect(await upstreamRequests("action=wbsearchentities&search=&")).toBe(before);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an alias match is a little less certain than a label match",
    async () => {
      const { body } = await graph("NYSE", 1);
      expect(body.graph.nodes[0]).toMatchObject({ id: "Q13677", confidence: 0.9 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "no match is a clear 200: empty graph, confidence 0, an explanation",
    async () => {
      const { body } = await graph("Zyxxqv Nonexistent Entity", 2);
      expect(body.graph).toEqual({ nodes: [], edges: [], max_depth: 2 });
      expect(body.degrees_sample).toEqual([]);
      expect(body.sources).toEqual([]);
      expect(body.confidence).toBe(0);
      expect(body.note).toMatch(/No Wikidata item matches "Zyxxqv Nonexistent Entity"/);
      expect(body.logged_for_realization).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an upstream 500 is a 502 JSON error and the caller is not charged",
    async () => {
      const res = await postJson("/api/skills/osint-graph", { seed_entity: "upstream-failure" });
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual({ detail: "Wikidata answered HTTP 500", charged: false });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a slow upstream is a 504",
    async () => {
      const res = await postJson("/api/skills/osint-graph", { seed_entity: "upstream-slow" });
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({
        detail: expect.stringMatching(/did not answer within 1500 ms/),
        charged: false,
      });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("names Wikidata holds only under mul (WD:MUL)", () => {
  // Many people's items carry their name only under the language code mul, which wbgetentities
  // drops from languages=en unless languagefallback is set: such nodes were named by their Q-id.
  it(
    "the fixture answers as Wikibase does: labels {} without languagefallback, mul's label for en with it",
    async () => {
      const labels = async (extra: string) => {
        const res = await fetch(
          `${FIXTURE}/wikidata/api.php?action=wbgetentities&ids=Q90000051&props=labels&languages=en&format=json${extra}`,
        );
        return (await res.json<{ entities: Record<string, { labels: unknown }> }>()).entities.Q90000051
          ?.labels;
      };
      expect(await labels("")).toEqual({});
      expect(await labels("&languagefallback=1")).toEqual({
        en: { language: "mul", value: "Mei Example", "for-language": "en" },
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "neighbours named only under mul get that name, whether read with their claims or for their labels",
    async () => {
      for (const depth of [1, 2]) {
        const { body } = await graph("Mul Example Works", depth);
        const node = (id: string) => body.graph.nodes.find((n) => n.id === id);
        expect(node("Q90000051")?.name, `depth ${depth}`).toBe("Mei Example");
        expect(node("Q90000052")?.name, `depth ${depth}`).toBe("Ola Example");
        expect(body.degrees_sample).toContainEqual(
          expect.objectContaining({ depth: 1, path: ["Mul Example Works", "Mei Example"] }),
        );
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a seed named only under mul, given by Q-id, is named in its node and its match",
    async () => {
      const { body } = await graph("Q90000051", 1);
      expect(body.graph.nodes[0]).toMatchObject({ id: "Q90000051", name: "Mei Example", depth: 0 });
      expect((body as unknown as { match: unknown }).match).toEqual({
        id: "Q90000051",
        label: "Mei Example",
        description: "fictional founder",
        match_type: "entityId",
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the search finds a name held only under mul (wbsearchentities falls back unless strictlanguage)",
    async () => {
      const { body } = await graph("Mei Example", 1);
      expect(body.graph.nodes[0]).toMatchObject({ id: "Q90000051", name: "Mei Example", confidence: 1 });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("osint_graph call log and cache", () => {
  const rows = (requestId: string) =>
    env.DB.prepare("SELECT seed_entity, max_depth, nodes FROM osint_calls WHERE request_id = ?")
      .bind(requestId)
      .all();

  it(
    "logs every call in D1, a cached one too, and the cache spares the upstream",
    async () => {
      const seed = "Acme Drones";
      const first = await graph(seed, 1);
      const searches = await upstreamRequests(`search=${seed}&`);
      expect(first.body.cache).toBe("miss");
      const second = await graph(seed, 1);
      expect(second.body.cache).toBe("hit");
      expect(await upstreamRequests(`search=${seed}&`)).toBe(searches);
      expect(second.body.graph).toEqual(first.body.graph);
      for (const { res, body } of [first, second]) {
        expect(body.logged_for_realization).toBe(true);
        const id = res.headers.get("x-request-id") as string;
        // The call, not its seed (a person's name, joined to the payer's wallet by the request id).
        expect((await rows(id)).results).toEqual([{ seed_entity: "", max_depth: 1, nodes: 2 }]);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "logged_for_realization is false when the row could not be written",
    async () => {
      const broken = {
        prepare: () => {
          throw new Error("D1 is down");
        },
      } as unknown as D1Database;
      const out = await osintGraph.run(
        { seed_entity: "Acme Parts", max_depth: 1 },
        { env: { ...env, DB: broken }, requestId: "r-broken" },
      );
      expect(out.logged_for_realization).toBe(false);
      expect((out.graph as Graph).nodes.length).toBeGreaterThan(0);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("Wikidata answers of the wrong shape (a broken or hostile upstream)", () => {
  // Each of these threw a TypeError inside the skill: a 500. Now the answer is read defensively:
  // a top level that is not an object is a 502 that names the upstream, odd entries are skipped.
  it.each(["hostile-null", "hostile-array", "hostile-null-hit", "hostile-bad-match", "hostile-entities"])(
    "%s: never a 500",
    async (seed) => {
      const res = await postJson("/api/skills/osint-graph", { seed_entity: seed });
      expect(res.status, await res.clone().text()).not.toBe(500);
      expect([200, 404, 422, 502]).toContain(res.status);
      if (res.status === 502) expect((await res.json<{ detail: string }>()).detail).toContain("Wikidata");
    },
    SKILL_TEST_TIMEOUT,
  );
});
