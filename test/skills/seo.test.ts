import { describe, expect, it } from "vitest";
import { WEIGHTS } from "../../src/skills/lib/seo-weights";
import { skillById } from "../../src/skills/registry";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { detailOf, postJson, postJsonSettled } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

interface SeoBody {
  skill: string;
  url: string;
  keywords: string[];
  score: number;
  recommendations: string[];
  final_url: string;
  keywords_extracted: boolean;
  score_breakdown: Record<string, number>;
  checks: Record<string, unknown>;
  cache: "hit" | "miss";
}

async function audit(url: string, keywords: string[] | null = null) {
  const res = await postJsonSettled("/api/skills/seo", { url, keywords });
  expect(res.status).toBe(200);
  return res.json<SeoBody>();
}

describe("seo on fixture pages", () => {
  it(
    "the weights add up to 100",
    () => {
      expect(Object.values(WEIGHTS).reduce((a, b) => a + b, 0)).toBe(100);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the catalog example is its real output on a page shaped like example.com",
    async () => {
      const skill = skillById("seo");
      const { cache, ...body } = await audit(`${FIXTURE}/pages/example-domain.html`, ["example"]);
      const { cache: _, ...expected } = JSON.parse(
        JSON.stringify(skill?.example_response).replaceAll(
          "https://example.com/",
          `${FIXTURE}/pages/example-domain.html`,
        ),
      );
      expect(body).toEqual(expected);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a well-built page scores 100 with nothing to recommend",
    async () => {
      const body = await audit(`${FIXTURE}/pages/good.html`, ["Solar Panels"]);
      expect(body).toMatchObject({
        skill: "seo",
        keywords: ["solar panels"],
        score: 100,
        recommendations: [],
      });
      expect(body.score_breakdown).toEqual(WEIGHTS);
      expect(body.checks).toMatchObject({
        title: { length: 48 },
        h1_count: 1,
        lang: "en",
        links: { internal: 1, external: 1 },
        images: { total: 2, missing_alt: 0 },
        structured_data: { types: ["Article"] },
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a poor page gets a low score and specific, actionable recommendations",
    async () => {
      const body = await audit(`${FIXTURE}/pages/poor.html`, ["solar"]);
      expect(body.score).toBeLessThan(30);
      expect(body.recommendations).toEqual(
        expect.arrayContaining([
          "Shorten the title to 60 characters or fewer (it has 86); search results cut it.",
          "Add a meta description of 70-160 characters summarising the page.",
          'Use exactly one <h1> (found 2: "Welcome", "Products"); make the others <h2>.',
          'Fix the heading order: <h3> "Details" follows <h1> (skips a level).',
          'Remove "noindex" from the robots meta tag ("noindex, nofollow") if this page should appear in search results.',
          'Declare the page language on the root element, e.g. <html lang="en">.',
          'Add alt text to 2 of 3 images (/a.jpg, /b.jpg); use alt="" only for decorative ones.',
          "Fix 1 JSON-LD block(s) that are not valid JSON; search engines ignore them.",
          "Expand the main content: 8 words of text; aim for at least 300.",
          'Use the keyword "solar" in the title, the <h1>, the meta description.',
          'The keyword "solar" does not occur in the body text; cover it.',
        ]),
      );
      expect(body.score_breakdown).toMatchObject({
        robots: 0,
        lang: 0,
        h1: 4,
        heading_order: 0,
        keywords: 0,
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it("checks the first 20 distinct keywords of a list of any length, in one pass (600k used to take minutes)", {
    timeout: 30_000,
  }, async () => {
    const many = [" Solar  Panels ", "solar panels", ...Array.from({ length: 300_000 }, (_, i) => `k${i}`)];
    const body = await audit(`${FIXTURE}/pages/good.html`, many);
    expect(body.keywords).toEqual(["solar panels", ...Array.from({ length: 19 }, (_, i) => `k${i}`)]);
    expect(body.keywords_extracted).toBe(false);
  });

  it(
    "null keywords are extracted from the page",
    async () => {
      const body = await audit(`${FIXTURE}/pages/good.html`, null);
      expect(body.keywords_extracted).toBe(true);
      expect(body.keywords).toHaveLength(5);
      expect(body.keywords).toContain("solar");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "follows a same-host redirect and audits the final page",
    async () => {
      const body = await audit(`${FIXTURE}/pages/redirect-good`, ["solar panels"]);
      expect(body.final_url).toBe(`${FIXTURE}/pages/good.html`);
      expect(body.url).toBe(`${FIXTURE}/pages/redirect-good`);
      expect(body.score).toBe(100);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a redirect to loopback is refused as a 422 on url",
    async () => {
      const res = await postJson("/api/skills/seo", { url: `${FIXTURE}/pages/redirect-loopback` });
      expect(res.status).toBe(422);
      const [item] = await detailOf(res);
      expect(item).toMatchObject({ loc: ["body", "url"], type: "url_refused" });
      expect(item?.msg).toMatch(
        /redirect to http:\/\/127\.0\.0\.1:9\/admin refused: host 127\.0\.0\.1 is a loopback/,
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a page that is not HTML is a 422 naming its content type",
    async () => {
      const res = await postJson("/api/skills/seo", { url: `${FIXTURE}/pages/data.json` });
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({
        loc: ["body", "url"],
        type: "url_content_type",
        ctx: { content_type: "application/json" },
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([
    ["upstream-failure", 502, /the page answered HTTP 500/],
    ["missing", 502, /the page answered HTTP 404/],
    ["huge", 502, /larger than/],
    ["upstream-slow", 504, /did not answer within 1500 ms/],
  ])(
    "page %s is a %i and the caller is not charged",
    async (page, status, detail) => {
      const res = await postJson("/api/skills/seo", { url: `${FIXTURE}/pages/${page}` });
      expect(res.status).toBe(status);
      const body = await res.json<{ detail: string; charged: boolean }>();
      expect(body.detail).toMatch(detail);
      expect(body.charged).toBe(false);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a second identical call is served from KV without fetching the page again",
    async () => {
      const url = `${FIXTURE}/pages/good.html?cache-test=${crypto.randomUUID()}`;
      const first = await audit(url, ["solar panels"]);
      expect(first.cache).toBe("miss");
      expect(await upstreamRequests(url.slice(FIXTURE.length))).toBe(1);
      const second = await audit(`${url}#fragment`, [" Solar  panels "]);
      expect(second.cache).toBe("hit");
      expect(second.score).toBe(first.score);
      expect(await upstreamRequests(url.slice(FIXTURE.length))).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "no keywords, an empty list and a list of blanks are one cache entry: each has the page's own keywords extracted",
    async () => {
      const url = `${FIXTURE}/pages/good.html?cache-none=${crypto.randomUUID()}`;
      const none = await audit(url, null);
      const empty = await audit(url, []);
      const blanks = await audit(url, ["  ", ""]);
      expect([none.cache, empty.cache, blanks.cache]).toEqual(["miss", "hit", "hit"]);
      expect(none.keywords_extracted).toBe(true);
      const { cache: _n, ...answer } = none;
      for (const other of [empty, blanks])
        expect({ ...other, cache: undefined }).toEqual({ ...answer, cache: undefined });
      // Fetched once: the empty list was a second entry for the same answer, and a second fetch.
      expect(await upstreamRequests(url.slice(FIXTURE.length))).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("pages that declare their encoding only in a <meta> (read as browsers read them)", () => {
  // Served as text/html without a charset: the page was decoded as UTF-8, its accents and kanji
  // turned into U+FFFD, and the keyword checks failed on the page's own title.
  it(
    "a windows-1252 page with <meta charset>: its title and where its keyword stands",
    async () => {
      const body = await audit(`${FIXTURE}/pages/cp1252-meta.html`, ["Crème brûlée"]);
      const title = "Crème brûlée: la recette “maison” à 5 €";
      expect(body.checks.title).toEqual({ text: title, length: [...title].length });
      expect(body.checks.keywords).toEqual([
        expect.objectContaining({
          keyword: "crème brûlée",
          in_title: true,
          in_h1: true,
          in_description: true,
        }),
      ]);
      expect(JSON.stringify(body)).not.toContain("\uFFFD");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a Shift_JIS page with <meta http-equiv=Content-Type> (a <meta charset> in a comment does not count)",
    async () => {
      const body = await audit(`${FIXTURE}/pages/shift_jis-http-equiv.html`, ["天気予報"]);
      expect(body.checks.title).toEqual({ text: "天気予報 - 東京", length: 9 });
      const [report] = body.checks.keywords as { in_title: boolean; in_h1: boolean; body_count: number }[];
      expect(report).toMatchObject({ keyword: "天気予報", in_title: true, in_h1: true });
      expect(report?.body_count).toBeGreaterThan(0);
      expect(JSON.stringify(body)).not.toContain("\uFFFD");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the header's charset wins over a <meta>, and a byte order mark over both",
    async () => {
      for (const page of ["header-charset.html", "utf16-bom.html"]) {
        const body = await audit(`${FIXTURE}/pages/${page}`, ["crème brûlée"]);
        expect((body.checks.title as { text: string }).text, page).toBe(
          "Crème brûlée: la recette “maison” à 5 €",
        );
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "ai_detector reads the same page's text in its encoding",
    async () => {
      const res = await postJson("/api/skills/ai-detector", { url: `${FIXTURE}/pages/cp1252-meta.html` });
      expect(res.status).toBe(200);
      const { text_preview } = await res.json<{ text_preview: string }>();
      expect(text_preview).toContain("Une crème brûlée réussie tient à trois choses");
    },
    SKILL_TEST_TIMEOUT,
  );
});
