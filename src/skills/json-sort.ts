import * as z from "zod";
import { isRawJsonNumber } from "../http/exact-integers";
import { anyJson } from "../http/validation";
import { compareCodePoints } from "./lib/code-points";
import { RawJson } from "./lib/raw-json";
import { defineSkill } from "./types";

/**
 * Canonical compact JSON with keys in code-point order. Written by hand because a JS object cannot
 * hold that order: integer-like keys ("10", "9") always enumerate first, in numeric order.
 */
export function canonicalJson(value: unknown, reverse: boolean): string {
  if (value === null || typeof value !== "object" || isRawJsonNumber(value)) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, reverse)).join(",")}]`;
  const keys = Object.keys(value).sort(compareCodePoints);
  if (reverse) keys.reverse();
  const obj = value as Record<string, unknown>;
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k], reverse)}`).join(",")}}`;
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
    // `sorted` is sent as the canonical text itself so the key order survives serialization.
    return { sorted: new RawJson(canonical), canonical, bytes: new TextEncoder().encode(canonical).length };
  },
});
