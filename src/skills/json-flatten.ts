import * as z from "zod";
import { isRawJsonNumber } from "../http/exact-integers";
import { anyJson } from "../http/validation";
import { jsonByteLength, MAX_OUTPUT_BYTES, OutputTooLarge } from "./lib/output-size";
import { RawJson } from "./lib/raw-json";
import { defineSkill } from "./types";

/**
 * The spec lets `sep` be any value, stringified, and gives it no length, so none is imposed here.
 * Every flattened key repeats it once per level (issue 19: a 10,000-character sep turned an 11 KB
 * request into 50 MB); what bounds that is the answer's cap, counted while the keys are made
 * (`flatten`, `flatJson`), and the sep's own echo, counted first (`run`).
 */
const stringifySep = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

const INT_LIKE = /^\s*[+-]?\d+\s*$/;

// The answer echoes the depth as an integer of its schema (0..2^53-1): a larger one means the same
// (no document is that deep), and written as a double it came back as 1e+300 or 1e+23.
const depthOf = (n: number) => Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, n));

// "number or integer-like string (optional surrounding whitespace and sign)"; negative means 0.
// Any finite number is a depth, its fraction dropped (1.5 → 1), as Python's int() reads it.
const maxDepth = z
  .unknown()
  .transform((v, ctx) => {
    if (typeof v === "number" && Number.isFinite(v)) return depthOf(Math.trunc(v));
    if (isRawJsonNumber(v)) return v.rawJSON.startsWith("-") ? 0 : Number.MAX_SAFE_INTEGER; // past 2^53
    if (typeof v === "string" && INT_LIKE.test(v)) return depthOf(Number.parseInt(v.trim(), 10));
    const [type, message] =
      typeof v === "number"
        ? ["int_from_float", "Input should be a valid integer, got a number with a fractional part"]
        : typeof v === "string"
          ? ["int_parsing", "Input should be a valid integer, unable to parse string as an integer"]
          : ["int_type", "Input should be a valid integer"];
    ctx.addIssue({ code: "custom", message, params: { type } });
    return z.NEVER;
  })
  .meta({
    description:
      'Levels to descend: a number (its fraction dropped) or integer-like string (" 3 ", "+2"); negative is 0, past 2^53-1 is 2^53-1; default 12.',
  });

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isContainer(v: unknown): v is Json[] | Record<string, Json> {
  return v !== null && typeof v === "object" && !isRawJsonNumber(v);
}

/**
 * Depth-first flatten; entries keep the walk's order, a later duplicate path wins in the first
 * one's place. A Map, not an object: an object lists integer-like keys (a root array's "1", or
 * "x00" made with sep "") before every other, whatever their place. The walk's order is the
 * document's, except inside an object with integer-like keys: JSON.parse already listed those first.
 * Every leaf's key repeats its whole path, so keys alone can outgrow the input by the depth
 * (a 50-level chain of long keys over 10,000 leaves): their total length is counted as they are
 * made and the walk stops with OutputTooLarge once it passes `maxKeyChars`, long before the
 * strings are built in full. A path is measured before it is built, too: each one is the start of
 * at least one leaf's key, so one that would pass what is left of the budget is already too much
 * (a 5 MB sep over 200 levels would otherwise build a path of a billion characters, a RangeError).
 */
export function flatten(
  data: unknown,
  sep: string,
  maxDepth: number,
  maxKeyChars = MAX_OUTPUT_BYTES,
): Map<string, unknown> {
  let keyChars = 0;
  // "__proto__" is a key like any other in a Map.
  const out = new Map<string, unknown>();
  const walk = (value: unknown, path: string, depth: number, isRoot: boolean) => {
    if (isContainer(value) && depth < maxDepth) {
      let hasKeys = false;
      for (const key in value) {
        hasKeys = true;
        const length = isRoot ? key.length : path.length + sep.length + key.length;
        if (keyChars + length > maxKeyChars) throw new OutputTooLarge();
        walk((value as Record<string, unknown>)[key], isRoot ? key : path + sep + key, depth + 1, false);
      }
      // An empty root has nothing to flatten; everywhere else empties are leaves.
      if (hasKeys || isRoot) return;
    }
    keyChars += path.length;
    if (keyChars > maxKeyChars) throw new OutputTooLarge();
    out.set(path, value); // a scalar, an empty container, or a subtree cut off at maxDepth
  };
  walk(data, "", 0, true);
  return out;
}

