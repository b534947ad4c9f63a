import { eng } from "stopword";
import { z } from "zod";
import { defineSkill } from "./types";

const STOPWORDS = new Set<string>(eng);
const HAS_LETTER = /\p{L}/u;
// One segmenter per isolate: Intl.Segmenter implements Unicode word boundaries (UAX #29), CJK included.
let segmenter: Intl.Segmenter | undefined;

/** Counts meaningful terms: word-like segments, lowercased, minus stopwords, numbers and lone ASCII letters. */
export function extractKeywords(text: string, limit: number) {
  segmenter ??= new Intl.Segmenter("und", { granularity: "word" });
  const counts = new Map<string, number>();
  let tokens = 0;
  for (const seg of segmenter.segment(text)) {
    if (!seg.isWordLike) continue;
    tokens++;
    const term = seg.segment.toLowerCase().replaceAll("\u2019", "'");
    if (STOPWORDS.has(term) || !HAS_LETTER.test(term) || (term.length === 1 && term < "\u0080")) continue;
    counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    keywords: ranked.slice(0, limit).map(([term, count]) => ({ term, count })),
    unique_terms: counts.size,
    tokens,
  };
}

export const keywordExtract = defineSkill({
  id: "keyword_extract",
  name: "Keyword extract",
  category: "text_ops",
  price_usd: 0.008,
  kind: "utility",
  description:
    "Extract the most frequent meaningful terms from a text: Unicode word segmentation (CJK included), English stopwords removed (maintained stopword list), numbers dropped, ranked by count then term so ties are deterministic. Returns up to limit terms with counts, unique terms and word tokens. Deterministic and offline.",
  input: z.object({
    text: z.string().min(1).max(200000).meta({ description: "Text to analyse." }),
    limit: z.int().min(1).max(50).default(20).meta({ description: "How many keywords to return." }),
  }),
  output: z.object({
    keywords: z.array(z.object({ term: z.string(), count: z.int().min(1) })),
    unique_terms: z.int().min(0),
    tokens: z.int().min(0).meta({ description: "Word tokens in the text." }),
  }),
  example_request: {
    text: "Agents pay per call. Agents like small, reliable calls that agents can pay for.",
    limit: 3,
  },
  example_response: {
    skill: "keyword_extract",
    ok: true,
    keywords: [
      { term: "agents", count: 3 },
      { term: "pay", count: 2 },
      { term: "call", count: 1 },
    ],
    unique_terms: 7,
    tokens: 14,
  },
  run: ({ text, limit }) => extractKeywords(text, limit),
});
