import { z } from "zod";
import { anyJson } from "../http/validation";
import { defineSkill, notImplemented } from "./types";

const maxDepth = z
  .union([z.number(), z.string()])
  .meta({ description: "Integer or integer-like string, default 12." });
export const jsonFlatten = defineSkill({
  id: "json_flatten",
  name: "JSON flatten",
  category: "data_prep",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Flatten nested JSON into one object of path keys to leaf values. Keys are joined with a separator (default '.'), array items by index; empty objects and arrays stay as leaves, and anything deeper than max_depth is kept whole at its path. Deterministic and offline.",
  input: z.object({
    data: anyJson("Any JSON value to flatten."),
    options: z
      .looseObject({
        sep: z.unknown().optional().meta({ description: 'Separator; any value, stringified. Default ".".' }),
        max_depth: maxDepth.optional(),
      })
      .nullable()
      .default(null),
  }),
  example_request: { data: { user: { name: "Ada", tags: ["x", "y"] }, empty: {} } },
  example_response: { skill: "json_flatten", ok: true },
  run: () => notImplemented(),
});
