import type { Context } from "hono";
import type * as z from "zod";
import { codePointLength } from "../text-cut";
import { parseKeepingIntegers } from "./exact-integers";
import { jsonSyntaxErrorAt } from "./json-syntax-error";
import {
  type ErrorItem,
  type Loc,
  MAX_DETAIL_ITEMS,
  type V,
  validate,
  validationResponse,
} from "./validation";

/**
 * JSON text as it arrives, before any schema sees it: strict UTF-8 (bodyText), the bounds every
 * JSON entry point has and the one pass that checks them without allocating (scanJson), and the
 * parse that keeps long integers exact and refuses numbers past a double's range (parseJsonText);
 * then the JSON body middleware, which is these and validation.ts's schema check in a row. Apart
 * from the 422 shaping because more than request bodies are read here: /mcp's message, a partner's
 * or a fetched page's answer, an x402 header and a page's JSON-LD are bounded by the same scan and
 * are never judged by a schema. What is refused here is a 422 item all the same (json_invalid,
 * finite_number), so this module builds on validation.ts, never the other way round.
 */

/** pydantic's JSON parser (jiter) refuses documents nested deeper than this; so do we. */
export const MAX_JSON_DEPTH = 200;

/**
 * Arrays and objects one body may hold. V8 keeps ~70 bytes per empty object: 5 MiB of `{},` is
 * 1.7 million of them, ~120 MB parsed, past a Worker's 128 MB (and the isolate's other requests
 * die with it). Real documents of 5 MiB hold far fewer: 100,000 records of 45 bytes are 100,001.
 */
export const MAX_JSON_CONTAINERS = 500_000;

/** How deep, and how many arrays and objects, one JSON document may be. */
export interface JsonBounds {
  depth: number;
  containers: number;
}
/** A JSON body's bounds. */
export const BODY_BOUNDS: JsonBounds = { depth: MAX_JSON_DEPTH, containers: MAX_JSON_CONTAINERS };
/**
 * A body that holds another body one level down, as the checkout's `payload` holds a skill's: one
 * level and one object more, so a payload the skill's route takes is taken here too.
 */
export const HOLDING_BODY_BOUNDS: JsonBounds = {
  depth: MAX_JSON_DEPTH + 1,
  containers: MAX_JSON_CONTAINERS + 1,
};

/**
 * One pass over the text, outside strings, before anything is parsed: nesting depth, the number
 * of arrays and objects, whether an integer of 16 digits or more (one that may pass 2^53) occurs,
 * and whether a number may lie past a double's range (`mayOverflow`: JSON.parse makes ±Infinity of
 * it, which JSON.stringify writes as null). Stops as soon as a bound is crossed. Allocates
 * nothing: the walk of the parsed value it replaces kept a pair per node (~100 MB more on the
 * body above). `bounds` are a JSON body's unless a caller scans a document that holds one (/mcp's
 * message: the arguments inside an envelope).
 */
