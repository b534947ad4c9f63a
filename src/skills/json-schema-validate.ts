import type { Schema, SchemaDraft } from "@cfworker/json-schema";
import * as z from "zod";
import { anyJson, InputError } from "../http/validation";
import { shorten as cutQuoted } from "../text-cut";
import { defineSkill } from "./types";

/**
 * The response lists at most this many errors (in the validator's order) and counts them all in
 * `error_count`: one failing rule per item of a big array would otherwise answer megabytes
 * (issue 19: 5,000 zeros against 20 failing minimums gave 13 MB). The validator's own lists keep
 * no more than these either (lib/schema-errors.ts): it held every error until it returned.
 */
export const MAX_ERRORS = 100;

const DRAFTS: [RegExp, SchemaDraft][] = [
  [/draft-04/, "4"],
  [/draft-07|draft-06/, "7"],
  [/2019-09/, "2019-09"],
  [/2020-12/, "2020-12"],
];
const TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);
// RE2's complaint about a `\p{…}` it has no table for (`\p{ASCII}`, `\p{sc=Grek}`): the usual
// "no lookarounds or backreferences" would send the caller looking for what is not there.
const UNKNOWN_PROPERTY = /invalid character class range: `\\[pP]\{/;

function draftOf(schema: unknown): SchemaDraft {
  const uri = schema && typeof schema === "object" ? (schema as { $schema?: unknown }).$schema : undefined;
  if (typeof uri !== "string") return "2020-12";
  return DRAFTS.find(([re]) => re.test(uri))?.[1] ?? "2020-12";
}

/**
 * An invalid schema's message lists this many problems and counts the rest ("and 1980 more"); a
 * key or value it quotes is cut to MAX_QUOTED characters. Each problem carried its whole path:
 * one 2 MB key above 2,000 bad properties asked for a 4 GB message (a 500, RangeError).
 */
export const MAX_SCHEMA_PROBLEMS = 20;
const MAX_QUOTED = 64;

// Off a surrogate pair: a key of emoji was quoted ending in half of one ("\ud83d…").
const shorten = (s: string) => cutQuoted(s, MAX_QUOTED);

/**
 * Structural mistakes the validator would silently ignore; returned as one schema error. The walk
 * keeps its path as a stack of segments and writes a problem out only while it is listed, so the
 * work is one visit per subschema (depth is bounded by the body's, MAX_JSON_DEPTH).
 */
function schemaProblems(root: unknown): { listed: string[]; count: number } {
  const listed: string[] = [];
  let count = 0;
  const path = ["#"];
  const report = (message: () => string, ...tail: string[]) => {
    count++;
    if (listed.length < MAX_SCHEMA_PROBLEMS) listed.push(`${[...path, ...tail].join("/")}: ${message()}`);
  };
  const walk = (schema: unknown, ...segments: string[]) => {
    for (const segment of segments) path.push(shorten(segment));
    check(schema);
    path.length -= segments.length;
  };
  const check = (schema: unknown) => {
    if (typeof schema === "boolean") return;
    if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
      report(() => "a schema must be an object or a boolean");
      return;
    }
    const s = schema as Record<string, unknown>;
    if ("type" in s) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      for (const t of types)
        if (typeof t !== "string" || !TYPES.has(t))
          report(() => `unknown type ${shorten(JSON.stringify(t) ?? String(t))}`, "type");
    }
    if ("required" in s && (!Array.isArray(s.required) || s.required.some((r) => typeof r !== "string"))) {
      report(() => "must be an array of strings", "required");
    }
    for (const key of ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]) {
      const map = s[key];
      if (map === undefined) continue;
      if (map === null || typeof map !== "object" || Array.isArray(map))
        report(() => "must be an object", key);
      else for (const [k, v] of Object.entries(map)) walk(v, key, k);
    }
    for (const key of [
      "items",
      "additionalProperties",
      "not",
      "contains",
      "propertyNames",
      "if",
      "then",
      "else",
    ]) {
      if (s[key] !== undefined && !Array.isArray(s[key])) walk(s[key], key);
    }
    for (const key of ["allOf", "anyOf", "oneOf", "prefixItems"]) {
      const list = s[key];
      if (list === undefined) continue;
      if (!Array.isArray(list)) report(() => "must be an array", key);
      else for (const [i, v] of list.entries()) walk(v, key, String(i));
    }
  };
  check(root);
  return { listed, count };
}

export const jsonSchemaValidate = defineSkill({
  id: "json_schema_validate",
  name: "JSON Schema validate",
  category: "data_prep",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Validate JSON against a JSON Schema (2020-12 by default; 2019-09, 7, 4 by $schema), formats and local $refs included. Returns valid and the first 100 failures with path and message (error_count counts all). Patterns run on RE2: lookarounds and backreferences are refused (422). An invalid schema, or a $ref to a meta-schema or remote URL, is a schema error; nothing is fetched. Official test suite, required cases passed: 548/552 (draft 4), 824/828 (7), 1106/1128 (2019-09), 1084/1117 (2020-12).",
  input: () =>
    z.object({
      instance: anyJson("The JSON value to validate."),
      schema: anyJson("The JSON Schema (an object, or a boolean)."),
    }),
  output: () =>
    z.object({
      valid: z.boolean(),
      errors: z
        .array(
          z.object({
            instance_path: z.string(),
            keyword: z.string(),
            schema_path: z.string(),
            message: z.string(),
          }),
        )
        .max(MAX_ERRORS)
        .meta({ description: `The first ${MAX_ERRORS} errors, in the validator's order.` }),
      error_count: z
        .int()
        .min(0)
        .meta({
          description: `How many errors there are in all, counted exactly (errors lists the first ${MAX_ERRORS}). A validation that would make more errors than one call may hold (see docs/LIMITS.md) is 422 work_limit_exceeded, not a partial count.`,
        }),
      checked: z.boolean().meta({ description: "False when the schema itself was invalid." }),
      draft: z.enum(["4", "7", "2019-09", "2020-12"]),
    }),
  example_request: {
    instance: { name: "Ada", age: 36 },
    schema: {
      type: "object",
      required: ["name", "email"],
      properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
    },
  },
  example_response: {
    skill: "json_schema_validate",
    ok: true,
    valid: false,
    errors: [
      {
        instance_path: "#",
        keyword: "required",
        schema_path: "#/required",
        message: 'Instance does not have required property "email".',
      },
    ],
    error_count: 1,
    checked: true,
    draft: "2020-12",
  },
  async run({ instance, schema }) {
    const draft = draftOf(schema);
    const problems = schemaProblems(schema);
    const schemaError = (message: string) => ({
      valid: false,
      errors: [
        {
          instance_path: "#",
          keyword: "schema",
          schema_path: "#",
          // Well-formed as the validator's messages are (below): it may quote a key.
          message: `Invalid schema: ${message}`.toWellFormed(),
        },
      ],
      error_count: 1,
      checked: false,
      draft,
    });
    if (problems.count > 0) {
      const more = problems.count - problems.listed.length;
      return schemaError(problems.listed.join("; ") + (more > 0 ? `; and ${more} more` : ""));
    }
    // The validator and RE2 (~180 KiB) load on the first call of an isolate, not at start-up.
    const [
      { meteredValidation, WorkLimitExceeded, LookupTooLarge },
      { InvalidPattern, UnsupportedPattern, FOLDED_NEGATION_REASON, writtenProperty },
      { TooManyErrors },
    ] = await Promise.all([
      import("./lib/schema-work"),
      import("./lib/schema-patterns"),
      import("./lib/schema-errors"),
    ]);
    try {
      const result = meteredValidation(schema as Schema | boolean, instance, draft, MAX_ERRORS);
      return {
        valid: result.valid,
        errors: result.errors.map((e) => ({
          instance_path: e.instanceLocation,
          keyword: e.keyword,
          schema_path: e.keywordLocation,
          // The library quotes a key as it is: a lone surrogate in one would make this answer
          // hold "\ud800", which strict JSON decoders refuse whole; the paths write it as U+FFFD too.
          message: e.error.toWellFormed(),
        })),
        error_count: result.errorCount,
        checked: true,
        draft,
      };
    } catch (e) {
      if (e instanceof UnsupportedPattern) {
        throw InputError.at(
          ["schema", ...e.path],
          e.tooLarge
            ? `Pattern is too large: patterns run on RE2, and what compiling them costs is counted before they are compiled (counted repetition, Unicode properties \\p{…}, class size; see docs/LIMITS.md): ${e.reason}`
            : e.onInstance
              ? `Pattern cannot be checked on this instance: patterns run on RE2 (linear time), which would answer otherwise than ECMAScript here (${e.reason}; see docs/LIMITS.md)`
              : e.reason === FOLDED_NEGATION_REASON
                ? `Pattern is not supported: patterns run on RE2 (linear time), and ${e.reason}`
                : UNKNOWN_PROPERTY.test(e.reason)
                  ? `Pattern is not supported: patterns run on RE2 (linear time), which knows Unicode general categories and scripts (\\p{L}, \\p{Letter}, \\p{Script=Greek}) but not this property${writtenProperty(e.pattern, e.reason) ?? ""}`
                  : `Pattern is not supported: patterns run on RE2 (linear time), which has no lookarounds or backreferences (${e.reason})`,
          e.pattern,
          "pattern_unsupported",
          { pattern: e.pattern, error: e.reason },
        );
      }
      if (e instanceof LookupTooLarge) {
        throw InputError.at(
          ["schema"],
          "The schema's nesting × key length is too large for one call (see docs/LIMITS.md): the validator indexes every subschema by its whole path, so each level of nesting repeats every key above it; use shorter property names or less nesting",
          null,
          "work_limit_exceeded",
          { budget_units: null, lookup_bytes: e.limit },
        );
      }
      if (e instanceof TooManyErrors) {
        throw InputError.at(
          ["schema"],
          `Validation would make too many errors for one call (see docs/LIMITS.md): the validator lists each error again in every list that encloses it (items, properties, allOf, $ref…), and the places past the first ${MAX_ERRORS} of its lists are bounded (ctx.error_entries); use a smaller instance or fewer failing rules per value`,
          null,
          "work_limit_exceeded",
          { budget_units: null, error_entries: e.limit },
        );
      }
      // RangeError: the library's recursion or its error spreading ran out of stack.
      if (e instanceof WorkLimitExceeded || e instanceof RangeError) {
        throw InputError.at(
          ["schema"],
          "Validation would take too much work for one call (see docs/LIMITS.md): use a smaller schema or instance, fewer combinators or $ref expansions, or fewer Unicode properties (\\p{…}) in format: regex strings",
          null,
          "work_limit_exceeded",
          { budget_units: e instanceof WorkLimitExceeded ? e.budget : null },
        );
      }
      if (e instanceof InvalidPattern) return schemaError(e.message);
      // Unresolvable $ref and the like surface here.
      return schemaError(e instanceof Error ? e.message : String(e));
    }
  },
});
