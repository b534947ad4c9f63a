import {
  format,
  ignoredKeyword,
  initialBaseURI,
  type OutputUnit,
  type Schema,
  type SchemaDraft,
  schemaArrayKeyword,
  schemaMapKeyword,
  Validator,
} from "@cfworker/json-schema";
import { withShortErrorLists } from "./schema-errors";
import { checkPattern, compileRe2, NativeRegExp, nativeCheckMicroseconds, testCost } from "./schema-patterns";

/**
 * Bounded work for json_schema_validate (issue 15).
 *
 * @cfworker/json-schema is a plain recursive evaluator: `$ref` chains can make a tiny schema
 * evaluate 2^n subschemas, `uniqueItems` is quadratic, `pattern` and `patternProperties` run on
 * JavaScript's backtracking RegExp (`^(a+)+$` on 30 characters burns seconds), and its `url`
 * format regex is exponential. We keep the library and meter it from the outside; the one change
 * to it (patches/, applied by patch-package on install) makes its quadratic uniqueItems linear:
 *
 * - every subschema object gets a non-enumerable accessor on a key `validate()` destructures on
 *   each call, so each evaluation of a subschema spends units (more for big enum/const/properties);
 * - what an evaluation does besides recursing (comparing enum values, combinator bookkeeping) is
 *   charged with it, sized for the largest value of the instance where the accessor cannot see
 *   which value is being checked;
 * - where the library hands us the value it works on, it is charged by that value instead: the
 *   string a `minLength`/`maxLength` measures (through the schema's `pattern`, below) and the
 *   message a failing `enum`/`const` writes (through the value's `toJSON`), and the array a
 *   `uniqueItems` checks (through `Array.isArray`, below);
 * - big instance objects are Proxies that charge each listing of their keys;
 * - while the validator runs, the global `RegExp` it constructs for `pattern`/`patternProperties`
 *   is a linear-time RE2 (re2js) stand-in, and every format check spends units by length;
 * - while it runs, its error lists hold only their first errors (`Array.prototype.push` is
 *   schema-errors.ts's): the budget counts CPU, and a million kept errors were ~150 MB;
 * - the run stops with WorkLimitExceeded once the budget is spent.
 *
 * Validation is synchronous, so swapping the global RegExp (push, isArray, encodeURI) for its duration cannot
 * leak into other requests of the isolate; each is restored in a finally.
 */

/**
 * The unit is one evaluation of one subschema against one small instance value (3 to 6 µs measured,
 * see docs/LIMITS.md). A call may spend WORK_BUDGET_BASE units plus WORK_BUDGET_PER_NODE per JSON
 * node of its instance and schema: enough to check every node a few times over, linear in the
 * request whatever the schema does.
 */
export const WORK_BUDGET_BASE = 5_000;
export const WORK_BUDGET_PER_NODE = 4;
// What else costs about one evaluation (measured in node on this project's dev machine).
const OWN_NODES_PER_UNIT = 16; // required/dependencies entries looked up, enum/const object nodes deep-compared
/**
 * `properties` entries the library walks per evaluation of an object (Object.entries of the map,
 * hasOwnProperty on the instance, however few keys the instance has): 20-40 ns an entry (workerd
 * and node, 2-core machine at load 7-10) while the map keeps V8's fast properties. Past
 * FAST_PROPERTIES entries it is a dictionary, which Object.entries sorts: 180-280 ns an entry
 * (1,021 to 50,000 entries), so 5,000 properties over 100,000 `{}` (419 KB) took 2-4 s at 1/16.
 */
const PROPERTIES_PER_UNIT = 32;
const DICTIONARY_PROPERTIES_PER_UNIT = 8;
/** V8's kMaxNumberOfDescriptors: an object with more properties is a dictionary (the clone's too). */
const FAST_PROPERTIES = 1_020;
/** Primitive enum values compared per evaluation (`===`, or a type check against an object: 4-10 ns). */
const ENUM_VALUES_PER_UNIT = 64;
/**
 * A failing enum/const writes its whole value as JSON into the error message, and the first errors
 * of each list are kept until the answer is built (schema-errors.ts): charged per byte of it, so a
 * call's messages stay within budget × 32 bytes (a 900 KB const failed by 100 items held 92 MB and
 * 634 ms while charged 107 units).
 */