/**
 * The entries as one JSON object's text, in their order (JSON.stringify of an object would not
 * keep it). Each entry is measured before it is written: a key's control characters are written
 * six bytes each, so a 22 KB request could have this text reach ~96 MB before the answer's cap
 * (checked on the finished answer) refused it, past the isolate's memory.
 */
export function flatJson(flat: Map<string, unknown>, limit = MAX_OUTPUT_BYTES): string {
  const parts: string[] = [];
  let bytes = 2; // the braces
  for (const [path, value] of flat) {
    bytes += jsonByteLength(path, limit - bytes) + 2; // the colon, and a comma
    if (bytes <= limit) bytes += jsonByteLength(value, limit - bytes);
    if (bytes > limit) throw new OutputTooLarge();
    parts.push(`${JSON.stringify(path)}:${JSON.stringify(value)}`);
  }
  return `{${parts.join(",")}}`;
}

export const jsonFlatten = defineSkill({
  id: "json_flatten",
  name: "JSON flatten",
  category: "data_prep",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Flatten nested JSON into one object of path keys to leaf values. Keys are joined with a separator (any value, stringified; default '.'), array items by index; empty objects and arrays stay as leaves, and anything deeper than max_depth is kept whole at its path. Integers past 2^53 are kept digit for digit. Deterministic and offline.",
  input: () =>
    z.object({
      data: anyJson("Any JSON value to flatten."),
      options: z
        .looseObject({
          sep: z.unknown().optional().meta({
            description:
              'Separator; any value, stringified (a string as is, anything else as its JSON text). Default ".". Every key repeats it once per level, so a long one meets the answer\'s 8 MB cap (422 output_too_large) sooner.',
          }),
          max_depth: maxDepth.optional(),
        })
        .nullable()
        .default(null),
    }),
  output: () =>
    z.object({
      flat: z.record(z.string(), z.unknown()).meta({
        description:
          'Path → leaf value, in document order (except that an object\'s integer-like keys, such as "2023", are read first, in numeric order); empties and cut-off subtrees are leaves.',
      }),
      sep: z.string().meta({ description: "The separator used." }),
      max_depth: z.int().min(0).meta({ description: "The depth limit used." }),
      keys: z.int().min(0).meta({ description: "Number of entries in flat." }),
    }),
  exactIntegers: true,
  example_request: { data: { user: { name: "Ada", tags: ["x", "y"] }, empty: {} } },
  example_response: {
    skill: "json_flatten",
    ok: true,
    flat: { "user.name": "Ada", "user.tags.0": "x", "user.tags.1": "y", empty: {} },
    sep: ".",
    max_depth: 12,
    keys: 4,
  },
  run({ data, options }) {
    const rawSep = options?.sep;
    // The answer echoes the sep, so its text counts against the cap before anything is built:
    // measured without stringifying (5 MB of 1e20 would stringify to 22 MB), then what is left is
    // the budget of the keys and of the `flat` text.
    if (rawSep !== undefined && typeof rawSep !== "string" && jsonByteLength(rawSep) > MAX_OUTPUT_BYTES)
      throw new OutputTooLarge();
    const sep = rawSep === undefined ? "." : stringifySep(rawSep);
    const budget = MAX_OUTPUT_BYTES - jsonByteLength(sep);
    if (budget < 0) throw new OutputTooLarge();
    const depth = options?.max_depth ?? 12;
    const flat = flatten(data, sep, depth, budget);
    // Sent as its text, like json_sort's `sorted`, so the order survives serialization.
    return { flat: new RawJson(flatJson(flat, budget)), sep, max_depth: depth, keys: flat.size };
  },
});
