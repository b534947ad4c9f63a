import type { Context, MiddlewareHandler } from "hono";
import * as z from "zod";
import type { AppEnv } from "../env";
import { cut } from "../text-cut";
import { isRawJsonNumber, parseKeepingIntegers } from "./exact-integers";

/**
 * Request validation with FastAPI's error shape (spec 2.5): zod does the checking, this module
 * translates zod issues into pydantic's `{loc, msg, type, input, ctx}` items so clients written
 * against the reference service parse our 422s unchanged.
 */

export type Loc = (string | number)[];
export interface ErrorItem {
  loc: Loc;
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** Thrown by skill code for input that the schema alone cannot judge (bad hex, bad encoding). */
export class InputError extends Error {
  constructor(readonly items: ErrorItem[]) {
    super(items.map((i) => i.msg).join("; "));
  }
  static at(field: Loc, msg: string, input: unknown, type = "value_error", ctx?: Record<string, unknown>) {
    return new InputError([
      { loc: ["body", ...field], msg, type, input: echo(input), ctx: ctx ?? { error: msg } },
    ]);
  }
}

export function validationResponse(c: Context, items: ErrorItem[]) {
  return c.json({ detail: items }, 422);
}

/**
 * Items one 422 lists at most. Each bad item of a list is an item, and 5 MiB holds ~2.6 million of
 * them: listed whole, 100,000 made a 10 MB answer, and zod's spread of that many issues into the
 * parent's overflowed the stack (a 500).
 */
export const MAX_DETAIL_ITEMS = 100;

// Echoing a 400,000-character field back in full helps nobody; the ctx carries the bound.
const ECHO_MAX = 256;
/**
 * Characters of JSON an echoed array or object may take whole. A missing field echoes its parent,
 * a non-object body itself: a 5 MB one was echoed once per item (44 MB for two missing fields).
 */
const ECHO_JSON_MAX = 1024;
/** Items of an array, or keys of an object, that a cut echo keeps at most. */
const ECHO_ITEMS = 10;

/**
 * The length of `value`'s JSON, give or take escapes, counted only up to `limit`: the walk stops
 * once past it, so a 5 MB value costs no more than a small one.
 */
function jsonSizeUpTo(value: unknown, limit: number): number {
  let size = 0;
  const walk = (v: unknown): void => {
    if (size > limit) return;
    if (typeof v === "string") size += v.length + 2;
    else if (typeof v === "number") size += Math.min(String(v).length, 24);
    else if (typeof v === "boolean") size += 5;
    else if (v === null || typeof v !== "object") size += 4;
    else if (isRawJsonNumber(v)) size += v.rawJSON.length;
    else if (Array.isArray(v)) {
      size += 2;
      for (let i = 0; i < v.length && size <= limit; i++) {
        size += 1;
        walk(v[i]);
      }
    } else {
      size += 2;
      for (const key in v) {
        if (size > limit) return;
        size += key.length + 4;
        walk((v as Record<string, unknown>)[key]);
      }
    }
  };
  walk(value);
  return size;
}

/**
 * The input as a 422 echoes it: pydantic's whole value when it is short; else cut to about
 * `budget` characters of JSON, keeping its JSON type so clients read it as they read the whole
 * (a string's first 256 characters and `…`, an array's first items, an object's first keys).
 */
function echo(input: unknown, budget = ECHO_JSON_MAX): unknown {
  if (typeof input === "string") {
    const max = Math.max(1, Math.min(ECHO_MAX, budget));
    return input.length > max ? `${cut(input, max)}…` : input;
  }
  // An integer kept as written (exact-integers.ts) echoes as written; past 256 digits it is cut as
  // a string is (no shorter number has its value, and 5 MiB of digits is one integer).
  if (isRawJsonNumber(input)) {
    return input.rawJSON.length > ECHO_MAX ? `${input.rawJSON.slice(0, ECHO_MAX)}…` : input;
  }
  if (input === null || typeof input !== "object") return input;
  if (jsonSizeUpTo(input, budget) <= budget) return input;
  // Each kept item gets what is left of the budget, so nested containers cannot multiply it.
  let left = budget - 2;
  if (Array.isArray(input)) {
    const kept: unknown[] = [];
    for (let i = 0; i < input.length && kept.length < ECHO_ITEMS && left > 0; i++) {
      const item = echo(input[i], left);
      kept.push(item);
      left -= jsonSizeUpTo(item, left) + 1;
    }
    return kept;
  }
  // Entries, not assignment: a "__proto__" key (JSON.parse makes it an own key) stays a key.
  const kept: [string, unknown][] = [];
  for (const key in input) {
    if (kept.length >= ECHO_ITEMS || left <= 0) break;
    const name = key.length > ECHO_MAX ? `${cut(key, ECHO_MAX)}…` : key;
    left -= name.length + 4;
    const item = echo((input as Record<string, unknown>)[key], Math.max(left, 1));
    kept.push([name, item]);
    left -= jsonSizeUpTo(item, Math.max(left, 0));
  }
  return Object.fromEntries(kept);
}

function quote(v: unknown): string {
  return typeof v === "string" ? `'${v}'` : String(v);
}
function expectedList(values: readonly unknown[]): string {
  const q = values.map(quote);
  return q.length <= 1 ? (q[0] ?? "") : `${q.slice(0, -1).join(", ")} or ${q[q.length - 1]}`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, key as string)) {
      return { found: false, value: undefined };
    }
    cur = (cur as Record<string, unknown>)[key as string];
  }
  return { found: true, value: cur };
}