const MESSAGE_BYTES_PER_UNIT = 32;
const KEYS_PER_UNIT = 2; // keys of a big (proxied) object listed (Object.keys, for-in) by an evaluation
/**
 * What the patched uniqueItems costs on an array (uniqueUnits): one canonical key per item, built
 * in one pass over the item (its object keys sorted) and looked up in a Map, so linear in the
 * items' JSON nodes and characters (strings and object keys). Measured in workerd (2-core machine
 * at load 7-8, one evaluation of `{"uniqueItems": true}`, unique items, less `{"type": "array"}`):
 * 200,000 integers 16-22 ms, 200,000 8-letter strings 26-50 ms, 50,000 `{"sNNN": {}}` 44-54 ms,
 * 30,000 records of nested `{}`/`[]` (240,000 nodes) 43-162 ms, 3,000 objects of 60 keys 83-108 ms,
 * 1,000 arrays 200 deep 24-57 ms: 0.1-0.7 µs a node; 100 strings of 50,000 characters 1.4-2.1 ms
 * (3.4-3.6 two-byte), 1,000 objects of two 2,000-character keys 3.3-9.5 ms: at most 2.4 ns a
 * character. A key holds its strings as they are (nothing escaped), so lone surrogates and control
 * characters cost what letters do (docs/LIMITS.md). So a unit (MICROSECONDS_PER_UNIT) pays for 4
 * nodes and CHARS_PER_UNIT characters.
 */
const UNIQUE_NODES_PER_UNIT = 4;
const UNITS_PER_BRANCH = 2; // anyOf/oneOf/allOf bookkeeping per branch (evaluated-set merging)
/** Objects with more keys than this are metered by a Proxy each time their keys are listed. */
const METERED_KEYS = 64;
const CHARS_PER_UNIT = 1_024; // characters scanned by minLength/maxLength, a regex or a format
/** What one unit costs at least (the measured 3 to 6 µs above): other costs are converted by it. */
const MICROSECONDS_PER_UNIT = 3;

export class WorkLimitExceeded extends Error {
  constructor(readonly budget: number) {
    super(`validation needs more than ${budget} work units`);
  }
}

class Meter {
  used = 0;
  constructor(readonly budget: number) {}
  spend(units: number) {
    this.used += units;
    if (this.used > this.budget) throw new WorkLimitExceeded(this.budget);
  }
}

let active: Meter | undefined;
const spend = (units: number) => active?.spend(units);

/**
 * What the validator gets for `new RegExp(pattern, "u")` while it runs. Construction checks the
 * ECMAScript syntax with the native engine (the `regex` format relies on that, and invalid
 * patterns stay schema errors) without ever executing it; `test` runs on RE2.
 */
class Re2RegExp {
  readonly source: string | undefined;
  readonly lengthChecked: boolean;
  constructor(pattern: string | LengthChecked, flags?: string) {
    this.lengthChecked = pattern instanceof LengthChecked;
    const source = pattern instanceof LengthChecked ? pattern.pattern : pattern;
    if (source !== undefined) new NativeRegExp(source, flags); // throws SyntaxError like the real constructor; never runs
    this.source = source;
  }
  test(input: string): boolean {
    if (this.lengthChecked) spend(input.length / CHARS_PER_UNIT);
    if (this.source === undefined) return true;
    spend(testCost(this.source, input.length, CHARS_PER_UNIT));
    return compileRe2(this.source).test(input);
  }
}

/**
 * What a schema with `minLength` or `maxLength` has as its `pattern` while the validator runs (its
 * own pattern inside, if any). The library measures a string (ucs2length, every character) right
 * before it tests the pattern on the same string with `new RegExp($pattern, "u")`, which is
 * Re2RegExp then: that test charges the length of the string measured. The accessor could only
 * charge the longest string of the whole instance on every evaluation: one 200 KB field made each
 * `maxLength: 200` of 1,000 titles cost 195 units.
 */
class LengthChecked {
  constructor(readonly pattern: string | undefined) {}
}

