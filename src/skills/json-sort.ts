import { z } from "zod";
import { anyJson } from "../http/validation";
import { defineSkill, notImplemented } from "./types";
export const jsonSort = defineSkill({
  id: "json_sort",
  name: "JSON key sort",
  category: "data_prep",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Sort the keys of every object in a JSON value by code point, recursively and inside arrays (descending when reverse is true), and return the sorted value, its canonical compact JSON text and that text's UTF-8 byte size. Deterministic and offline.",
  input: z.object({
    data: anyJson("Any JSON value."),
    reverse: z.boolean().default(false).meta({ description: "Sort keys in descending order." }),
  }),
  example_request: { data: { b: 1, a: { d: [{ z: 1, y: 2 }], c: null } } },
  example_response: { skill: "json_sort", ok: true },
  run: () => notImplemented(),
});
