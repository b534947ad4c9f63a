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
          'ISO 639-3 code of the language whose stopwords were removed with English\'s ("fra", "zho"); "und" when English\'s alone were. Read over the whole text: the stopword list covering clearly most of its words (3+ distinct stopwords, and more than English\'s on words English\'s list lacks), else, in a close call (some list covers 15% of the words), the language franc names clearly ahead in most of up to four 512-character windows, if its list covers 15% and beats English\'s so.',
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
