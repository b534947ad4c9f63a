/**
 * Integers a client wrote past 2^53, kept digit for digit. `JSON.parse` turns
 * 12345678901234567890 into 12345678901234567000; a skill that hands the client's own values back
 * (json_sort, json_flatten) would silently change an id. With the reviver's source text
 * (TC39 JSON.parse source text access, in workerd's V8) such a number becomes `JSON.rawJSON` of
 * what the client sent, which `JSON.stringify` writes back verbatim. Every other number stays an
 * IEEE double in its shortest form (1.0 → 1, 1e2 → 100), as RFC 8785 canonical JSON writes it.
 */

/** What `JSON.rawJSON` makes: a frozen, prototype-free object that JSON.stringify writes as is. */
export interface RawJsonNumber {
  readonly rawJSON: string;
}

// The runtime has both functions; TypeScript's lib does not declare them yet.
const json = JSON as typeof JSON & {
  rawJSON(text: string): RawJsonNumber;
  isRawJSON(value: unknown): value is RawJsonNumber;
};

export const isRawJsonNumber = (value: unknown): value is RawJsonNumber => json.isRawJSON(value);

/** An integer as JSON writes one: what a kept integer's `rawJSON` holds. */
export const INTEGER_TEXT = /^-?\d+$/;

function keepLongIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || Number.isSafeInteger(value)) return value;
  const source = context?.source;
  return source !== undefined && INTEGER_TEXT.test(source) ? json.rawJSON(source) : value;
}

/**
 * `JSON.parse`, keeping integers past 2^53 exact. Throws like JSON.parse. The reviver recurses per
 * level and costs a call per value, so the caller bounds the depth first and calls this only when
 * a 16-digit run occurs outside strings (Number.MAX_SAFE_INTEGER has 16 digits; json-text.ts's
 * scanJson finds them).
 */
export function parseKeepingIntegers(text: string): unknown {
  return JSON.parse(text, keepLongIntegers as (key: string, value: unknown) => unknown);
}
