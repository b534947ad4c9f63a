/**
 * Points per check of the SEO audit (they sum to 100; docs/ANALYTIC_SKILLS.md). Apart from
 * seo-audit.ts so the skill's output schema can name them without loading the HTML parser.
 */
export const WEIGHTS = {
  title: 10,
  meta_description: 10,
  h1: 8,
  heading_order: 4,
  canonical: 5,
  robots: 8,
  lang: 4,
  viewport: 3,
  open_graph: 6,
  twitter_card: 3,
  image_alt: 8,
  structured_data: 5,
  word_count: 10,
  links: 6,
  keywords: 10,
} as const;
