import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { skillById } from "../../src/skills/registry";
import { callsLeft, keyWith } from "../fixtures/credits";
// @ts-expect-error plain JS fixture data
import { ARTICLES } from "../fixtures/upstream-data.mjs";
import { unique, upstreamRequests } from "../fixtures/upstream-requests";
import { detailOf, postJson, postJsonSettled } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

interface ResearchBody {
  skill: string;
  query: string;
  summary: string;
  sources: { title: string; url: string }[];
  confidence: number;
  sentences: { text: string; source: string; score: number }[];
  note?: string;
  cache: "hit" | "miss";
}
const extracts: string[] = (ARTICLES as { extract: string }[]).map((a) => a.extract);

async function research(query: string) {
  const res = await postJsonSettled("/api/skills/research", { query });
  expect(res.status).toBe(200);
  return res.json<ResearchBody>();
}

describe("research on the Wikipedia fixture", () => {
  it(
    "the catalog example is its real output",
    async () => {
      const skill = skillById("research");
      const res = await postJson("/api/skills/research", skill?.example_request);
      const { cache, ...body } = await res.json<ResearchBody>();
      const { cache: _, ...expected } = (skill?.example_response ?? {}) as Record<string, unknown>;
      expect(body).toEqual(expected);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "summarises only sentences that exist in the sources, ranked and de-duplicated",
    async () => {
      const body = await research("x402 payment protocol");
      expect(body.sources.map((s) => s.title)).toEqual(["HTTP 402", "Micropayment"]);
      expect(body.sources[0]?.url).toBe("https://en.wikipedia.org/wiki/HTTP_402");
      // No invented text: every sentence is verbatim from an extract, and the summary is them joined.
      for (const s of body.sentences)
        expect(
          extracts.some((e) => e.includes(s.text)),
          s.text,
        ).toBe(true);
      expect(body.summary).toBe(body.sentences.map((s) => s.text).join(" "));
      // Ranked by relevance.
      const scores = body.sentences.map((s) => s.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      expect(body.sentences[0]?.text).toMatch(/x402 payment protocol/);
      // The near-identical sentence of the second article is dropped as a duplicate.
      expect(body.summary.match(/x402 payment protocol/g)).toHaveLength(1);
      expect(body.confidence).toBeGreaterThan(0.5);
      expect(body.confidence).toBeLessThanOrEqual(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "confidence reflects coverage: a query only partly covered scores lower",
    async () => {
      const full = await research("x402 payment protocol");
      const partial = await research("stablecoin circle volatility");
      expect(partial.sources.map((s) => s.title)).toEqual([]);
      expect(partial.confidence).toBe(0);
      const single = await research("stablecoin");
      expect(single.sources.map((s) => s.title)).toEqual(["Stablecoin"]);
      expect(single.confidence).toBeLessThan(full.confidence);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "no article found is a clear 200 with confidence 0",
    async () => {
      const body = await research("qwxzv nonexistent topic");
      expect(body).toMatchObject({ sources: [], confidence: 0, sentences: [] });
      expect(body.summary).toMatch(
        /^No Wikipedia article matched "qwxzv nonexistent topic"; nothing to summarise/,
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a query longer than Wikipedia's 300-character search limit is searched by its keywords",
    async () => {
      // The fixture, like Wikipedia, refuses a search over 300 characters (that would be a 502 here).
      const query = "Stablecoin, stablecoin. ".repeat(20);
      expect(query.length).toBeGreaterThan(300);
      const body = await research(query);
      expect(body.sources.map((s) => s.title)).toContain("Stablecoin");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an upstream 500 is a 502 JSON error and the caller is not charged",
    async () => {
      const res = await postJson("/api/skills/research", { query: "upstream-failure" });
      expect(res.status).toBe(502);
      expect(await res.json()).toEqual({ detail: "Wikipedia answered HTTP 500", charged: false });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a slow upstream is a 504",
    async () => {
      const res = await postJson("/api/skills/research", { query: "upstream-slow" });
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({ charged: false });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a second identical call (modulo case and spaces) is served from KV without an upstream request",
    async () => {
      const query = unique("stablecoin");
      const first = await research(query);
      expect(first.cache).toBe("miss");
      expect(await upstreamRequests(`srsearch=${query}&`)).toBe(1);
      const second = await research(`  ${query.toUpperCase()} `);
      expect(second.cache).toBe("hit");
      expect(second.query).toBe(`  ${query.toUpperCase()} `);
      // The same answer, but for what quotes the caller (no article matches: the summary quotes it).
      const { query: _q1, summary: _s1, cache: _c1, ...rest } = first;
      const { query: _q2, summary: _s2, cache: _c2, ...secondRest } = second;
      expect(secondRest).toEqual(rest);
      expect(await upstreamRequests(`srsearch=${query}&`)).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each(["insource", "intitle"])(
    "an %s:/…/ regex keeps its case in the cache key: CirrusSearch matches it case-sensitively",
    async (keyword) => {
      const tag = crypto.randomUUID().slice(0, 8);
      const upper = await research(`${keyword}:/Payment ${tag}/`);
      const lower = await research(`${keyword}:/payment ${tag}/`);
      const spaced = await research(`  ${keyword}:/Payment   ${tag}/ `);
      // Two searches: the lowercase regex was answered from the first one's entry.
      expect([upper.cache, lower.cache, spaced.cache]).toEqual(["miss", "miss", "hit"]);
      expect(await upstreamRequests(`srsearch=${keyword}:/Payment ${tag}/&`)).toBe(1);
      expect(await upstreamRequests(`srsearch=${keyword}:/payment ${tag}/&`)).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "linksto:, morelike: and deepcat: keep their case in the cache key (exact titles); incategory:, hastemplate: and prefix: do not",
    async () => {
      const tag = crypto.randomUUID().slice(0, 8);
      const upper = await research(`linksto:"Payment Rail ${tag}"`);
      const lower = await research(`linksto:"Payment rail ${tag}"`);
      expect([upper.cache, lower.cache]).toEqual(["miss", "miss"]);
      expect(await upstreamRequests(`srsearch=linksto:"Payment Rail ${tag}"&`)).toBe(1);
      expect(await upstreamRequests(`srsearch=linksto:"Payment rail ${tag}"&`)).toBe(1);
      // Exact titles too: the articles morelike: looks up, the category deepcat: walks from.
      for (const keyword of ["morelike", "morelikethis", "deepcat", "deepcategory", "MoreLike"]) {
        const first = await research(`${keyword}:Payment Rail ${tag}`);
        const second = await research(`${keyword}:payment rail ${tag}`);
        expect([first.cache, second.cache]).toEqual(["miss", "miss"]);
      }
      // Matched lowercased by CirrusSearch: one entry for both spellings.
      for (const keyword of ["incategory", "hastemplate", "prefix"]) {
        const first = await research(`${keyword}:"Payment Rail ${tag}"`);
        const second = await research(`${keyword}:"payment rail ${tag}"`);
        expect([first.cache, second.cache]).toEqual(["miss", "hit"]);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a cached no-match answer quotes each caller's own spelling of the query, never the first caller's",
    async () => {
      // One cache entry: NFC, lowercased, spaces collapsed. The summary once quoted the first spelling.
      const tag = unique("nomatchxyz");
      const first = await research(`Zzqv \u00dcn\u00efcode ${tag}`);
      const second = await research(`zzqv  U\u0308n\u00efcode ${tag.toUpperCase()}`);
      expect([first.cache, second.cache]).toEqual(["miss", "hit"]);
      expect(first.summary).toMatch(`No Wikipedia article matched "Zzqv \u00dcn\u00efcode ${tag}";`);
      expect(second.summary).toMatch(
        `No Wikipedia article matched "zzqv  U\u0308n\u00efcode ${tag.toUpperCase()}";`,
      );
      expect(second).toMatchObject({ sources: [], confidence: 0, note: "empty search result" });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("Wikipedia answers of the wrong shape (a broken or hostile upstream)", () => {
  // Each of these threw a TypeError inside the skill: a 500. Now the answer is read defensively:
  // a top level that is not an object is a 502 that names the upstream, odd entries are skipped.
  it.each(["hostile-null", "hostile-null-hit", "hostile-number", "hostile-null-query", "hostile-pages"])(
    "%s: never a 500",
    async (seed) => {
      const res = await postJson("/api/skills/research", { query: seed });
      expect(res.status, await res.clone().text()).not.toBe(500);
      expect([200, 404, 422, 502]).toContain(res.status);
      if (res.status === 502) expect((await res.json<{ detail: string }>()).detail).toContain("Wikipedia");
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("a query Wikipedia refuses is the caller's, not an upstream failure", () => {
  // Wikipedia answers these with HTTP 200 and {"error": …}; they were a 502 counted as ours.
  it(
    "a query of spaces only is a 200 'nothing matched' answer, without a search",
    async () => {
      const before = await upstreamRequests("srsearch=&");
      const body = await research(" \t\n  ");
      expect(body).toMatchObject({ sources: [], confidence: 0, sentences: [], total_hits: 0 });
      expect(body.note).toBe("empty search result");
      expect(body.summary).toMatch(/no words to search for/);
      // The fixture, like Wikipedia, refuses srsearch= with missingparam: it was never asked.
      expect(await upstreamRequests("srsearch=&")).toBe(before);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a search CirrusSearch cannot parse is a 422 on query with Wikipedia's reason",
    async () => {
      const query = "insource:/[/ x";
      const res = await postJson("/api/skills/research", { query });
      expect(res.status).toBe(422);
      const [item, ...rest] = await detailOf(res);
      expect(rest).toEqual([]);
      expect(item).toEqual({
        loc: ["body", "query"],
        msg: "Wikipedia cannot search this query: Regular expression syntax error at 1: expected ']'",
        type: "search_refused",
        input: query,
        ctx: {
          reason: "Regular expression syntax error at 1: expected ']'",
          code: "cirrussearch-regex-syntax-error",
        },
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the refused search costs a card credit nothing and is logged as validation, not as an upstream failure",
    async () => {
      const app = createApp();
      const paid = { ...env, FREE_BETA: "false" };
      const key = await keyWith(env.DB, 2, "research");
      const call = async (query: string) => {
        const ctx = createExecutionContext();
        const res = await app.fetch(
          new Request("https://skills.test/api/skills/research", {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
            body: JSON.stringify({ query }),
          }),
          paid,
          ctx,
        );
        await waitOnExecutionContext(ctx);
        return res;
      };
      const t0 = Date.now();
      expect((await call("insource:/[/ x")).status).toBe(422);
      // A real Wikipedia failure stays ours.
      expect((await call("upstream-failure")).status).toBe(502);
      expect(await callsLeft(env.DB, key)).toBe(2);
      // Up to now: test/stats/call-stats.test.ts seeds research's card-credit calls in 2031.
      const { results } = await env.DB.prepare(
        "SELECT status, outcome FROM call_log WHERE skill = 'research' AND at BETWEEN ?1 AND ?2 AND payment_method = 'card_credit' ORDER BY id",
      )
        .bind(t0, Date.now())
        .all();
      expect(results).toEqual([
        { status: 422, outcome: "validation" },
        { status: 502, outcome: "upstream" },
      ]);
    },
    SKILL_TEST_TIMEOUT,
  );
});
