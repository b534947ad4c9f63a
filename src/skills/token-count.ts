import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const tokenCount = defineSkill({
  id: "token_count",
  name: "Token count",
  category: "text_ops",
  price_usd: 0.004,
  kind: "utility",
  description:
    "Count tokens exactly with real BPE tables (cl100k_base or o200k_base), plus characters and words, and a USD cost hint for sending the text as input to a small model. Deterministic and offline.",
  input: z.object({
    text: z.string().max(400000).meta({ description: "Text to count." }),
    encoding: z
      .string()
      .max(32)
      .default("cl100k")
      .pipe(z.enum(["cl100k", "cl100k_base", "o200k", "o200k_base"]))
      .meta({
        description: "cl100k (default) or o200k, with or without _base.",
        enum: ["cl100k", "cl100k_base", "o200k", "o200k_base"],
      }),
  }),
  example_request: { text: "Hello, agents of the web!", encoding: "cl100k_base" },
  example_response: { skill: "token_count", ok: true },
  run: () => notImplemented(),
});
