import type { Context, MiddlewareHandler } from "hono";
import * as z from "zod";
import type { AppEnv } from "../env";
import { cutCodePoints } from "../text-cut";
import { isRawJsonNumber } from "./exact-integers";

/**
 * Request validation with FastAPI's error shape (spec 2.5): zod does the checking, this module
 * translates zod issues into pydantic's `{loc, msg, type, input, ctx}` items so clients written
 * against the reference service parse our 422s unchanged. The JSON text a body arrives as (strict
 * UTF-8, depth and container bounds, the parse) and the JSON body middleware are json-text.ts's.
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
// Characters are code points, as pydantic counts a string's length (README).
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
  if (typeof input === "string") return echoString(input, Math.max(1, Math.min(ECHO_MAX, budget)));
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
    const name = echoString(key, ECHO_MAX);
    left -= name.length + 4;
    const item = echo((input as Record<string, unknown>)[key], Math.max(left, 1));
    kept.push([name, item]);
    left -= jsonSizeUpTo(item, Math.max(left, 0));
  }
  return Object.fromEntries(kept);
}

/** `text` whole if it has at most `max` code points, else its first `max` and "…". */
function echoString(text: string, max: number): string {
  // No more units than `max`, so no more code points: only a longer text is walked.
  if (text.length <= max) return text;
  const head = cutCodePoints(text, max);
  return head.length < text.length ? `${head}…` : text;
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
  // JSON has no undefined: only an object built from a form's fields holds one, for a field left
  // empty, which is as missing as an absent one ("Field required", not "a valid string").
  return { found: cur !== undefined, value: cur };
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

/** Handlers read what these accepted with `c.req.valid(target)`, typed from the schema: no casts. */
type Out<T extends string, S extends z.ZodType> = { out: Record<T, z.output<S>> };
export type V<T extends string, S extends z.ZodType> = MiddlewareHandler<AppEnv, string, Out<T, S>>;

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
