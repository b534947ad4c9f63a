import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const research = defineSkill({
  id: "research",
  name: "Research summary",
  category: "research",
  price_usd: 0.015,
  kind: "analytic",
  description:
    "Search Wikipedia for a question or topic, read the top articles' extracts and return an extractive summary: sentences ranked by relevance to the query and de-duplicated, with the articles used as sources and a confidence that reflects coverage. No invented text.",
  input: z.object({
    query: z.string().min(1).max(2000).meta({ description: "Question or topic to research." }),
  }),
  example_request: { query: "x402 payment protocol" },
  example_response: {
    skill: "research",
    query: "x402 payment protocol",
    summary: "HTTP 402 Payment Required is a nonstandard response status code reserved for future use.",
    sources: [{ title: "HTTP 402", url: "https://en.wikipedia.org/wiki/HTTP_402" }],
    confidence: 0.6,
  },
  run: () => notImplemented(),
});
