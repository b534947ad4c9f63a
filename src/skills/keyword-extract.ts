import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const keywordExtract = defineSkill({
  id: "keyword_extract",
  name: "Keyword extract",
  category: "text_ops",
  price_usd: 0.008,
  kind: "utility",
  description:
    "Extract the most frequent meaningful terms from a text: Unicode-aware word segmentation, stopwords removed from a maintained list, ranked by count then term so ties are deterministic. Returns up to limit terms with counts, the number of unique terms and of tokens. Deterministic and offline.",
  input: z.object({
    text: z.string().min(1).max(200000).meta({ description: "Text to analyse." }),
    limit: z.int().min(1).max(50).default(20).meta({ description: "How many keywords to return." }),
  }),
  example_request: {
    text: "Agents pay per call. Agents like small, reliable calls that agents can pay for.",
    limit: 3,
  },
  example_response: { skill: "keyword_extract", ok: true },
  run: () => notImplemented(),
});
