import { z } from "zod";
import { SEO_EXAMPLE } from "./analytic-examples";
import { cached } from "./cache";
import { loadPage, precheckUrl } from "./page";
import { audit } from "./seo-audit";
import { defineSkill } from "./types";

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