// The library's formats run per string per evaluation: charge them by length. Its `url` regex
// is exponential ("http://" + 30 letters + "\0" takes seconds, 40 never ends); it is replaced by
// the WHATWG URL parser with the same intent (http, https or ftp, a public host). Its `regex` is
// the native syntax check of the string, which costs by what the string holds, not its length:
// 4,800 `[\p{L}\p{N}\p{M}]` (81 KB, charged 80 units by length) took 1.3 s. It is charged what
// the check will cost (nativeCheckMicroseconds, converted to units) before it runs, so a string
// the budget cannot pay for is a 422 work_limit_exceeded, never answered valid or invalid unchecked.
const PRIVATE_V4 = /^(?:10|127)\.|^169\.254\.|^192\.168\.|^172\.(?:1[6-9]|2\d|3[01])\./;
function isUrl(s: string): boolean {
  if (/\s/.test(s)) return false;
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return false;
  }
  if (!["http:", "https:", "ftp:"].includes(url.protocol) || url.hostname === "") return false;
  const host = url.hostname;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) return !PRIVATE_V4.test(host) && host !== "0.0.0.0";
  if (host.startsWith("[")) return true;
  return /\.[a-z\u00a1-\uffff-]{2,}\.?$/i.test(host) || host.startsWith("xn--");
}
let formatsMetered = false;
const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
function meterFormats() {
  if (formatsMetered) return;
  formatsMetered = true;
  const table = format as Record<string, (s: string) => boolean>;
  table.url = isUrl;
  // The library's ipv4 took leading zeros ("01.1.1.1"), which JSON Schema's test suite refuses
  // (RFC 2673 dotted-quad; a leading zero reads as octal in many parsers).
  table.ipv4 = (s: string) => IPV4.test(s);
  const regex = table.regex as (s: string) => boolean;
  table.regex = (s: string) => {
    spend(nativeCheckMicroseconds(s) / MICROSECONDS_PER_UNIT);
    return regex(s);
  };
  for (const [name, check] of Object.entries(table)) {
    table[name] = (s: string) => {
      spend(0.5 + s.length / CHARS_PER_UNIT);
      return check(s);
    };
  }
}

/** JSON nodes in a value (iterative; counts at most `cap`). */
function nodeCount(value: unknown, cap = Number.POSITIVE_INFINITY): number {
  let n = 0;
  const stack = [value];
  while (stack.length > 0 && n < cap) {
    const v = stack.pop();
    n++;
    if (v !== null && typeof v === "object") for (const child of Object.values(v)) stack.push(child);
  }
  return n;
}

interface InstanceFacts {
  nodes: number;
  longestString: number;
  /** What a uniqueItems costs on each array of the instance with 2 items or more. */
  unique: WeakMap<unknown[], number>;
}

/** Units of the patched uniqueItems on an array whose items hold `nodes` nodes and `chars` characters. */
const uniqueUnits = (nodes: number, chars: number) => nodes / UNIQUE_NODES_PER_UNIT + chars / CHARS_PER_UNIT;

/**
 * Measures the instance and wraps its big objects (in place, bottom-up) in a Proxy that charges
 * each listing of their keys: every evaluation of an object lists them, and an evaluation of a
 * 1,500-key object costs ~60 times one of a small value.
 */
function meterInstance(root: unknown, unique: boolean): { value: unknown; facts: InstanceFacts } {
  const facts: InstanceFacts = { nodes: 0, longestString: 0, unique: new WeakMap() };
  // Nodes and characters (strings, object keys) of the value the last wrap was given.
  let nodesOf = 0;
  let charsOf = 0;
  // Depth is bounded by the JSON parser (MAX_JSON_DEPTH), so recursion is safe here.
  const wrap = (v: unknown): unknown => {
    facts.nodes++;
    nodesOf = 1;
    charsOf = 0;
    if (typeof v === "string") {
      facts.longestString = Math.max(facts.longestString, v.length);
      charsOf = v.length;
    }
    if (v === null || typeof v !== "object") return v;
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj);
    const array = Array.isArray(v);
    let nodes = 1;
    let chars = 0;
    for (const key of keys) {
      obj[key] = wrap(obj[key]);
      nodes += nodesOf;
      chars += charsOf + (array ? 0 : key.length);
    }
    nodesOf = nodes;
    charsOf = chars;
    // The patched check returns before building a key when there is no pair to compare.
    if (array) {
      if (unique && keys.length > 1) facts.unique.set(v as unknown[], uniqueUnits(nodes, chars));
      return v;
    }
    if (keys.length <= METERED_KEYS) return v;
    return new Proxy(obj, {
      ownKeys(target) {
        const own = Reflect.ownKeys(target);
        spend(own.length / KEYS_PER_UNIT);
        return own;
      },
    });
  };
  return { value: wrap(root), facts };
}

