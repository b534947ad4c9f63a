import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const textDiff = defineSkill({
  id: "text_diff",
  name: "Text diff",
  category: "text_ops",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Compute a complete edit script between two texts (up to 200,000 characters each) at char, word or line granularity: equal, del and ins operations whose values rebuild both inputs, with character counts. Work is bounded, so unrelated inputs still answer quickly. Deterministic and offline.",
  input: z.object({
    a: z.string().max(200000).meta({ description: "Original text." }),
    b: z.string().max(200000).meta({ description: "New text." }),
    options: z
      .looseObject({ mode: z.enum(["char", "word", "line"]).optional() })
      .nullable()
      .default(null)
      .meta({ description: "Free-form; `mode` is char (default), word or line." }),
  }),
  example_request: { a: "kitten sat", b: "sitting sat" },
  example_response: { skill: "text_diff", ok: true },
  run: () => notImplemented(),
});
