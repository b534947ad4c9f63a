import type { OutputUnit } from "@cfworker/json-schema";

/**
 * What json_schema_validate's error lists may hold while @cfworker/json-schema runs.
 *
 * The validator collects every error (we ask for no short circuit) and keeps them all until it
 * returns: each evaluation makes a list, and a parent pushes its own error and then a copy of its
 * child's list into its list (`errors.push(parentError, ...result.errors)`). An error object with
 * its message and paths is ~150 bytes (node): `{"items":{"minimum":1}}` over 500,000 zeros (a 1 MB
 * body, one $0.006 call) held 1,000,000 of them, ~160 MB, past the 128 MB a Worker isolate shares
 * with every request in flight on it; `items` over `allOf` 1,500,000, and a `required` of 60,000
 * names over 200 `{}` (240 KB) built ~600 MB before the work budget stopped it (the budget counts
 * CPU, and a missing name costs 1/16 of a unit).
 *
 * The answer lists only the first few errors, and an error only ever moves to a later place: a
 * parent appends a child's list after what it has (its own error first), a combinator's error is
 * inserted before its branches' errors, and lists are only ever cut at the end. So an error that is
 * past the first `kept` of any list can never be among the first `kept` of the answer. Every list
 * keeps its first `kept` errors and holds one shared stand-in (OMITTED) in each later place: the
 * lengths, so the verdict (`errors.length === 0`) and the count, are the library's, and an error
 * object past them is garbage as soon as it is made. A place past `kept` still costs a pointer
 * (8 bytes in node): at most MAX_ERROR_ENTRIES are filled in one call, past which it stops with
 * TooManyErrors.
 *
 * The only place every error goes through is `Array.prototype.push`: while the validator runs, it
 * is keptPush. Validation is synchronous, so no other request of the isolate sees it, and it is
 * restored in a finally (as the RegExp stand-in is, schema-work.ts); code that pushes anything else
 * (re2js, the library's lists of evaluated keys) gets native push behind a few type checks.
 */

/**
 * Errors past the kept ones that one call may make, counted when each is first replaced by the
 * stand-in (a list cut back later does not give them back; a stand-in copied into an enclosing list,
 * whose child list is then garbage, is not counted again): each lives in about one list at a time,
 * so ~16 MB of pointers in node if all were held at once. The 500,000 zeros above make 999,900
 * (their 1,000,000 errors are answered, counted exactly).
 */
export const MAX_ERROR_ENTRIES = 2_000_000;

export class TooManyErrors extends Error {
  constructor(readonly limit: number) {
    super(`the validator's error lists would hold more than ${limit} entries past the listed ones`);
  }
}

/** What holds a place past the kept ones: never listed, since it never comes first. */
const OMITTED: OutputUnit = Object.freeze({
  instanceLocation: "#",
  keyword: "omitted",
  keywordLocation: "#",
  error: "An error past the listed ones.",
});

const nativePush = Array.prototype.push;

/** The library's error objects are object literals with these string fields (OMITTED too). */
function isError(v: unknown): boolean {
  return (
    typeof v === "object" &&
    v !== null &&
    Object.getPrototypeOf(v) === Object.prototype &&
    typeof (v as OutputUnit).keywordLocation === "string" &&
    typeof (v as OutputUnit).error === "string"
  );
}

let listing: { kept: number; filled: number } | undefined;

function keptPush(this: unknown[], ...items: unknown[]): number {
  const at = this.length;
  // Most pushes: a short list, or no validation running (a caller that kept a reference).
  if (listing === undefined || !(at + items.length > listing.kept))
    return Reflect.apply(nativePush, this, items);
  for (let i = Math.max(0, listing.kept - at); i < items.length; i++) {
    // A stand-in already (a child's list copied into its parent, the child's then garbage) holds no
    // error of its own: only an error replaced the first time counts.
    if (items[i] === OMITTED || !isError(items[i])) continue;
    listing.filled++;
    if (listing.filled > MAX_ERROR_ENTRIES) throw new TooManyErrors(MAX_ERROR_ENTRIES);
    items[i] = OMITTED;
  }
  // One by one: spreading them again would put them on the stack twice, and the library's own
  // spread would overflow it at half the length it does now (62,000 arguments instead of 125,000).
  for (const item of items) nativePush.call(this, item);
  return this.length;
}

/**
 * Runs `validate` (synchronous) with every list keeping its first `kept` errors. Returns what it
 * returns; its error lists hold OMITTED past their first `kept`.
 */
export function withShortErrorLists<T>(kept: number, validate: () => T): T {
  const previous = { listing, push: Array.prototype.push };
  listing = { kept, filled: 0 };
  Array.prototype.push = keptPush as typeof nativePush;
  try {
    return validate();
  } finally {
    Array.prototype.push = previous.push;
    listing = previous.listing;
  }
}