/**
 * What `Array.isArray` is while the validator runs: the native check, noting the array it was
 * asked about (or none). The library asks it about every object instance right before it
 * destructures the subschema (the meter's accessor), with nothing in between, so the accessor
 * knows the array a `uniqueItems` is about to check. The accessor clears it: a primitive instance
 * asks nothing and finds nothing, unless something else asked since (a `type` list, a deep
 * compare): an instance array noted then is charged, never less than the work.
 */
const nativeIsArray = Array.isArray;
let checked: unknown[] | undefined;
function notingIsArray(value: unknown): value is unknown[] {
  const array = nativeIsArray(value);
  checked = array ? (value as unknown[]) : undefined;
  return array;
}

/**
 * Whether the installed library carries patches/' linear uniqueItems, found out once per isolate
 * (on the first schema that needs it): its check lists each of 3 items' keys once, the pairwise
 * loop lists them for every pair it deep-compares (12 times). Without it a schema with a truthy
 * uniqueItems is refused as over budget, and one warn line says why: the pairwise loop
 * deep-compares every pair of items, so its cost is the array's length times its size (and strings'
 * lengths), which no charge computed ahead of time bounds honestly (1,000 near-equal arrays of 500
 * zeros, 1 MB, ran 27 s under the old n²/250 charge). A deploy cannot get here (the build refuses
 * an unpatched library: scripts/build-worker.mjs); an install that skipped `postinstall` can.
 */
let linearUniqueItems: boolean | undefined;
type UniqueItemsCheck = (items: unknown[]) => unknown;
const libraryCheck: UniqueItemsCheck = (items) =>
  new Validator({ uniqueItems: true }, "2020-12", false).validate(items);
let probed = libraryCheck;
function uniqueItemsIsLinear(): boolean {
  if (linearUniqueItems === undefined) {
    let listings = 0;
    const items = [0, 1, 2].map(
      (id) =>
        new Proxy(
          { id },
          {
            ownKeys(target) {
              listings++;
              return Reflect.ownKeys(target);
            },
          },
        ),
    );
    try {
      probed(items);
      linearUniqueItems = listings === items.length;
    } catch {
      // A library that changed under the patch: not known to be linear.
      linearUniqueItems = false;
    }
    if (!linearUniqueItems)
      console.warn(
        JSON.stringify({
          level: "warn",
          msg: "json-schema patch not applied",
          detail:
            "uniqueItems is the library's pairwise loop: schemas using it are refused as over budget; rm -rf node_modules/@cfworker/json-schema && npm install",
        }),
      );
  }
  return linearUniqueItems;
}

/** Tests: probe again on next use, `check` standing in for the library's uniqueItems. */
export function resetUniqueItemsProbeForTest(check: UniqueItemsCheck = libraryCheck): void {
  linearUniqueItems = undefined;
  probed = check;
}

/** Whether any object in `schema` has a truthy `uniqueItems` (every subschema that has one, and more). */
function mentionsUniqueItems(schema: unknown): boolean {
  const stack = [schema];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== "object") continue;
    if ((v as Record<string, unknown>).uniqueItems) return true;
    for (const child of Object.values(v)) stack.push(child);
  }
  return false;
}

const size = (v: unknown) => (v === undefined ? 0 : nodeCount(v));
const size1 = (v: unknown) => (Array.isArray(v) ? v.length : 0);
const keyCount = (v: unknown) => (v && typeof v === "object" ? Object.keys(v).length : 0);

/** JSON nodes of a value and the characters of its strings. */
function measure(value: unknown): { nodes: number; chars: number } {
  let nodes = 0;
  let chars = 0;
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    nodes++;
    if (typeof v === "string") chars += v.length;
    else if (v !== null && typeof v === "object") for (const child of Object.values(v)) stack.push(child);
  }
  return { nodes, chars };
}

/**
 * Units of comparing one instance value with `values` (enum's, or [const]): a primitive instance
 * is compared with `===`, an object or array with deepCompareStrict, which stops at a type that
 * differs. So a primitive value costs a compare, plus its characters (two strings of one length are
 * compared character by character); an object or array one its nodes and characters, as deep as
 * the instance might match it.
 */
