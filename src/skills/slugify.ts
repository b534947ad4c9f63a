import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const slugify = defineSkill({
  id: "slugify",
  name: "Slugify",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Turn any text into a URL-safe lowercase slug: transliterate (é to e, ß to ss, ø to o), join words with '-', never end in '-', at most max_len characters. Says when nothing is left. Deterministic and offline.",
  input: z.object({
    text: z.string().max(4000).meta({ description: "Text to slugify." }),
    max_len: z.int().min(1).max(200).default(80).meta({ description: "Maximum slug length." }),
  }),
  example_request: { text: "Crème Brûlée: Straße & Smørrebrød!", max_len: 80 },
  example_response: { skill: "slugify", ok: true },
  run: () => notImplemented(),
});
