import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ResearchResult } from "../../src/skills/research";
import { unique } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Pages the fixture Wikipedia does not hold: a disambiguation page among the hits, and hits whose
 * intro extracts are empty. A stub of fetch answers the two requests research makes (list=search,
 * then prop=extracts|info…) in the real API's formatversion=2 shapes; pageprops come back only when
 * asked for, as the real API sends them (`"pageprops": {"disambiguation": ""}`).
 */

interface Page {
  pageid: number;
  title: string;
  extract: string;
  disambiguation?: true;
}

const MERCURY: Page[] = [
  {
    pageid: 910001,
    title: "Mercury",
    disambiguation: true,
    extract:
      "Mercury commonly refers to:\nMercury (planet), the planet closest to the Sun.\nMercury (element), a metallic chemical element with the symbol Hg.\nMercury (mythology), a Roman god of commerce and communication.",
  },
  {
    pageid: 910002,
    title: "Mercury (planet)",
    extract:
      "Mercury is the first planet from the Sun and the smallest planet in the Solar System. Mercury has no natural satellites and a thin exosphere.",
  },
  {
    pageid: 910003,
    title: "Mercury (element)",
    extract:
      "Mercury is a chemical element; it has symbol Hg and atomic number 80. Mercury is the only metallic element that is liquid at standard temperature and pressure.",
  },
  {
    pageid: 910004,
    title: "Mercury (mythology)",
    extract:
      "Mercury is a major god in Roman religion and mythology, being one of the 12 Dii Consentes within the ancient Roman pantheon.",
  },
  {
    pageid: 910005,
    title: "Freddie Mercury",
    extract:
      "Freddie Mercury was a British singer and songwriter who achieved global fame as the lead vocalist of Queen.",
  },
];

/** Serves `pages` (in this search rank) for searches of `query`; returns the requests it answered. */
function serveWikipedia(query: string, pages: Page[]) {
  const seen: URL[] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new URL(new Request(input, init).url);
    if (!url.href.startsWith(env.WIKIPEDIA_API_BASE)) return real(input, init);
    const q = url.searchParams;
    const json = (body: unknown) =>
      new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
    if (q.get("list") === "search" && q.get("srsearch") === query) {
      seen.push(url);
      const limit = Number(q.get("srlimit") ?? 10);
      return json({
        batchcomplete: true,
        query: {
          searchinfo: { totalhits: pages.length },
          search: pages.slice(0, limit).map((p) => ({ ns: 0, title: p.title, pageid: p.pageid })),
        },
      });
    }
    const ids = (q.get("pageids") ?? "").split("|").map(Number);
    const asked = pages.filter((p) => ids.includes(p.pageid));
    if (asked.length === 0) return real(input, init);
    seen.push(url);
    const props = (q.get("prop") ?? "").split("|");
    const wantDisambiguation =
      props.includes("pageprops") &&
      (q.get("ppprop") ?? "disambiguation").split("|").includes("disambiguation");
    return json({
      batchcomplete: true,
      query: {
        pages: asked
          .sort((a, b) => a.pageid - b.pageid)
          .map((p) => ({
            pageid: p.pageid,
            ns: 0,
            title: p.title,
            fullurl: `https://en.wikipedia.org/wiki/${encodeURIComponent(p.title.replaceAll(" ", "_"))}`,
            extract: p.extract,
            ...(wantDisambiguation && p.disambiguation ? { pageprops: { disambiguation: "" } } : {}),
          })),
      },
    });
  });
  return seen;
}

type ResearchBody = ResearchResult;

async function research(query: string) {
  const res = await postJson("/api/skills/research", { query });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json<ResearchBody>();
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("research reads articles, not disambiguation pages", () => {
  it(
    "a disambiguation page ranked first is left out and three articles remain, in two requests",
    async () => {
      // "Mercury" plus a word every page holds for the stub: a query of its own (no cache entry).
      const query = unique("Mercury");
      const requests = serveWikipedia(query, MERCURY);
      const body = await research(query);
      // The list of meanings ("Mercury commonly refers to: …") is no summary of anything.
      expect(body.summary).not.toMatch(/commonly refers to/);
      expect(body.sentences.map((s) => s.source)).not.toContain("Mercury");
      expect(body.sources.map((s) => s.title)).not.toContain("Mercury");
      // The three articles after it are read, in search rank.
      const read = new Set(body.sentences.map((s) => s.source));
      expect([...read].every((t) => MERCURY.slice(1, 4).some((p) => p.title === t))).toBe(true);
      expect(read.has("Mercury (planet)")).toBe(true);
      // Still one search and one extracts request.
      expect(requests).toHaveLength(2);
      const extracts = requests[1];
      expect(extracts?.searchParams.get("pageids")?.split("|")).toContain("910001");
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("research whose articles have no intro text", () => {
  it(
    "is answered as no match, with the note, not an empty summary",
    async () => {
      const query = unique("Blankpage");
      serveWikipedia(
        query,
        MERCURY.slice(1, 4).map((p) => ({ ...p, extract: "" })),
      );
      const body = await research(query);
      expect(body).toMatchObject({ sources: [], confidence: 0, sentences: [], note: "empty search result" });
      expect(body.summary).toMatch(/^No Wikipedia article matched ".+"; nothing to summarise/);
    },
    SKILL_TEST_TIMEOUT,
  );
});
