import * as z from "zod";
import { isRawJsonNumber } from "../http/exact-integers";
import { anyJson } from "../http/validation";
import { sortDistinctByCodePoints } from "./lib/code-points";
import { TextChunks, utf8Length } from "./lib/output-size";
import { RawJson } from "./lib/raw-json";
import { defineSkill } from "./types";

/**
 * Canonical compact JSON with keys in code-point order. Written by hand because a JS object cannot
 * hold that order: integer-like keys ("10", "9") always enumerate first, in numeric order. Written
 * into one TextChunks, not as a string per element joined at each level: near the answer's cap
 * (3.9 MiB of `0`s, 400,000 `{"a":0}`) those arrays and strings held 17–32 MB beside the text.
 */
export function canonicalJson(value: unknown, reverse: boolean): string {
  const out = new TextChunks();
  const write = (v: unknown): void => {
    if (v === null || typeof v !== "object" || isRawJsonNumber(v)) {
      out.push(JSON.stringify(v));
      return;
    }
    if (Array.isArray(v)) {
      out.push("[");
      for (let i = 0; i < v.length; i++) {
        if (i > 0) out.push(",");
        write(v[i]);
      }
      out.push("]");
      return;
    }
    const keys = sortDistinctByCodePoints(Object.keys(v));
    if (reverse) keys.reverse();
    out.push("{");
    let first = true;
    for (const key of keys) {
      if (!first) out.push(",");
      first = false;
      out.push(JSON.stringify(key));
      out.push(":");
      write((v as Record<string, unknown>)[key]);
    }
    out.push("}");
  };
  write(value);
  return out.text();
}

export const jsonSort = defineSkill({
  id: "json_sort",
  name: "JSON key sort",
  category: "data_prep",
  price_usd: 0.003,
  kind: "utility",
  description:
    "Sort the keys of every object in a JSON value by code point, recursively and inside arrays (descending when reverse is true), and return the sorted value, its canonical compact JSON text and that text's UTF-8 byte size. Integers past 2^53 are kept digit for digit. Deterministic and offline.",
  input: () =>
    z.object({
      data: anyJson("Any JSON value."),
      reverse: z.boolean().default(false).meta({ description: "Sort keys in descending order." }),
    }),
  output: () =>
    z.object({
      sorted: z.unknown().meta({ description: "The input with every object's keys sorted." }),
      canonical: z.string().meta({ description: "Compact JSON text of sorted." }),
      bytes: z.int().min(0).meta({ description: "UTF-8 byte size of canonical." }),
    }),
  exactIntegers: true,
  example_request: { data: { b: 1, a: { d: [{ z: 1, y: 2 }], c: null } } },
  example_response: {
    skill: "json_sort",
    ok: true,
    sorted: { a: { c: null, d: [{ y: 2, z: 1 }] }, b: 1 },
    canonical: '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}',
    bytes: 42,
  },
  run({ data, reverse }) {
    const canonical = canonicalJson(data, reverse);
    // `sorted` is sent as the canonical text itself so the key order survives serialization: one
    // string, held once, and its bytes counted, not encoded (an 8 MB copy to read a length).
    return { sorted: new RawJson(canonical), canonical, bytes: utf8Length(canonical) };
  },
});
