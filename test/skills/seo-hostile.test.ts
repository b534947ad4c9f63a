import { Parser } from "htmlparser2";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_HTML_DEPTH } from "../../src/skills/lib/html-depth";
import { MAX_HEADING_CHARS, PageTooDeep, scan } from "../../src/skills/lib/seo-scan";
import { FIXTURE } from "../fixtures/upstream-requests";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Pages a buyer's own host could serve to seo (the buyer chooses the URL, the fetcher reads up to
 * 2 MiB): each shape used to cost the audit super-linear time or answer far more than it said.
 * The pages are served by a stub of fetch on the allow-listed fixture host; the assertions are on
 * outcomes (status, what the parser was made to do, the answer's fields), never on time.
 */

/** Serves `html` at a fresh fixture URL (a fresh one per call: no cache entry is shared). */
function servePage(html: string): string {
  const path = `/pages/hostile-${crypto.randomUUID()}.html`;
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (req.url === `${FIXTURE}${path}`)
      return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
    return real(input, init);
  });
  return `${FIXTURE}${path}`;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("seo on a page nested past 512 elements", () => {
  it(
    "is a 422 on url, as html_clean and ai_detector refuse such HTML (not charged)",
    async () => {
      const url = servePage(`<html><body>${"<div>a".repeat(1000)}</body></html>`);
      const res = await postJson("/api/skills/seo", { url, keywords: ["a"] });
      expect(res.status).toBe(422);
      const [item] = await detailOf(res);
      expect(item).toMatchObject({
        loc: ["body", "url"],
        type: "value_error",
        msg: "the page is nested deeper than 512 elements",
        input: url,
        ctx: { max_depth: 512 },
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a page exactly 512 deep (a void element at the bottom counts) is audited",
    async () => {
      const url = servePage(`<html><body>${"<div>".repeat(MAX_HTML_DEPTH - 3)}<img src=/x.png>`);
      const res = await postJson("/api/skills/seo", { url, keywords: null });
      expect(res.status).toBe(200);
      const body = await res.json<{ checks: { images: { total: number } } }>();
      expect(body.checks.images.total).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the parser itself stops at the first element past the bound (its open-element stack was the quadratic part)",
    () => {
      const opened = vi.spyOn(Parser.prototype, "onopentagname");
      expect(() => scan("<b>".repeat(20_000))).toThrow(PageTooDeep);
      expect(opened).toHaveBeenCalledTimes(MAX_HTML_DEPTH + 1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "text inside a skipped element stays out of the body however the elements nest and close",
    () => {
      const s = scan(
        "<html><head><title>T</title></head><body><p>one <svg><title>not a title</title><text>no</text></svg> two" +
          "<script>nope</script><noscript><b>no</noscript> three<br></br><template><i>x</template> four</p>",
      );
      expect(s.title).toBe("T");
      expect(s.text).toBe("one two three four");
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("seo on a page whose <h1> never closes before many inline tags", () => {
  const page = `<html><body><h1>Solar ${"<i>a</i>".repeat(5000)}</body></html>`;

  it(
    "builds the heading's text once, when the heading ends, not at every close tag inside it",
    () => {
      const joins = vi.spyOn(Array.prototype, "join");
      const s = scan(page);
      const calls = joins.mock.calls.length;
      joins.mockRestore();
      // The heading's text and the body text; it was one join per </i> (5,000).
      expect(calls).toBeLessThanOrEqual(3);
      expect(s.headings).toHaveLength(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "keeps the heading's first 2,000 characters",
    async () => {
      const url = servePage(page);
      const res = await postJson("/api/skills/seo", { url, keywords: ["solar"] });
      expect(res.status).toBe(200);
      const body = await res.json<{
        checks: { headings: { level: number; text: string }[]; keywords: { in_h1: boolean }[] };
      }>();
      expect(body.checks.headings).toEqual([
        { level: 1, text: `Solar ${"a".repeat(MAX_HEADING_CHARS - 6)}` },
      ]);
      expect(body.checks.keywords[0]?.in_h1).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a heading of ordinary length is kept whole, its spaces collapsed",
    () => {
      const s = scan("<h2>\n  Solar <b>panels</b>\n\t for   <i>homes</i> </h2>");
      expect(s.headings).toEqual([{ level: 2, text: "Solar panels for homes" }]);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("seo's answer on a page of thousands of h1s or social tags", () => {
  it(
    "the advice about several <h1>s names the first three and counts the rest",
    async () => {
      const url = servePage(`<html><body>${"<h1>Heading</h1>".repeat(5000)}</body></html>`);
      const res = await postJson("/api/skills/seo", { url, keywords: ["heading"] });
      expect(res.status).toBe(200);
      const body = await res.json<{ recommendations: string[]; checks: { h1_count: number } }>();
      expect(body.checks.h1_count).toBe(5000);
      expect(body.recommendations).toContain(
        'Use exactly one <h1> (found 5000: "Heading", "Heading", "Heading", 4997 more); make the others <h2>.',
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "open_graph and twitter keep the first 50 keys of each, and the scored ones wherever they stand",
    async () => {
      const meta = (attr: string, key: string) => `<meta ${attr}="${key}" content="v-${key}">`;
      const tags = Array.from(
        { length: 2000 },
        (_, i) => meta("property", `og:k${i}`) + meta("name", `twitter:k${i}`),
      );
      const url = servePage(
        `<html><head>${tags.join("")}${meta("property", "og:title")}${meta("property", "og:description")}` +
          `${meta("property", "og:image")}${meta("name", "twitter:card")}${meta("property", "og:k0")}</head></html>`,
      );
      const res = await postJson("/api/skills/seo", { url, keywords: ["x"] });
      expect(res.status).toBe(200);
      const body = await res.json<{
        score_breakdown: Record<string, number>;
        checks: { open_graph: Record<string, string>; twitter: Record<string, string> };
      }>();
      const { open_graph, twitter } = body.checks;
      expect(Object.keys(open_graph)).toEqual([
        ...Array.from({ length: 50 }, (_, i) => `og:k${i}`),
        "og:title",
        "og:description",
        "og:image",
      ]);
      expect(open_graph["og:k0"]).toBe("v-og:k0");
      expect(Object.keys(twitter)).toEqual([
        ...Array.from({ length: 50 }, (_, i) => `twitter:k${i}`),
        "twitter:card",
      ]);
      expect(body.score_breakdown).toMatchObject({ open_graph: 6, twitter_card: 3 });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("seo on a page with more than 200,000 characters of text", () => {
  // 440,000 characters: "alpha beta" over the first half, "omega beta" over the second.
  const page = `<html><body><p>${"alpha beta ".repeat(20_000)}${"omega beta ".repeat(20_000)}</p></body></html>`;

  it(
    "counts keywords in the first 200,000 characters, densities as shares of their words",
    async () => {
      const url = servePage(page);
      const res = await postJson("/api/skills/seo", { url, keywords: ["omega", "alpha"] });
      expect(res.status).toBe(200);
      const { checks } = await res.json<{
        checks: {
          word_count: number;
          keywords: { keyword: string; body_count: number; density_percent: number }[];
        };
      }>();
      // 200,000 characters hold 18,181 "alpha beta " and "alpha bet": 36,364 words, 18,182 alphas.
      expect(checks.keywords).toEqual([
        expect.objectContaining({ keyword: "omega", body_count: 0, density_percent: 0 }),
        expect.objectContaining({ keyword: "alpha", body_count: 18_182, density_percent: 50 }),
      ]);
      // Past the bound the page's words are those counted, scaled to the text's length.
      expect(checks.word_count).toBe(Math.round((36_364 * 439_999) / 200_000));
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "extracts keywords from the same first 200,000 characters",
    async () => {
      const url = servePage(page);
      const res = await postJson("/api/skills/seo", { url, keywords: null });
      expect(res.status).toBe(200);
      const body = await res.json<{ keywords: string[]; keywords_extracted: boolean }>();
      expect(body.keywords_extracted).toBe(true);
      // 18,182 alphas, 18,181 betas and one cut "bet"; no "omega".
      expect(body.keywords).toEqual(["alpha", "beta", "bet"]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a page within the bound has its words counted exactly",
    async () => {
      const url = servePage(`<p>${"alpha beta ".repeat(18_000)}</p>`);
      const res = await postJson("/api/skills/seo", { url, keywords: ["alpha"] });
      const { checks } = await res.json<{
        checks: { word_count: number; keywords: { body_count: number }[] };
      }>();
      expect(checks.word_count).toBe(36_000);
      expect(checks.keywords[0]?.body_count).toBe(18_000);
    },
    SKILL_TEST_TIMEOUT,
  );
});