function compareUnits(values: unknown[]): number {
  let units = 0;
  for (const v of values) {
    if (v !== null && typeof v === "object") {
      const { nodes, chars } = measure(v);
      units += nodes / OWN_NODES_PER_UNIT + chars / CHARS_PER_UNIT;
    } else units += 1 / ENUM_VALUES_PER_UNIT + (typeof v === "string" ? v.length / CHARS_PER_UNIT : 0);
  }
  return units;
}

/** Units of the failure message that writes `value` as JSON (two-byte text counts twice). */
function messageUnits(value: unknown): number {
  const json = JSON.stringify(value) ?? "";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the one-byte range starts at NUL
  return (json.length * (/[^\u0000-\u00ff]/.test(json) ? 2 : 1)) / MESSAGE_BYTES_PER_UNIT;
}

/**
 * Charges `units` each time the library writes `value` into a failure message: JSON.stringify
 * calls its toJSON (hidden: not a key the comparisons see), which answers the value itself. False
 * where it cannot (a primitive, or a value with a "toJSON" key of its own): then the caller charges
 * every evaluation, since any may fail.
 */
function chargeOnMessage(value: unknown, units: number): boolean {
  if (value === null || typeof value !== "object" || Object.hasOwn(value, "toJSON")) return false;
  Object.defineProperty(value, "toJSON", {
    enumerable: false,
    configurable: true,
    value() {
      spend(units);
      return this;
    },
  });
  return true;
}

/**
 * What an evaluation spends on an enum or const `value` besides the unit: comparing with `compared`
 * (its values), and the failure's message where that cannot be charged when it is written.
 */
function valueUnits(value: unknown, compared: unknown[]): number {
  const message = messageUnits(value);
  return compareUnits(compared) + (chargeOnMessage(value, message) ? 0 : message);
}

// Keys validate() destructures on every call; the first one a schema lacks carries the meter. A
// schema that holds every one of them could not be metered: it is refused (meteredValidation).
const METER_KEYS = [
  "__absolute_recursive_ref__",
  "__absolute_ref__",
  "maxContains",
  "minContains",
  "unevaluatedItems",
  "additionalItems",
  "dependencies",
  "dependentSchemas",
  "dependentRequired",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "multipleOf",
  "exclusiveMinimum",
  "exclusiveMaximum",
];

/**
 * Walks the subschemas the way the library's dereference does (same keyword tables), checks every
 * `pattern` and `patternProperties` key for RE2, and installs the per-evaluation charge.
 */
function meterSchema(root: unknown, facts: InstanceFacts): { unmetered: number } {
  let patterns = 0;
  let unmetered = 0;
  const check = (pattern: string, at: (string | number)[]) => {
    patterns += checkPattern(pattern, at, patterns);
  };
  const visit = (schema: unknown, path: (string | number)[]) => {
    if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return;
    const s = schema as Record<string, unknown>;
    if (typeof s.pattern === "string") check(s.pattern, [...path, "pattern"]);
    if (s.patternProperties && typeof s.patternProperties === "object")
      for (const p of Object.keys(s.patternProperties)) check(p, [...path, "patternProperties", p]);
    // One evaluation is one unit; what it does besides recursing is charged in the same currency,
    // pessimistically for the biggest instance value it could meet (the accessor cannot see which).
    const ownWork =
      size(s.required) + size(s.dependentRequired) + size(s.dependencies) + keyCount(s.patternProperties);
    const properties = keyCount(s.properties);
    // A string's length is charged when it is measured (LengthChecked), unless the schema's pattern
    // is no string (the library's RegExp reads it as one): then for the longest, every evaluation.
    const lengthChecked =
      (s.minLength !== undefined || s.maxLength !== undefined) &&
      (s.pattern === undefined || typeof s.pattern === "string");
    const weight =
      1 +
      ownWork / OWN_NODES_PER_UNIT +
      properties / (properties <= FAST_PROPERTIES ? PROPERTIES_PER_UNIT : DICTIONARY_PROPERTIES_PER_UNIT) +
      (s.enum === undefined ? 0 : valueUnits(s.enum, Array.isArray(s.enum) ? s.enum : [s.enum])) +
      (s.const === undefined ? 0 : valueUnits(s.const, [s.const])) +
      UNITS_PER_BRANCH * (size1(s.anyOf) + size1(s.oneOf) + size1(s.allOf)) +
      ((s.minLength !== undefined || s.maxLength !== undefined) && !lengthChecked
        ? facts.longestString / CHARS_PER_UNIT
        : 0);
    // The library runs its check for any truthy value (`if ($uniqueItems)`), not only true: it is
    // charged for the array the evaluation is about to check (notingIsArray), if it is one.
    const unique = Boolean(s.uniqueItems);
    const key = METER_KEYS.find((k) => !Object.hasOwn(s, k));
    if (!key) unmetered++;
    if (key) {
      Object.defineProperty(s, key, {
        enumerable: false,
        configurable: true,
        get() {
          const array = checked;
          checked = undefined;
          spend(weight + (unique && array ? (facts.unique.get(array) ?? 0) : 0));
          return undefined;
        },
      });
    }
    for (const k in s) {
      if (ignoredKeyword[k]) continue;
      const sub = s[k];
      if (Array.isArray(sub)) {
        if (schemaArrayKeyword[k]) for (const [i, item] of sub.entries()) visit(item, [...path, k, i]);
      } else if (schemaMapKeyword[k]) {
        if (sub && typeof sub === "object")
          for (const [name, item] of Object.entries(sub)) visit(item, [...path, k, name]);
      } else visit(sub, [...path, k]);
    }
    // After the walk, which would read the stand-in as a subschema.
    if (lengthChecked) {
      const pattern = new LengthChecked(s.pattern as string | undefined);
      if (Object.hasOwn(s, "pattern")) s.pattern = pattern;
      else Object.defineProperty(s, "pattern", { enumerable: false, configurable: true, value: pattern });
    }
  };
  visit(root, []);
  return { unmetered };
}