const TYPE_NAMES: Record<string, [string, string]> = {
  string: ["string_type", "Input should be a valid string"],
  int: ["int_type", "Input should be a valid integer"],
  number: ["int_type", "Input should be a valid integer"],
  boolean: ["bool_type", "Input should be a valid boolean"],
  array: ["list_type", "Input should be a valid list"],
  object: ["dict_type", "Input should be a valid dictionary"],
  record: ["dict_type", "Input should be a valid dictionary"],
};

/** What pydantic answers for a string it could not read as the type (json_flatten's max_depth too). */
const INT_PARSING: [string, string] = [
  "int_parsing",
  "Input should be a valid integer, unable to parse string as an integer",
];
const PARSING_NAMES: Record<string, [string, string]> = {
  int: INT_PARSING,
  number: INT_PARSING,
  boolean: ["bool_parsing", "Input should be a valid boolean, unable to interpret input"],
};

/** Locations whose missing items echo null (FastAPI's parameters), not the parent object. */
const PARAMETERS = new Set(["query", "path", "header"]);

type Issue = z.core.$ZodIssue;

function toItem(issue: Issue, root: unknown, prefix: Loc): ErrorItem {
  const path = issue.path as (string | number)[];
  const loc: Loc = [...prefix, ...path];
  const at = valueAt(root, path);
  const input = echo(at.found ? at.value : issue.input);

  if (!at.found && path.length > 0) {
    // A body field echoes the object it is missing from (pydantic validates that object); a query,
    // path or header parameter has no such object in FastAPI, which echoes null.
    const parent = PARAMETERS.has(prefix[0] as string) ? null : echo(valueAt(root, path.slice(0, -1)).value);
    return { loc, msg: "Field required", type: "missing", input: parent };
  }
  switch (issue.code) {
    case "invalid_type": {
      // Strict by choice ("2" is no integer here), but a string is named as pydantic names one it
      // cannot read: a client branching on the type sees what the reference service sends.
      if (typeof at.value === "string" && PARSING_NAMES[issue.expected]) {
        const [type, msg] = PARSING_NAMES[issue.expected] as [string, string];
        return { loc, msg, type, input };
      }
      if (issue.expected === "int" && typeof at.value === "number") {
        return {
          loc,
          msg: "Input should be a valid integer, got a number with a fractional part",
          type: "int_from_float",
          input,
        };
      }
      if (path.length === 0 && (issue.expected === "object" || issue.expected === "record")) {
        return {
          loc,
          msg: "Input should be a valid dictionary or object to extract fields from",
          type: "model_attributes_type",
          input,
        };
      }
      const [type, msg] = TYPE_NAMES[issue.expected] ?? [
        `${issue.expected}_type`,
        `Input should be a valid ${issue.expected}`,
      ];
      return { loc, msg, type, input };
    }
    case "too_small":
    case "too_big": {
      const small = issue.code === "too_small";
      const limit = Number(
        small
          ? (issue as { minimum: number | bigint }).minimum
          : (issue as { maximum: number | bigint }).maximum,
      );
      if (issue.origin === "string" || issue.origin === "array") {
        const unit = issue.origin === "string" ? "character" : "item";
        const plural = limit === 1 ? unit : `${unit}s`;
        const what = issue.origin === "string" ? "String" : "List";
        const type =
          issue.origin === "string"
            ? `string_too_${small ? "short" : "long"}`
            : `too_${small ? "short" : "long"}`;
        return {
          loc,
          msg: `${what} should have ${small ? "at least" : "at most"} ${limit} ${plural}`,
          type,
          input,
          ctx: { [small ? "min_length" : "max_length"]: limit },
        };
      }
      const inclusive = issue.inclusive !== false;
      const [type, words, key] = small
        ? inclusive
          ? ["greater_than_equal", "greater than or equal to", "ge"]
          : ["greater_than", "greater than", "gt"]
        : inclusive
          ? ["less_than_equal", "less than or equal to", "le"]
          : ["less_than", "less than", "lt"];
      return { loc, msg: `Input should be ${words} ${limit}`, type, input, ctx: { [key]: limit } };
    }
    case "invalid_value": {
      const expected = expectedList(issue.values);
      return { loc, msg: `Input should be ${expected}`, type: "literal_error", input, ctx: { expected } };
    }
    case "invalid_union": {
      // A union of literals (uuid version 1|4) reads as one literal error, like pydantic's Literal.
      const flat = issue.errors.flat();
      if (flat.length > 0 && flat.every((e) => e.code === "invalid_value")) {
        const values = flat.flatMap((e) => (e as { values: unknown[] }).values);
        const expected = expectedList(values);
        return { loc, msg: `Input should be ${expected}`, type: "literal_error", input, ctx: { expected } };
      }
      return { loc, msg: "Input does not match any allowed type", type: "union_type", input };
    }
    case "invalid_format": {
      // zod writes the RegExp literal (/^…$/); pydantic, and so FastAPI's clients, the bare pattern.
      const literal = (issue as { pattern?: string }).pattern;
      const pattern = literal?.replace(/^\/([\s\S]*)\/[a-z]*$/, "$1");
      if (issue.format === "regex" && pattern) {
        return {
          loc,
          msg: `String should match pattern '${pattern}'`,
          type: "string_pattern_mismatch",
          input,
          ctx: { pattern },
        };
      }
      return { loc, msg: issue.message, type: "value_error", input, ctx: { error: issue.message } };
    }
    case "custom": {
      // Checks written as refinements name their pydantic type in params; plain ones are value errors.
      const params = (issue.params ?? {}) as { type?: string; ctx?: Record<string, unknown> };
      if (params.type)
        return {
          loc,
          msg: issue.message,
          type: params.type,
          input,
          ...(params.ctx ? { ctx: params.ctx } : {}),
        };
      return {
        loc,
        msg: `Value error, ${issue.message}`,
        type: "value_error",
        input,
        ctx: { error: issue.message },
      };
    }
    default:
      return { loc, msg: issue.message, type: "value_error", input, ctx: { error: issue.message } };
  }
}

