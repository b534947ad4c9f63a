import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const seo = defineSkill({
  id: "seo",
  name: "SEO audit",
  category: "marketing",
  price_usd: 0.012,
  kind: "analytic",
  description:
    "Fetch a public web page and audit it: title and meta description, h1 and heading order, canonical, robots, language, Open Graph and Twitter tags, image alt coverage, structured data, word count, links, and keyword placement. Returns a 0-100 score from documented weights and specific recommendations.",
  input: z.object({
    url: z.string().min(1).max(2000).meta({ description: "Absolute http(s) URL of the page to audit." }),
    keywords: z
      .array(z.string())
      .nullable()
      .default(null)
      .meta({ description: "Keywords to check; null extracts them from the page." }),
  }),
  example_request: { url: "https://example.com/", keywords: ["example"] },
  example_response: {
    skill: "seo",
    url: "https://example.com/",
    keywords: ["example"],
    score: 52,
    recommendations: ["Add a meta description of 70-160 characters."],
  },
  run: () => notImplemented(),
});
