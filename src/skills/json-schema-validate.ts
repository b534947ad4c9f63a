import { z } from "zod";
import { anyJson } from "../http/validation";
import { defineSkill, notImplemented } from "./types";
export const jsonSchemaValidate = defineSkill({
  id: "json_schema_validate",
  name: "JSON Schema validate",
  category: "data_prep",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Validate a JSON value against a JSON Schema (draft 2020-12; draft 7 also accepted): type, required, properties, items, formats, combinators and references. Returns valid, and each failure with its instance path and message. An invalid schema is reported, not thrown. Deterministic and offline.",
  input: z.object({
    instance: anyJson("The JSON value to validate."),
    schema: anyJson("The JSON Schema (an object, or a boolean)."),
  }),
  example_request: {
    instance: { name: "Ada", age: 36 },
    schema: {
      type: "object",
      required: ["name", "email"],
      properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
    },
  },
  example_response: { skill: "json_schema_validate", ok: true },
  run: () => notImplemented(),
});