/**
 * zod's `z.int()` carries an implicit ±2^53 bound: a huge count would be reported twice on one loc
 * (le 9007199254740991 and the field's le 32). pydantic names only the declared bound, so the
 * implicit one is dropped where the field has its own; alone it stays (fields with no bound).
 */
function isImplicitSafeBound(issue: Issue): boolean {
  if (issue.code === "too_big") return Number(issue.maximum) === Number.MAX_SAFE_INTEGER;
  if (issue.code === "too_small") return Number(issue.minimum) === Number.MIN_SAFE_INTEGER;
  return false;
}

/** The first MAX_DETAIL_ITEMS items of a zod failure, in FastAPI's shape. */
export function zodItems(error: z.ZodError, root: unknown, prefix: Loc): ErrorItem[] {
  // One pass: the bounds each loc declares of its own (a search per issue was quadratic).
  const key = (issue: Issue) => `${issue.code}\u0000${issue.path.join("\u0000")}`;
  const declared = new Set<string>();
  for (const issue of error.issues) {
    if ((issue.code === "too_big" || issue.code === "too_small") && !isImplicitSafeBound(issue)) {
      declared.add(key(issue));
    }
  }
  const items: ErrorItem[] = [];
  for (const issue of error.issues) {
    if (items.length >= MAX_DETAIL_ITEMS) break;
    if (isImplicitSafeBound(issue) && declared.has(key(issue))) continue;
    items.push(toItem(issue, root, prefix));
  }
  return items;
}