export function scanJson(text: string, bounds: JsonBounds = BODY_BOUNDS) {
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
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
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
    if (c === 0x22) i = stringEnd(text, i);
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

/**
 * Where the string opened by the quote at `open` closes: the next quote preceded by an even run of
 * backslashes (an odd run escapes it), or the text's end if none does. indexOf finds the quotes
 * natively: most of a body is inside strings, and a loop of charCodeAt over them was most of this
 * scan's cost (docs/PERFORMANCE.md, stop 39). Each backslash is counted at most once, for the quote
 * it stands before, so the walk stays linear.
 */
function stringEnd(text: string, open: number): number {
  for (let from = open + 1; ; ) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let k = quote - 1;
    while (k > open && text.charCodeAt(k) === 0x5c) k--;
    if ((quote - 1 - k) % 2 === 0) return quote;
    from = quote + 1;
  }
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
 * JSON.parse with FastAPI's `json_invalid` report (loc carries the offset in characters: syntaxError).
 * `exactIntegers` keeps integers past 2^53 as written (exact-integers.ts). A number past a
 * double's range is refused as `finite_number` at its path (`item` is the first, `items` all).
 */
export function parseJsonText(
  text: string,
  exactIntegers = false,
  bounds: JsonBounds = BODY_BOUNDS,
): { ok: true; value: unknown } | { ok: false; item: ErrorItem; items?: ErrorItem[] } {
  // JSON.parse accepts any depth, but everything after it (stringify, the skills' walks) recurses:
  // a deep document would overflow the stack there and become a 500.
  const scan = scanJson(text, bounds);
  if (scan.depth > bounds.depth) {
    return {
      ok: false,
      item: tooBig(`recursion limit exceeded: nesting deeper than ${bounds.depth} levels`),
    };
  }
  if (scan.containers > bounds.containers) {
    return { ok: false, item: tooBig(`more than ${bounds.containers} arrays and objects in one document`) };
  }
  try {
    // The reviver (a second cost per value) runs only when a long integer may be there.
    const value = exactIntegers && scan.longDigits ? parseKeepingIntegers(text) : JSON.parse(text);
    // A long integer kept exact is finite here (a raw JSON number, not a double).
    const nonFinite = scan.mayOverflow ? nonFiniteItems(value) : [];
    if (nonFinite.length > 0) return { ok: false, item: nonFinite[0] as ErrorItem, items: nonFinite };
    return { ok: true, value };
  } catch (e) {
    const { at, error } = syntaxError(text, e instanceof Error ? e.message : String(e));
    return {
      ok: false,
      item: { loc: ["body", at], msg: "JSON decode error", type: "json_invalid", input: {}, ctx: { error } },
    };
  }
}

/**
 * V8's messages whose position is where Python's json puts the same error (in UTF-16 units): a
 * comma, colon, closer, member name or end that was due, a control character in a string. Those
 * it gives elsewhere (an unterminated string's end, not its start; a bad escape's next character,
 * not its backslash; number errors past the number) or not at all ("Unexpected token …",
 * "Unexpected end …") are found by jsonSyntaxErrorAt. A message worded otherwise (another V8) is
 * found too: only the cost differs.
 */
const V8_PLACES_AS_PYTHON =
  /^(?:Unexpected non-whitespace character after JSON|Expected property name or '\}'|Expected double-quoted property name|Expected ':' after property name|Expected ',' or '[}\]]' after (?:property value|array element)|Bad control character in string literal) in JSON at position (\d+)/;

/**
 * Where JSON.parse's error stands, and its message, in characters (code points) from the text's
 * start, at the point Python's json names (FastAPI's loc). V8's own positions count UTF-16 units
 * (`{"text":"😀😀", }` at 16, Python's 14), name another point for some errors (an unterminated
 * string's end, not its start) and are missing from "Unexpected token …" and "Unexpected end …",
 * whose excerpt of the text can also quote half a surrogate pair: those become pydantic's
 * "Expecting value". V8's position is kept where it is Python's (V8_PLACES_AS_PYTHON); the others
 * cost a second pass over the text (jsonSyntaxErrorAt), cheap next to the parse itself.
 */
function syntaxError(text: string, message: string): { at: number; error: string } {
  const v8 = V8_PLACES_AS_PYTHON.exec(message);
  let unit: number;
  if (v8) unit = Number(v8[1]);
  else {
    const found = jsonSyntaxErrorAt(text);
    unit = found < 0 ? text.length : found;
  }
  // Code points before the error, its line and its column, in one pass of charCodeAt (a surrogate
  // pair is one character, a lone half one): regex replaces that matched once per pair or per line
  // cost 10-20 times the parse on 5 MiB of emoji in workerd.
  let pairs = 0;
  let lines = 0;
  let lineStart = 0;
  let pairsOnLine = 0;
  for (let i = 0; i < unit; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) {
      lines++;
      lineStart = i + 1;
      pairsOnLine = 0;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < unit) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        pairs++;
        pairsOnLine++;
        i++;
      }
    }
  }
  const at = unit - pairs;
  const m = /position \d+(?: \(line \d+ column \d+\))?/.exec(message);
  if (m) {
    const column = unit - lineStart - pairsOnLine + 1;
    return { at, error: message.replace(m[0], `position ${at} (line ${lines + 1} column ${column})`) };
  }
  const bom =
    text.charCodeAt(unit) === 0xfeff ? ", found U+FEFF (a byte order mark: one at most, first)" : "";
  return { at, error: `Expecting value${bom}` };
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
 * a 0xFF); FastAPI refuses such a body. The failure is json_invalid where the byte stands.
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
    const offset = invalidUtf8At(bytes);
    const byte = (bytes[offset] ?? 0).toString(16).padStart(2, "0");
    // loc counts characters, as every json_invalid does: those before the byte (after a BOM), which
    // decode. The byte offset, the only unit the byte itself has, is in the message.
    const at = codePointLength(UTF8.decode(bytes.subarray(0, offset)));
    return {
      ok: false,
      item: {
        loc: ["body", at],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: `invalid UTF-8: byte 0x${byte} at byte offset ${offset} begins no character` },
      },
    };
  }
}

/** JSON's whitespace (RFC 8259 ws), the only kind json.loads skips; String.trim() takes more. */
const ONLY_WHITESPACE = /^[ \t\n\r]+$/;

/**
 * Validates the JSON body (also stored as `body` for the skill chain). The content type is not
 * policed: agents that forget the header still get an answer; what is not JSON is `json_invalid`.
 * The schema may be given as a function, read on each request, for schemas built on first use
 * (the skills': SkillSpec.input). `exactIntegers`: see parseJsonText.
 */
export function jsonBody<S extends z.ZodType>(
  schemaOrGetter: S | (() => S),
  { exactIntegers = false, bounds = BODY_BOUNDS }: { exactIntegers?: boolean; bounds?: JsonBounds } = {},
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
    const parsed = parseJsonText(text, exactIntegers, bounds);
    if (!parsed.ok) return validationResponse(c, parsed.items ?? [parsed.item]);
    if (parsed.value === null) return missing();
    const result = validate(schema, parsed.value, ["body"]);
    if (!result.ok) return validationResponse(c, result.items);
    c.set("body", result.data);
    c.req.addValidatedData("json", result.data as object);
    await next();
  };
}
