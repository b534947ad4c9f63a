import { isRawJsonNumber } from "../../http/exact-integers";
import { InputError } from "../../http/validation";
import { RawJson } from "./raw-json";

/**
 * No skill answer may exceed this many bytes of JSON. A few skills can amplify a small request
 * (one flattened key per leaf, each repeating the whole path; one validation error per failing
 * rule per item): without a cap a 100 KB request could ask the Worker to build hundreds of
 * megabytes (issue 19). 8 MB is far above every legitimate answer to a 5 MB body.
 */
export const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

/**
 * 422 `output_too_large`: a 4xx, so a paid call is not settled and a card credit is not spent.
 * It is the request that asked for too much, hence a validation error on the body.
 */
export class OutputTooLarge extends InputError {
  /** `maxKeys`: refused for holding more entries than that (json_flatten's keys), not for its bytes. */
  constructor(limit = MAX_OUTPUT_BYTES, maxKeys?: number) {
    const msg =
      maxKeys === undefined
        ? `The response would be larger than ${limit} bytes (${limit / 1024 / 1024} MB); ask for less (smaller input, shorter separator, lower max_depth)`
        : `The response would hold more than ${maxKeys} keys; ask for less (smaller input, lower max_depth)`;
    const ctx = maxKeys === undefined ? { max_bytes: limit } : { max_bytes: limit, max_keys: maxKeys };
    super([{ loc: ["body"], msg, type: "output_too_large", input: null, ctx }]);
  }
}

/**
 * UTF-8 bytes of a string as TextEncoder writes it (a lone surrogate as U+FFFD, three bytes),
 * counted without encoding: encoding an 8 MB answer only to read its length held 8 MB more.
 */
export function utf8Length(s: string): number {
  let n = s.length; // a byte a code unit, plus what the wider ones add
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    n += c < 0x800 ? 1 : 2;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1); // NaN past the end
      if (d >= 0xdc00 && d <= 0xdfff) i++; // a pair: its two code units are four bytes
    }
  }
  return n;
}

/**
 * A long text written as many short pieces. Joining one array of every piece held a pointer and
 * often a string per piece (a 4 MB json_sort answer of `0`s: 2 million of each) next to the
 * text; here at most PIECES pieces wait at a time, joined into chunks as they come, so building a
 * text of n bytes holds about 2n (the chunks, then the text).
 */
export class TextChunks {
  private static readonly PIECES = 4096;
  private chunks: string[] = [];
  private pieces: string[] = [];

  push(piece: string): void {
    this.pieces.push(piece);
    if (this.pieces.length === TextChunks.PIECES) this.flush();
  }

  text(): string {
    this.flush();
    const text = this.chunks.join("");
    this.chunks = [];
    return text;
  }

  private flush(): void {
    this.chunks.push(this.pieces.join(""));
    this.pieces = [];
  }
}

/** Bytes of `JSON.stringify(s)` as UTF-8 (its quotes and escapes); stops once past `budget`. */
export function stringBytes(s: string, budget: number): number {
  let n = 2;
  for (let i = 0; i < s.length && n <= budget; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d)
      n += 2;
    else if (c < 0x20) n += 6;
    else if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 6; // a lone surrogate is written as \uXXXX
    } else if (c >= 0xdc00 && c <= 0xdfff) n += 6;
    else n += 3;
  }
  return n;
}

/**
 * Bytes of `JSON.stringify(value)` as UTF-8, without building the text: the walk stops as soon as
 * the count passes `limit` and answers `limit + 1`, so measuring an oversized answer costs at most
 * `limit` steps, never the whole amplified output.
 */
export function jsonByteLength(value: unknown, limit = MAX_OUTPUT_BYTES): number {
  let total = 0;
  const visit = (v: unknown): void => {
    if (total > limit) return;
    if (v instanceof RawJson) {
      total += utf8Length(v.text); // already JSON text, written as is
      return;
    }
    if (isRawJsonNumber(v)) {
      total += v.rawJSON.length; // an integer's digits, written as the client sent them
      return;
    }
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") {
      visit((v as { toJSON(): unknown }).toJSON());
      return;
    }
    switch (typeof v) {
      case "string":
        total += stringBytes(v, limit - total);
        return;
      case "number":
        total += Number.isFinite(v) ? String(v).length : 4;
        return;
      case "boolean":
        total += v ? 4 : 5;
        return;
      case "bigint":
        throw new TypeError("BigInt is not JSON");
      case "object": {
        if (v === null) {
          total += 4;
          return;
        }
        if (Array.isArray(v)) {
          total += 2 + Math.max(0, v.length - 1);
          for (const item of v) {
            if (total > limit) return;
            if (item === undefined || typeof item === "function" || typeof item === "symbol") total += 4;
            else visit(item);
          }
          return;
        }
        total += 2;
        let first = true;
        // Own enumerable keys, as JSON.stringify reads them (for-in would add inherited ones).
        for (const key of Object.keys(v)) {
          if (total > limit) return;
          const item = (v as Record<string, unknown>)[key];
          if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
          total += (first ? 0 : 1) + stringBytes(key, limit - total) + 1;
          first = false;
          visit(item);
        }
        return;
      }
      default:
        return; // undefined at the top level: JSON.stringify writes nothing
    }
  };
  visit(value);
  return total > limit ? limit + 1 : total;
}

/** Throws OutputTooLarge when the JSON of `value` would exceed the cap. */
export function assertOutputSize(value: unknown, limit = MAX_OUTPUT_BYTES): void {
  if (jsonByteLength(value, limit) > limit) throw new OutputTooLarge(limit);
}