/**
 * zod's verdict as a route answers it: the parsed data, or the 422 items under `prefix`. A body
 * zod cannot judge within the stack (a RangeError: zod spreads a list's issues into its parent's,
 * ~125,000 overflow workerd's stack) is one item on the whole body, not a 500. The schemas' lists
 * stop at their first bad items (listOf), so this is a guard for one that does not.
 */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  prefix: Loc,
): { ok: true; data: z.output<S> } | { ok: false; items: ErrorItem[] } {
  let result: z.ZodSafeParseResult<z.output<S>>;
  try {
    result = schema.safeParse(value, { reportInput: true });
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    // Logged: a schema whose list is not bounded by listOf is a bug to fix, not only a 422.
    console.error(JSON.stringify({ level: "error", msg: "validation overflowed", error: String(e) }));
    const error = "too many invalid values to check; send fewer";
    return {
      ok: false,
      items: [
        {
          loc: [...prefix],
          msg: `Value error, ${error}`,
          type: "value_error",
          input: echo(value),
          ctx: { error },
        },
      ],
    };
  }
  return result.success
    ? { ok: true, data: result.data }
    : { ok: false, items: zodItems(result.error, value, prefix) };
}

/**
 * A list field, `field(z.array(item))` (the wrapper makes it nullable, defaulted, described), that
 * is judged only up to its first MAX_DETAIL_ITEMS bad items. zod reads every item of an array and
 * makes an issue of each bad one (5 MiB holds ~2.6 million), which the 422 would not list anyway
 * and which overflow the stack when zod hands them up to the parent object. A list longer than the
 * bound is read once beforehand to find where its (bound + 1)th bad item stands, and zod then
 * judges it only up to there; a list that is all good is taken whole, however long.
 *
 * A preprocess publishes its target's JSON Schema, but drops the default and examples of every
 * schema around it as input: so it goes outside the field's wrappers, not inside them.
 */
export function listOf<T extends z.ZodType, F extends z.ZodType>(item: T, field: (list: z.ZodArray<T>) => F) {
  return z.preprocess<unknown, F, z.input<F>>(
    (value) => {
      if (!Array.isArray(value) || value.length <= MAX_DETAIL_ITEMS) return value;
      let bad = 0;
      for (let i = 0; i < value.length; i++) {
        // The rest cannot be listed, and the list is refused whatever they hold.
        if (!item.safeParse(value[i]).success && ++bad > MAX_DETAIL_ITEMS) return value.slice(0, i);
      }
      return value;
    },
    field(z.array(item)),
  );
}

/** pydantic's JSON parser (jiter) refuses documents nested deeper than this; so do we. */
export const MAX_JSON_DEPTH = 200;

/**
 * Arrays and objects one body may hold. V8 keeps ~70 bytes per empty object: 5 MiB of `{},` is
 * 1.7 million of them, ~120 MB parsed, past a Worker's 128 MB (and the isolate's other requests
 * die with it). Real documents of 5 MiB hold far fewer: 100,000 records of 45 bytes are 100,001.
 */
export const MAX_JSON_CONTAINERS = 500_000;

