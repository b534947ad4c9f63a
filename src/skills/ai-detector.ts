import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const aiDetector = defineSkill({
  id: "ai_detector",
  name: "AI text detector",
  category: "ai_detection",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Estimate whether a text (or the readable text of a URL) was machine-written from stylometric signals: sentence-length mean and burstiness, type-token ratio, repetition, punctuation and function-word profile. Returns likelihoods that sum to 1 and a verdict. A heuristic, not proof: read the documented limits.",
  input: z
    .object({
      url: z.string().max(8000).nullable().default(null).meta({ description: "Page to read the text from." }),
      text: z.string().max(8000).nullable().default(null).meta({ description: "Text to analyse." }),
    })
    .refine((v) => Boolean(v.text) || Boolean(v.url), {
      message: "either text or url is required",
      path: [],
    }),
  example_request: { text: "The quick brown fox jumps over the lazy dog. It was not amused." },
  example_response: {
    skill: "ai_detector",
    url: null,
    text_preview: "The quick brown fox jumps over the lazy dog. It was not amused.",
    verdict: "uncertain",
    ai_likelihood: 0.5,
    human_likelihood: 0.5,
    signals: { avg_sentence_words: 6.5, repetition_detected: false },
    supported: ["text", "url"],
  },
  run: () => notImplemented(),
});
