import { z } from "zod";
import { cached } from "./lib/cache";
import { loadPage, precheckUrl } from "./lib/page";
import { audit, WEIGHTS } from "./lib/seo-audit";
import { SEO_EXAMPLE } from "./osint-graph.example";
import { cacheState, defineSkill, numberPerKey } from "./types";

export const seo = defineSkill({
  id: "seo",
  name: "SEO audit",
  category: "marketing",
  price_usd: 0.012,
  kind: "analytic",
  description:
    "Fetch a public web page and audit it: title and meta description, h1 and heading order, canonical, robots, language, viewport, Open Graph and Twitter tags, image alt coverage, structured data, word count, links, and keyword placement and density. Returns a 0-100 score from documented weights and specific recommendations. Private addresses are refused.",
  input: z.object({
    url: z.string().min(1).max(2000).meta({ description: "Absolute http(s) URL of the page to audit." }),
    keywords: z
      .array(z.string())
      .nullable()
      .default(null)
      .meta({ description: "Keywords to check (first 20); null or [] extracts five from the page." }),
  }),
  output: z.object({
    url: z.string(),
    keywords: z.array(z.string()).meta({ description: "The keywords checked (given, or extracted)." }),
    score: z.int().min(0).max(100),
    recommendations: z.array(z.string()),
    final_url: z.string().meta({ description: "The address after redirects." }),
    keywords_extracted: z.boolean(),
    score_breakdown: numberPerKey(WEIGHTS).meta({ description: "Points per check (weights in the docs)." }),
    checks: z.object({
      title: z.object({ text: z.string().nullable(), length: z.int().min(0) }),
      meta_description: z.object({ text: z.string().nullable(), length: z.int().min(0) }),
      headings: z.array(z.object({ level: z.int().min(1).max(6), text: z.string() })),
      h1_count: z.int().min(0),
      canonical: z.string().nullable(),
      robots: z.string().nullable(),
      lang: z.string().nullable(),
      viewport: z.boolean(),
      open_graph: z.record(z.string(), z.string()),
      twitter: z.record(z.string(), z.string()),
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
      word_count: z.int().min(0),
      links: z.object({ internal: z.int().min(0), external: z.int().min(0) }),
      keywords: z.array(
        z.object({
          keyword: z.string(),
          in_title: z.boolean(),
          in_h1: z.boolean(),
          in_description: z.boolean(),
          body_count: z.int().min(0),
          density_percent: z.number().min(0),
        }),
      ),
    }),
    cache: cacheState,
  }),
  example_request: { url: "https://example.com/", keywords: ["example"] },
  example_response: SEO_EXAMPLE,
  async run({ url, keywords }, { env }) {
    const target = precheckUrl(env, url);
    const normalized = keywords?.map((k) => k.replace(/\s+/g, " ").trim().toLowerCase()) ?? null;
    const { value, cache } = await cached(env, "seo", [target.href, normalized], async () => {
      const doc = await loadPage(env, target.href, /^(text\/html|application\/xhtml\+xml)$/, "HTML");
      return { final_url: doc.url, ...audit(doc.text, doc.url, keywords) };
    });
    const { keywords: used, score, recommendations, ...extra } = value;
    return { url, keywords: used, score, recommendations, ...extra, cache };
  },
});