/**
 * One pass over the text, outside strings, before anything is parsed: nesting depth, the number
 * of arrays and objects, whether an integer of 16 digits or more (one that may pass 2^53) occurs,
 * and whether a number may lie past a double's range (`mayOverflow`: JSON.parse makes ±Infinity of
 * it, which JSON.stringify writes as null). Stops as soon as a bound is crossed. Allocates
 * nothing: the walk of the parsed value it replaces kept a pair per node (~100 MB more on the
 * body above). `bounds` are a JSON body's unless a caller scans a document that holds one (/mcp's
 * message: the arguments inside an envelope).
 */
export function scanJson(text: string, bounds = { depth: MAX_JSON_DEPTH, containers: MAX_JSON_CONTAINERS }) {
  let depth = 0;
  let maxDepth = 0;
  let containers = 0;
  // Digits of the current number's integer part, and whether it has a fraction or exponent: only
  // an integer can be kept exact, and floats such as 0.30000000000000004 are common.
  let digits = 0;
  let fraction = false;
  let longDigits = false;
  // Past 1.8e308 a number has an exponent of three digits or more, or 210 digits or more before it
  // (a shorter exponent adds at most 99): either marks the body for the check after the parse,
  // which finds the numbers that did overflow.
  let mayOverflow = false;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c >= 0x30 && c <= 0x39) {
      if (!fraction) digits++;
      continue;
    }
    // ".", "e", "E" after digits, and a sign after an exponent, continue the same number.
    if (
      (digits > 0 || fraction) &&
      (c === 0x2e || c === 0x65 || c === 0x45 || (fraction && (c === 0x2b || c === 0x2d)))
    ) {
      fraction = true;
      if (c === 0x65 || c === 0x45) {
        // The exponent is read here, where it starts (rare), not at every number's end.
        let j = i + 1;
        const sign = text.charCodeAt(j);
        if (sign === 0x2b || sign === 0x2d) j++;
        let k = j;
        for (let d = text.charCodeAt(k); d >= 0x30 && d <= 0x39; d = text.charCodeAt(++k));
        if (k - j >= 3) mayOverflow = true;
        i = k - 1;
      }
      continue;
    }
    if (digits > 0 || fraction) {
      // A number ends here (one test for every other character outside strings).
      if (digits >= 16) {
        if (!fraction) longDigits = true;
        if (digits >= 210) mayOverflow = true;
      }
      digits = 0;
      fraction = false;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      containers++;
      if (++depth > maxDepth) maxDepth = depth;
      if (maxDepth > bounds.depth || containers > bounds.containers) break;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  // A bare number as the whole text.
  if (digits >= 16 && !fraction) longDigits = true;
  if (digits >= 210) mayOverflow = true;
  return { depth: maxDepth, containers, longDigits, mayOverflow };
}

/** Non-finite numbers reported in one 422 at most: each is an item, and 5 MiB holds ~900,000. */
const MAX_NON_FINITE_ITEMS = MAX_DETAIL_ITEMS;

/**
 * Where the parsed value holds ±Infinity: a number written past a double's range (1e400). Python's
 * json.loads reads it as inf and pydantic refuses that in a float field as `finite_number`; kept,
 * it would come back as null (json_sort's `{"max":1e400}` answered `{"max":null}`), so no field
 * takes it. Runs only on bodies scanJson marked; depth is bounded by then (MAX_JSON_DEPTH).
 */
export function nonFiniteItems(value: unknown): ErrorItem[] {
  const items: ErrorItem[] = [];
  const loc: Loc = ["body"]; // the path walked, copied only for an item
  const walk = (v: unknown) => {
    if (items.length >= MAX_NON_FINITE_ITEMS) return;
    if (typeof v === "number") {
      // pydantic's JSON form of inf is null (ser_json_inf_nan's default); JSON has no Infinity.
      if (!Number.isFinite(v)) {
        items.push({
          loc: [...loc],
          msg: "Input should be a finite number",
          type: "finite_number",
          input: null,
        });
      }
      return;
    }
    if (v === null || typeof v !== "object") return;
    // No Object.keys: on a 5 MiB array of numbers it made millions of index strings (84 MB).
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length && items.length < MAX_NON_FINITE_ITEMS; i++) {
        loc.push(i);
        walk(v[i]);
        loc.pop();
      }
      return;
    }
    for (const key in v) {
      if (items.length >= MAX_NON_FINITE_ITEMS) return;
      loc.push(key);
      walk((v as Record<string, unknown>)[key]);
      loc.pop();
    }
  };
  walk(value);
  return items;
}

