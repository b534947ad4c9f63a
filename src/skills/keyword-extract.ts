import * as z from "zod";
import { defineSkill } from "./types";

export const keywordExtract = defineSkill({
  id: "keyword_extract",
  name: "Keyword extract",
  category: "text_ops",
  price_usd: 0.008,
  kind: "utility",
  description:
    "Extract the most frequent meaningful terms from a text. Unicode word segmentation (CJK included), terms composed (NFC) and lowercased without invisible format characters. The language most of the text's words are in is detected (language); its stopwords are removed with English's when sure (see language). Numbers dropped; ranked by count then term, so ties are deterministic. Returns up to limit terms with counts, unique terms and word tokens. Deterministic and offline.",
  input: () =>
    z.object({
      text: z.string().min(1).max(200000).meta({ description: "Text to analyse." }),
      limit: z.int().min(1).max(50).default(20).meta({ description: "How many keywords to return." }),
    }),
  output: () =>
    z.object({
      keywords: z.array(z.object({ term: z.string(), count: z.int().min(1) })),
      unique_terms: z.int().min(0),
      tokens: z.int().min(0).meta({ description: "Word tokens in the text." }),
      language: z.string().meta({
        description:
          'ISO 639-3 code of the text\'s language ("fra", "zho"): the one whose stopword list covers clearly most of its words (with 3+ distinct stopwords), else, when some list covers 15% of the words (a close call), the one franc names clearly ahead in more than half of up to four 512-character windows; "und" when none is (franc is not asked when no list covers 15%). Its stopwords are removed with English\'s; a franc-named language\'s only when its own list covers 15% of the words, else English\'s only (franc misreads stopword-poor English).',
      }),
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
    language: "eng",
  },
  async run({ text, limit }) {
    // franc and the stopword lists load on the first call of an isolate, not at start-up.
    const { keywordsInLanguage } = await import("./lib/text-language");
    return keywordsInLanguage(text, limit);
  },
});
