import * as z from "zod";
import { isRawJsonNumber } from "../http/exact-integers";
import { anyJson } from "../http/validation";
import { jsonByteLength, MAX_OUTPUT_BYTES, OutputTooLarge, stringBytes, TextChunks } from "./lib/output-size";
import { RawJson } from "./lib/raw-json";
import { defineSkill } from "./types";

/**
 * The spec lets `sep` be any value, stringified, and gives it no length, so none is imposed here.
 * Every flattened key repeats it once per level (issue 19: a 10,000-character sep turned an 11 KB
 * request into 50 MB); what bounds that is the answer's cap, counted while the keys are made
 * (`flatten`), and the sep's own echo, counted first (`run`).
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
 * At most this many entries in `flat` (422 output_too_large, ctx.max_keys). Each holds a key
 * string and a Map entry while the answer is made, however short its text: 5 MiB of `[0,0,…]` is
 * 2.6 million leaves, and the text cap alone let ~760,000 in. 500,000, like the body's bound on
 * arrays and objects. Heap over the parsed input, node 22 (workerd ~0.6× for these): 5 MiB of
 * `{"data":[0,…]}` refused at 165 MB, of 100-item arrays at 110 MB, 1.2 MiB of zeros answered at
 * 73 MB; now all three are refused at 28 MB, and 500,000 leaves (7.9 MB of text) answer at 39 MB
 * (85 MB before).
 */
export const MAX_FLAT_KEYS = 500_000;

/**
 * Depth-first flatten; entries keep the walk's order, a later duplicate path wins in the first
 * one's place. A Map, not an object: an object lists integer-like keys (a root array's "1", or
 * "x00" made with sep "") before every other, whatever their place. The walk's order is the
 * document's, except inside an object with integer-like keys: JSON.parse already listed those first.
 * Every leaf's key repeats its whole path, so the answer can outgrow the input by the depth (a
 * 50-level chain of long keys over 10,000 leaves), and a key's control characters are written six
 * bytes each (a 22 KB request could ask for ~96 MB): each entry's text (its key's JSON, its
 * value's, a colon and a comma) is counted as it is made, without writing it, and OutputTooLarge
 * is thrown once the `flat` text would pass `limit` (keys stop the walk at once, values when it
 * is over), or at the entry past MAX_FLAT_KEYS. A path is measured before it is built, too: each
 * one is the start of at least one leaf's key, so one that would pass what is left is already too
 * much (a 5 MB sep over 200 levels would otherwise build a path of a billion characters, a
 * RangeError).
 */
export function flatten(
  data: unknown,
  sep: string,
  maxDepth: number,
  limit = MAX_OUTPUT_BYTES,
): Map<string, unknown> {
  // A key's text (and its colon and comma) is written whatever comes after; a value's is not: a
  // later duplicate path replaces it. So keys are refused as soon as they pass the limit, values
  // once the walk is over (they are the input's own, held at no cost), before any text is made.
  let keyBytes = 2; // the braces
  let valueBytes = 0;
  // "__proto__" is a key like any other in a Map.
  const out = new Map<string, unknown>();
  // Most leaves are numbers, strings, booleans or null: measured here, without the general walk.
  const bytesOf = (value: unknown, room: number) =>
    typeof value === "string"
      ? stringBytes(value, room)
      : typeof value === "number" && Number.isFinite(value)
        ? String(value).length
        : value === null || value === false
          ? 4 + Number(value === false)
          : value === true
            ? 4
            : jsonByteLength(value, room);
  const leaf = (path: string, value: unknown) => {
    if (out.has(path)) valueBytes -= bytesOf(out.get(path), limit);
    else {
      if (out.size === MAX_FLAT_KEYS) throw new OutputTooLarge(MAX_OUTPUT_BYTES, MAX_FLAT_KEYS);
      keyBytes += stringBytes(path, limit - keyBytes) + 2; // the colon, and a comma
      if (keyBytes > limit) throw new OutputTooLarge();
    }
    valueBytes += bytesOf(value, limit);
    out.set(path, value); // a scalar, an empty container, or a subtree cut off at maxDepth
  };
  const walk = (value: unknown, path: string, depth: number, isRoot: boolean) => {
    if (isContainer(value) && depth < maxDepth) {
      const prefix = isRoot ? "" : path + sep; // a path within the limit and a sep within the cap
      let hasKeys = false;
      const child = (key: string) => {
        hasKeys = true;
        if (keyBytes + prefix.length + key.length > limit) throw new OutputTooLarge();
        walk((value as Record<string, unknown>)[key], prefix + key, depth + 1, false);
      };
      // An array's indices one at a time: for-in would make the string of every index first.
      if (Array.isArray(value)) for (let i = 0; i < value.length; i++) child(String(i));
      else for (const key in value) child(key);
      // An empty root has nothing to flatten; everywhere else empties are leaves.
      if (hasKeys || isRoot) return;
    }
    leaf(path, value);
  };
  walk(data, "", 0, true);
  if (keyBytes + valueBytes > limit) throw new OutputTooLarge();
  return out;
}

/**
 * The entries as one JSON object's text, in their order (JSON.stringify of an object would not
 * keep it). `flatten` measured every entry against the cap, so this only writes them, into
 * TextChunks: one string per entry joined at the end held 2.6 million strings beside the Map.
 */
export function flatJson(flat: Map<string, unknown>): string {
  const out = new TextChunks();
  out.push("{");
  let first = true;
  for (const [path, value] of flat) {
    if (!first) out.push(",");
    first = false;
    out.push(JSON.stringify(path));
    out.push(":");
    out.push(JSON.stringify(value));
  }
  out.push("}");
  return out.text();
}

export const jsonFlatten = defineSkill({
  id: "json_flatten",
  name: "JSON flatten",
  category: "data_prep",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Flatten nested JSON into one object of path keys to leaf values. Keys are joined with a separator (any value, stringified; default '.'), array items by index; empty objects and arrays stay as leaves, and anything deeper than max_depth is kept whole at its path. At most 500,000 keys. Integers past 2^53 are kept digit for digit. Deterministic and offline.",
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
      keys: z
        .int()
        .min(0)
        .meta({ description: "Number of entries in flat: at most 500,000 (more is 422 output_too_large)." }),
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
    // the budget of the `flat` text.
    if (rawSep !== undefined && typeof rawSep !== "string" && jsonByteLength(rawSep) > MAX_OUTPUT_BYTES)
      throw new OutputTooLarge();
    const sep = rawSep === undefined ? "." : stringifySep(rawSep);
    const budget = MAX_OUTPUT_BYTES - jsonByteLength(sep);
    if (budget < 0) throw new OutputTooLarge();
    const depth = options?.max_depth ?? 12;
    const flat = flatten(data, sep, depth, budget);
    // Sent as its text, like json_sort's `sorted`, so the order survives serialization.
    return { flat: new RawJson(flatJson(flat)), sep, max_depth: depth, keys: flat.size };
  },
});