const tooBig = (error: string): ErrorItem => ({
  loc: ["body"],
  msg: "JSON decode error",
  type: "json_invalid",
  input: {},
  ctx: { error },
});

/**
 * JSON.parse with FastAPI's `json_invalid` report (loc carries the character offset).
 * `exactIntegers` keeps integers past 2^53 as written (exact-integers.ts). A number past a
 * double's range is refused as `finite_number` at its path (`item` is the first, `items` all).
 */
export function parseJsonText(
  text: string,
  exactIntegers = false,
): { ok: true; value: unknown } | { ok: false; item: ErrorItem; items?: ErrorItem[] } {
  // JSON.parse accepts any depth, but everything after it (stringify, the skills' walks) recurses:
  // a deep document would overflow the stack there and become a 500.
  const scan = scanJson(text);
  if (scan.depth > MAX_JSON_DEPTH) {
    return {
      ok: false,
      item: tooBig(`recursion limit exceeded: nesting deeper than ${MAX_JSON_DEPTH} levels`),
    };
  }
  if (scan.containers > MAX_JSON_CONTAINERS) {
    return { ok: false, item: tooBig(`more than ${MAX_JSON_CONTAINERS} arrays and objects in one document`) };
  }
  try {
    // The reviver (a second cost per value) runs only when a long integer may be there.
    const value = exactIntegers && scan.longDigits ? parseKeepingIntegers(text) : JSON.parse(text);
    // A long integer kept exact is finite here (a raw JSON number, not a double).
    const nonFinite = scan.mayOverflow ? nonFiniteItems(value) : [];
    if (nonFinite.length > 0) return { ok: false, item: nonFinite[0] as ErrorItem, items: nonFinite };
    return { ok: true, value };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const m = /position (\d+)/.exec(message);
    const pos = m ? Number(m[1]) : text.length;
    return {
      ok: false,
      item: {
        loc: ["body", pos],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: message },
      },
    };
  }
}

/** Strict UTF-8: an undecodable byte throws. A leading BOM is dropped, as Request.text() drops it. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * The continuation bytes a UTF-8 lead byte needs and the range the first of them must fall in
 * (RFC 3629's table: no overlong forms, no surrogates, nothing past U+10FFFF); undefined for a
 * byte that begins no character.
 */
function utf8Lead(b: number): [count: number, lo: number, hi: number] | undefined {
  if (b >= 0xc2 && b <= 0xdf) return [1, 0x80, 0xbf];
  if (b === 0xe0) return [2, 0xa0, 0xbf];
  if (b === 0xed) return [2, 0x80, 0x9f];
  if (b >= 0xe1 && b <= 0xef) return [2, 0x80, 0xbf];
  if (b === 0xf0) return [3, 0x90, 0xbf];
  if (b >= 0xf1 && b <= 0xf3) return [3, 0x80, 0xbf];
  if (b === 0xf4) return [3, 0x80, 0x8f];
  return undefined;
}

/** Offset of the first character the fatal decoder refused. Only run on that path. */
function invalidUtf8At(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    const lead = utf8Lead(b);
    if (!lead) return i;
    const [count, lo, hi] = lead;
    for (let k = 1; k <= count; k++) {
      const x = bytes[i + k];
      if (x === undefined || x < (k === 1 ? lo : 0x80) || x > (k === 1 ? hi : 0xbf)) return i;
    }
    i += count + 1;
  }
  return bytes.length;
}

/**
 * The request body as text, decoded as strict UTF-8. Request.text() replaces each undecodable
 * byte with U+FFFD, so a call would run on other text than was sent (sha256 hashed EF BF BD for
 * a 0xFF); FastAPI refuses such a body. The failure is json_invalid at the byte's offset.
 */