/**
 * What the validator's index of subschemas may hold, in bytes of heap (see lookupSize).
 *
 * `new Validator` (the library's dereference) keys every subschema by its URI: the base URI, "#"
 * and its whole JSON pointer, each segment through encodeURI (a space is 3 characters, an "é" 6).
 * The keys grow with nesting × key length, not with the request: 99 levels of `properties` under
 * one 10,500-space key (a 1 MiB body) made 156 M characters (~170 MB), past the isolate's 128 MB,
 * which took every request in flight on it down. Nested `$id`s multiply it again: below each
 * non-root `$id` the library walks the subtree once more (under the `$id`'s URI), so 22 nested ones
 * took 14 s of CPU before validation started.
 *
 * Heap measured in node (--expose-gc, heapUsed after dereference): ~1 byte a character (the keys
 * are ASCII) plus ~66 bytes a key. A real 800 KB schema (Biome's configuration schema, 12,634
 * subschemas) counts 2.2 M here, in 63 ms. The largest accepted inputs measured: 99 levels under
 * one 1,198-letter key (a 120 KB body) 6.1 MB, 54,645 empty properties (590 KB) 6.8 MB, 57,247
 * `true`s in one allOf 6.5 MB, 14 nested `$id`s (the 15th is refused) 114 ms of dereference.
 */
export const MAX_LOOKUP_BYTES = 6_000_000;
/** Heap of one lookup entry besides its characters (measured ~66: the property, the internalized key). */
const KEY_BYTES = 64;

export class LookupTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the schema's index of subschemas would take more than ${limit} bytes`);
  }
}

/** The library would throw here itself (an id or a reference no URL parser reads). */
class Unmeasurable extends Error {}

// What encodeURI(escapePointer(c)).replace(/#/g, "%23") writes for each ASCII character: "~" and "/"
// are escaped to "~0" and "~1", "#" to "%23", the characters encodeURI keeps stay, others are %XX.
const ASCII_POINTER_LENGTH = Array.from({ length: 128 }, (_, c) => {
  const ch = String.fromCharCode(c);
  if (ch === "~" || ch === "/") return 2;
  return /[A-Za-z0-9;,?:@&=+$\-_.!*'()]/.test(ch) ? 1 : 3;
});

/** Length of the library's encodePointer(key), counted without building it. */
function pointerSegmentLength(key: string): number {
  let n = 0;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x80) n += ASCII_POINTER_LENGTH[c] ?? 3;
    else if (c < 0x800) n += 6;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = key.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 12; // 4 UTF-8 bytes
        i++;
      } else n += 9; // a lone surrogate is written as U+FFFD (wellFormedEncodeURI)
    } else n += 9;
  }
  return n;
}

