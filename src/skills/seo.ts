import * as z from "zod";
import { InputError, listOf } from "../http/validation";
import { cached } from "./lib/cache";
import { loadPage, precheckUrl } from "./lib/page";
import { WEIGHTS } from "./lib/seo-weights";
import { cacheState, defineSkill, numberPerKey } from "./types";

export const seo = defineSkill({
  id: "seo",
  name: "SEO audit",
  category: "marketing",
  price_usd: 0.012,
  kind: "analytic",
  description:
    "Fetch a public web page and audit it: title and meta description, h1 and heading order, canonical, robots, language, viewport, Open Graph and Twitter tags, image alt coverage, structured data, word count, links, and keyword placement and density. Returns a 0-100 score from documented weights and specific recommendations. Private addresses are refused.",
  input: () =>
    z.object({
      url: z.string().min(1).max(2000).meta({ description: "Absolute http(s) URL of the page to audit." }),
      // No length bound in the spec: any number of strings is taken (the audit reads the first 20),
      // but a list of bad items is judged only up to its first 100 (listOf).
      keywords: listOf(z.string(), (list) =>
        list
          .nullable()
          .default(null)
          .meta({ description: "Keywords to check (first 20); null or [] extracts five from the page." }),
      ),
    }),
  output: () =>
    z.object({
      url: z.string(),
      keywords: z.array(z.string()).meta({
        description:
          "The keywords checked (given, or extracted from the title and the first 200,000 characters of text).",
      }),
      score: z.int().min(0).max(100),
      recommendations: z.array(z.string()),
      final_url: z.string().meta({ description: "The address after redirects." }),
      keywords_extracted: z.boolean(),
      score_breakdown: numberPerKey(WEIGHTS).meta({ description: "Points per check (weights in the docs)." }),
      checks: z.object({
        title: z.object({ text: z.string().nullable(), length: z.int().min(0) }),
        meta_description: z.object({ text: z.string().nullable(), length: z.int().min(0) }),
        headings: z
          .array(z.object({ level: z.int().min(1).max(6), text: z.string() }))
          .meta({ description: "The first 30 headings, each its first 2,000 characters." }),
        h1_count: z.int().min(0),
        canonical: z.string().nullable(),
        robots: z.string().nullable().meta({
          description:
            'Every robots meta tag\'s content, lowercased, distinct ones joined with ", " (first 500 characters).',
        }),
        x_robots_tag: z.string().nullable().meta({
          description: "The page's X-Robots-Tag response header (first 500 characters); null when absent.",
        }),
        lang: z.string().nullable(),
        viewport: z.boolean(),
        open_graph: z.record(z.string(), z.string()).meta({
          description:
            "og:* tags, each key's first value: the page's first 50 keys, and og:title, og:description and og:image wherever they stand.",
        }),
        twitter: z.record(z.string(), z.string()).meta({
          description: "twitter:* tags, each key's first value: the page's first 50 keys, and twitter:card.",
        }),
        images: z.object({
          total: z.int().min(0),
          missing_alt: z.int().min(0),
          alt_coverage: z.number().min(0).max(1),
        }),
        structured_data: z.object({
          json_ld_blocks: z.int().min(0),
          invalid_json_ld: z.int().min(0),
          types: z.array(z.string()),
          microdata_items: z.int().min(0),
        }),
        word_count: z.int().min(0).meta({
          description:
            "Words of the page's text (Unicode word boundaries). Past 200,000 characters of text an estimate: the words of the first 200,000, scaled to the text's length.",
        }),
        links: z.object({ internal: z.int().min(0), external: z.int().min(0) }),
        keywords: z.array(
          z.object({
            keyword: z.string(),
            in_title: z.boolean(),
            in_h1: z.boolean(),
            in_description: z.boolean(),
            body_count: z
              .int()
              .min(0)
              .meta({ description: "Occurrences in the first 200,000 characters of the page's text." }),
            density_percent: z
              .number()
              .min(0)
              .meta({ description: "Share of those characters' words the occurrences make up." }),
          }),
        ),
      }),
      cache: cacheState,
    }),
  example_request: { url: "https://example.com/", keywords: ["example"] },
  // A real output of this code for example_request on the fixture upstreams of test/fixtures;
  // a test compares it with a fresh run, so it cannot drift.
  example_response: {
    skill: "seo",
    url: "https://example.com/",
    keywords: ["example"],
    score: 46,
    recommendations: [
      'Lengthen the title to at least 30 characters (it has 14): "Example Domain".',
      "Add a meta description of 70-160 characters summarising the page.",
      'Add <link rel="canonical" href="https://example.com/"> to name the preferred URL.',
      'Declare the page language on the root element, e.g. <html lang="en">.',
      "Add Open Graph tags for link previews: og:title, og:description, og:image.",
      'Add <meta name="twitter:card" content="summary_large_image">.',
      "Add schema.org structured data (JSON-LD) describing the page, e.g. Article, Product or Organization.",
      "Expand the main content: 28 words of text; aim for at least 300.",
      "Link to related pages of the same site so crawlers and readers can find them.",
      'Use the keyword "example" in the meta description.',
    ],
    final_url: "https://example.com/",
    keywords_extracted: false,
    score_breakdown: {
      title: 6,
      meta_description: 0,
      h1: 8,
      heading_order: 4,
      canonical: 0,
      robots: 8,
      lang: 0,
      viewport: 3,
      open_graph: 0,
      twitter_card: 0,
      image_alt: 8,
      structured_data: 0,
      word_count: 0.9,
      links: 2,
      keywords: 6,
    },
    checks: {
      title: {
        text: "Example Domain",
        length: 14,
      },
      meta_description: {
        text: null,
        length: 0,
      },
      headings: [
        {
          level: 1,
          text: "Example Domain",
        },
      ],
      h1_count: 1,
      canonical: null,
      robots: null,
      x_robots_tag: null,
      lang: null,
      viewport: true,
      open_graph: {},
      twitter: {},
      images: {
        total: 0,
        missing_alt: 0,
        alt_coverage: 1,
      },
      structured_data: {
        json_ld_blocks: 0,
        invalid_json_ld: 0,
        types: [],
        microdata_items: 0,
      },
      word_count: 28,
      links: {
        internal: 0,
        external: 1,
      },
      keywords: [
        {
          keyword: "example",
          in_title: true,
          in_h1: true,
          in_description: false,
          body_count: 1,
          density_percent: 3.57,
        },
      ],
    },
    cache: "miss",
  },
  async run({ url, keywords }, ctx) {
    const { env } = ctx;
    const target = precheckUrl(env, url);
    // The keywords as the audit checks them: also the cache key, so equivalent lists share it. None
    // (null), an empty list and one of blanks all have the page's own keywords extracted: one entry.
    const { givenKeywords } = await import("./lib/seo-keywords");
    const checked = givenKeywords(keywords);
    const { value, cache } = await cached(ctx, "seo", [target.href, checked], async () => {
      const doc = await loadPage(env, target.href, /^(text\/html|application\/xhtml\+xml)$/, "HTML");
      // The HTML parser (htmlparser2 and its entity tables) loads on first use, not at start-up.
      const { audit, PageTooDeep, MAX_HTML_DEPTH } = await import("./lib/seo-audit");
      // The language detector loads only when the page's own keywords are extracted.
      const keywordsOf =
        checked.length === 0 ? (await import("./lib/text-language")).keywordsInLanguage : undefined;
      try {
        return { final_url: doc.url, ...audit(doc.text, doc.url, checked, doc.robotsTag, keywordsOf) };
      } catch (e) {
        // The page the caller chose cannot be audited, as html_clean and ai_detector refuse it:
        // a 422 on url (not charged), where reading on cost the parser quadratic time.
        if (!(e instanceof PageTooDeep)) throw e;
        throw InputError.at(["url"], e.message, url, "value_error", { max_depth: MAX_HTML_DEPTH });
      }
    });
    const { keywords: used, score, recommendations, ...extra } = value;
    return { url, keywords: used, score, recommendations, ...extra, cache };
  },
});