export async function bodyText(
  c: Context,
): Promise<{ ok: true; text: string; bom: boolean } | { ok: false; item: ErrorItem }> {
  // The bytes (Hono keeps them for every later reader); text read lossily by an earlier step would
  // already hold U+FFFD where the bytes were no UTF-8.
  const buffer = await c.req.arrayBuffer();
  try {
    const head = new Uint8Array(buffer, 0, Math.min(3, buffer.byteLength));
    const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf;
    return { ok: true, text: UTF8.decode(buffer), bom };
  } catch {
    const bytes = new Uint8Array(buffer);
    const at = invalidUtf8At(bytes);
    const byte = (bytes[at] ?? 0).toString(16).padStart(2, "0");
    return {
      ok: false,
      item: {
        loc: ["body", at],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: `invalid UTF-8: byte 0x${byte} at offset ${at} begins no character` },
      },
    };
  }
}

/** JSON's whitespace (RFC 8259 ws), the only kind json.loads skips; String.trim() takes more. */
const ONLY_WHITESPACE = /^[ \t\n\r]+$/;

/** Handlers read what these accepted with `c.req.valid(target)`, typed from the schema: no casts. */
type Out<T extends string, S extends z.ZodType> = { out: Record<T, z.output<S>> };
type V<T extends string, S extends z.ZodType> = MiddlewareHandler<AppEnv, string, Out<T, S>>;

/**
 * Validates the JSON body (also stored as `body` for the skill chain). The content type is not
 * policed: agents that forget the header still get an answer; what is not JSON is `json_invalid`.
 * The schema may be given as a function, read on each request, for schemas built on first use
 * (the skills': SkillSpec.input). `exactIntegers`: see parseJsonText.
 */
export function jsonBody<S extends z.ZodType>(
  schemaOrGetter: S | (() => S),
  { exactIntegers = false }: { exactIntegers?: boolean } = {},
): V<"json", S> {
  // zod schemas are objects, never functions.
  const schemaOf = typeof schemaOrGetter === "function" ? schemaOrGetter : () => schemaOrGetter;
  return async (c, next) => {
    const schema = schemaOf();
    const body = await bodyText(c);
    if (!body.ok) return validationResponse(c, [body.item]);
    const text = body.text;
    // FastAPI reads no body and JSON null alike as no body: the required model is missing.
    const missing = () =>
      validationResponse(c, [{ loc: ["body"], msg: "Field required", type: "missing", input: null }]);
    if (text === "" && !body.bom) return missing();
    // Whitespace alone (or a byte order mark alone) is a body: Python's json.loads then finds no
    // value where it ends.
    if (text === "" || ONLY_WHITESPACE.test(text)) {
      return validationResponse(c, [
        {
          loc: ["body", text.length],
          msg: "JSON decode error",
          type: "json_invalid",
          input: {},
          ctx: { error: "Expecting value" },
        },
      ]);
    }
    const parsed = parseJsonText(text, exactIntegers);
    if (!parsed.ok) return validationResponse(c, parsed.items ?? [parsed.item]);
    if (parsed.value === null) return missing();
    const result = validate(schema, parsed.value, ["body"]);
    if (!result.ok) return validationResponse(c, result.items);
    c.set("body", result.data);
    c.req.addValidatedData("json", result.data as object);
    await next();
  };
}

/** Validates query-string parameters (first value of each name). */
export function queryParams<S extends z.ZodType>(schema: S): V<"query", S> {
  return async (c, next) => {
    const raw = c.req.query();
    const result = validate(schema, raw, ["query"]);
    if (!result.ok) return validationResponse(c, result.items);
    c.req.addValidatedData("query", result.data as object);
    await next();
  };
}

/** Validates path parameters. */
export function pathParams<S extends z.ZodType>(schema: S): V<"param", S> {
  return async (c, next) => {
    const raw = c.req.param() as Record<string, string>;
    const result = validate(schema, raw, ["path"]);
    if (!result.ok) return validationResponse(c, result.items);
    c.req.addValidatedData("param", result.data as object);
    await next();
  };
}

/** A required field that takes any JSON value (zod's unknown would let a missing key through). */
export function anyJson(description: string) {
  return z.custom<unknown>((v) => v !== undefined, { message: "Field required" }).meta({ description });
}