const UNRESERVED = /^[A-Za-z0-9._~-]$/;
const FRAGMENT_CHARACTER = /^[A-Za-z0-9._~!$&'()*+,;=:@/?-]$/;

/**
 * Length of the href the library's resolveURI makes of `url`: its fragment normalized (a %XX of
 * an unreserved character decoded, a character outside the fragment set percent-encoded). The
 * WHATWG parser has already made the fragment ASCII.
 */
function resolvedLength(url: URL): number {
  const hash = url.hash;
  let n = url.href.length - hash.length;
  if (hash === "") return n;
  n++;
  for (let i = 1; i < hash.length; i++) {
    const ch = hash[i] as string;
    const code = hash.slice(i + 1, i + 3);
    if (ch === "%" && /^[0-9A-Fa-f]{2}$/.test(code)) {
      n += UNRESERVED.test(String.fromCharCode(Number.parseInt(code, 16))) ? 1 : 3;
      i += 2;
    } else n += FRAGMENT_CHARACTER.test(ch) ? 1 : 3;
  }
  return n;
}

function resolve(reference: unknown, base: URL): URL {
  try {
    return new URL(reference as string, base.href);
  } catch {
    throw new Unmeasurable();
  }
}

const isSchema = (v: unknown) =>
  typeof v === "boolean" || (v !== null && typeof v === "object" && !Array.isArray(v));

/**
 * What the library's dereference will build for `root`, counted without building it: `keys` and
 * `chars` of the lookup (one key per visit of a subschema, a nested `$id` visiting its subtree
 * again), `other` for what it reads or resolves besides (each entry it passes, each key it encodes
 * for a value that is no schema, each `$ref` it resolves). It walks the way dereference does (its
 * keyword tables and order) and keeps each pointer as a length, so its own work is linear in what
 * it counts; it stops with LookupTooLarge once the estimated heap passes `limit`, so a schema that
 * would visit its subschemas exponentially often costs at most the bound. Where the library would
 * throw (an unparseable `$id`), it stops and returns the counts so far.
 */
export function lookupSize(root: unknown, limit = MAX_LOOKUP_BYTES) {
  const size = { keys: 0, chars: 0, other: 0 };
  const bytes = () => size.chars + KEY_BYTES * size.keys + size.other;
  const key = (length: number) => {
    size.keys++;
    size.chars += length;
    if (bytes() > limit) throw new LookupTooLarge(limit);
  };
  const other = (n: number) => {
    size.other += n;
    if (bytes() > limit) throw new LookupTooLarge(limit);
  };
  const resolved = new WeakSet<object>(); // the library resolves a $ref once (__absolute_ref__)
  // `pointer` is the length of the pointer below `base` (0 at the root of a walk).
  const visit = (schema: unknown, base: URL, baseLength: number, pointer: number): void => {
    if (typeof schema === "object" && schema !== null && !Array.isArray(schema)) {
      const s = schema as Record<string, unknown>;
      const id = s.$id || s.id;
      if (id) {
        const url = resolve(id, base);
        if (url.hash !== "") key(resolvedLength(url));
        else if (pointer === 0) {
          base = url;
          baseLength = url.href.length;
        } else visit(schema, base, baseLength, 0); // the subtree once more, under the $id's URI
      }
    } else if (typeof schema !== "boolean") return;
    key(baseLength + (pointer > 0 ? 1 + pointer : 0));
    if (typeof schema === "boolean") return;
    const s = schema as Record<string, unknown>;
    if (!resolved.has(s)) {
      resolved.add(s);
      if (s.$ref) other(resolvedLength(resolve(s.$ref, base)));
      if (s.$recursiveRef) other(resolvedLength(resolve(s.$recursiveRef, base)));
    }
    if (s.$anchor) key(resolvedLength(resolve(`#${s.$anchor}`, base)));
    for (const k in s) {
      other(1);
      if (ignoredKeyword[k]) continue;
      const at = pointer + 1 + pointerSegmentLength(k);
      const sub = s[k];
      if (Array.isArray(sub)) {
        if (!schemaArrayKeyword[k]) other(at - pointer);
        else
          for (let i = 0; i < sub.length; i++) {
            other(1);
            if (isSchema(sub[i])) visit(sub[i], base, baseLength, at + 1 + String(i).length);
          }
      } else if (schemaMapKeyword[k]) {
        // for-in over a string walks its indices
        if (typeof sub === "string") other(2 * sub.length);
        else if (sub !== null && typeof sub === "object")
          for (const name in sub) {
            other(1);
            const item = (sub as Record<string, unknown>)[name];
            const below = at + 1 + pointerSegmentLength(name);
            if (isSchema(item)) visit(item, base, baseLength, below);
            else other(below - at);
          }
      } else if (isSchema(sub)) visit(sub, base, baseLength, at);
      else other(at - pointer);
    }
  };
  try {
    visit(root, initialBaseURI, initialBaseURI.href.length, 0);
  } catch (e) {
    if (!(e instanceof Unmeasurable)) throw e;
  }
  return size;
}

/**
 * What `encodeURI` is while the library indexes and validates: the native one, each lone surrogate
 * read as U+FFFD. The library writes every key of the schema and of the instance into a location
 * (JSON pointer) through encodeURI, which throws URIError on a lone surrogate: a key "\ud800"
 * anywhere made the whole schema "Invalid schema: URI malformed", unchecked. Only locations are
 * written this way, never the keys the keywords test (patternProperties, propertyNames, required
 * see them as sent); a location names such a key as U+FFFD (%EF%BF%BD), as the WHATWG URL parser
 * does for a `$ref` that spells one, so such a `$ref` still finds its subschema.
 */
const nativeEncodeURI = globalThis.encodeURI;
const wellFormedEncodeURI = (uri: string) => nativeEncodeURI(uri.isWellFormed() ? uri : uri.toWellFormed());

/** Runs the library (synchronous: the swap cannot leak into another request) with wellFormedEncodeURI. */
function withWellFormedURIs<T>(run: () => T): T {
  globalThis.encodeURI = wellFormedEncodeURI;
  try {
    return run();
  } finally {
    globalThis.encodeURI = nativeEncodeURI;
  }
}

/**
 * Validates with the meter, the RE2 RegExp and the metered formats in place, collecting every
 * error (no short circuit) but holding only the first `listed` of each of the validator's lists
 * (schema-errors.ts): `errors` is the library's first `listed`, `errorCount` its count. The
 * meter's accessors go on a copy of the schema: instrumenting the caller's object twice (a second
 * validation of the same value) would charge every evaluation twice over. The instance is wrapped,
 * not modified.
 */
export function meteredValidation(
  schema: Schema | boolean,
  instance: unknown,
  draft: SchemaDraft,
  listed = 100,
): { valid: boolean; errors: OutputUnit[]; errorCount: number; used: number; budget: number } {
  meterFormats();
  // Before the copy and the validator's index are made: refused here, neither is.
  lookupSize(schema);
  schema = typeof schema === "object" && schema !== null ? structuredClone(schema) : schema;
  // The library's dereference defines its own hidden keys on the schema: let it run first.
  const validator = withWellFormedURIs(() => new Validator(schema, draft, false));
  const unique = mentionsUniqueItems(schema);
  const { value, facts } = meterInstance(instance, unique);
  const { unmetered } = meterSchema(schema, facts);
  const budget = WORK_BUDGET_BASE + WORK_BUDGET_PER_NODE * (facts.nodes + nodeCount(schema));
  // A subschema holding every key the meter could sit on would run unmetered, as much as it likes;
  // and without the patch, uniqueItems has no honest charge (above).
  if (unmetered > 0 || (unique && !uniqueItemsIsLinear())) throw new WorkLimitExceeded(budget);
  const meter = new Meter(budget);
  const previous = { active, checked };
  active = meter;
  checked = undefined;
  globalThis.RegExp = Re2RegExp as unknown as RegExpConstructor;
  if (unique) Array.isArray = notingIsArray;
  try {
    const { valid, errors } = withShortErrorLists(listed, () =>
      withWellFormedURIs(() => validator.validate(value)),
    );
    return { valid, errors: errors.slice(0, listed), errorCount: errors.length, used: meter.used, budget };
  } finally {
    globalThis.RegExp = NativeRegExp;
    Array.isArray = nativeIsArray;
    active = previous.active;
    checked = previous.checked;
  }
}
