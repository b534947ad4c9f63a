import { z } from "zod";
import { defineSkill, notImplemented } from "./types";

export const uuidMint = defineSkill({
  id: "uuid_mint",
  name: "UUID mint",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  description: "Mint 1 to 32 distinct RFC 9562 UUIDs, version 4 (random, default) or version 1 (time-based).",
  input: z.object({
    count: z.int().min(1).max(32).default(1).meta({ description: "How many ids." }),
    version: z
      .union([z.literal(1), z.literal(4)])
      .default(4)
      .meta({ description: "UUID version: 4 (default) or 1." }),
  }),
  example_request: { count: 2, version: 4 },
  example_response: { skill: "uuid_mint", ok: true },
  run: () => notImplemented(),
});
