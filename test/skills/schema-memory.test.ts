import biomeSchema from "@biomejs/biome/configuration_schema.json";
import { dereference } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import biomeConfig from "../../biome.json";
import { LookupTooLarge, lookupSize, MAX_LOOKUP_BYTES } from "../../src/skills/lib/schema-work";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The validator's dereference keys every subschema by its whole encoded JSON pointer: a reviewer
// found that 99 levels of `properties` under one long key of spaces (a ~1 MiB body, within the
// depth bound) made 156 M characters of keys, ~170 MB, past the isolate's 128 MB.

const validate = async (schema: unknown, instance: unknown = 1) => {
  const text = JSON.stringify({ instance, schema });
  const started = performance.now();
  const res = await postJson("/api/skills/json-schema-validate", text);
  const out = await res.text();
  return { status: res.status, text: out, bytes: text.length, ms: performance.now() - started };
};

/** `levels` of `properties` each naming the next under `key`. */
const nested = (levels: number, key: string, leaf: unknown = {}) => {
  let s = leaf;
  for (let i = 0; i < levels; i++) s = { properties: { [key]: s } };
  return s;
};

/** `levels` nested `$id`s: below each non-root one, the library walks the subtree once more. */
const idChain = (levels: number) => {
  let s: unknown = { type: "number" };
  for (let i = 0; i < levels; i++) s = { $id: `https://ids.test/s${i}`, properties: { a: s } };
  return { properties: { a: s } };
};

/** The keys of the library's own lookup, counted. */
const libraryLookup = (schema: unknown) => {
  const lookup = dereference(structuredClone(schema) as object);
  let chars = 0;
  let keys = 0;
  for (const k in lookup) {
    keys++;
    chars += k.length;
  }
  return { keys, chars };
};

const expectRefused = (r: { status: number; text: string }) => {
  expect(r.status).toBe(422);
  const item = JSON.parse(r.text).detail[0];
  expect(item.type).toBe("work_limit_exceeded");
  expect(item.loc).toEqual(["body", "schema"]);
  expect(item.msg).toContain("nesting × key length");
  expect(item.ctx.lookup_bytes).toBe(MAX_LOOKUP_BYTES);
};

describe("json_schema_validate's index of subschemas", () => {
  it(
    "a 0.9 MiB schema of 99 nested properties under one key of spaces is refused, not indexed",
    async () => {
      // JSON depth 199, within the 200 bound; before: 200, after building ~140 M characters.
      const r = await validate(nested(99, " ".repeat(9_500)));
      expect(r.bytes).toBeGreaterThan(0.85 * 1024 * 1024);
      expect(r.bytes).toBeLessThan(1024 * 1024);
      expectRefused(r);
      // "é" is 6 characters of key a level: a smaller body does the same.
      expectRefused(await validate(nested(99, "é".repeat(4_000))));
      // A lone surrogate first in the key: the count once stopped there (the library threw on it);
      // the library now indexes it (as U+FFFD), so the rest must be counted too.
      expectRefused(await validate(nested(99, `\ud800${" ".repeat(9_000)}`)));
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "nested $ids that make the library walk a subtree 2^n times are refused before it does",
    async () => {
      // Before: 20 nested $ids took seconds of dereference (22: 14 s), then answered 200.
      const r = await validate(idChain(20), { a: { a: 1 } });
      expectRefused(r);
      expect(r.ms).toBeLessThan(2_000);
      // A few, as bundled schemas have, still validate (and $ref through an $id resolves).
      const bundled = {
        $id: "https://example.test/root.json",
        type: "object",
        properties: { item: { $ref: "https://example.test/item.json" } },
        $defs: {
          item: {
            $id: "https://example.test/item.json",
            type: "object",
            required: ["n"],
            properties: { n: { $ref: "#/$defs/count" } },
            $defs: { count: { $id: "count.json", type: "integer", minimum: 0 } },
          },
        },
      };
      for (const [instance, valid] of [
        [{ item: { n: 3 } }, true],
        [{ item: { n: -1 } }, false],
        [{ item: {} }, false],
      ] as const) {
        const ok = await validate(bundled, instance);
        expect(ok.status).toBe(200);
        expect(JSON.parse(ok.text)).toMatchObject({ valid, checked: true });
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "large real schemas still validate: Biome's 800 KB configuration schema, 1,000 properties, a 20-deep config",
    async () => {
      const biome = await validate(biomeSchema, biomeConfig);
      expect(biome.bytes).toBeGreaterThan(800_000);
      expect(biome.status).toBe(200);
      expect(JSON.parse(biome.text)).toMatchObject({ valid: true, checked: true });
      const wrong = await validate(biomeSchema, { formatter: { indentWidth: "two" } });
      expect(JSON.parse(wrong.text)).toMatchObject({ valid: false, checked: true });

      const names = Array.from({ length: 1000 }, (_, i) => `a_fairly_descriptive_property_name_${i}`);
      const wide = {
        type: "object",
        required: names,
        properties: Object.fromEntries(names.map((n) => [n, { type: "string", maxLength: 64 }])),
      };
      const filled = Object.fromEntries(names.map((n) => [n, "value"]));
      expect(JSON.parse((await validate(wide, filled)).text)).toMatchObject({ valid: true, checked: true });

      // 20 levels of a config object, 10 settings each with long descriptive names.
      let config: unknown = { type: "string", minLength: 1 };
      let value: unknown = "leaf";
      for (let level = 0; level < 20; level++) {
        const settings = Array.from({ length: 10 }, (_, j) => `level_${level}_setting_with_a_long_name_${j}`);
        config = {
          type: "object",
          properties: Object.fromEntries(settings.map((n, j) => [n, j === 0 ? config : { type: "integer" }])),
        };
        value = { [settings[0] as string]: value };
      }
      expect(JSON.parse((await validate(config, value)).text)).toMatchObject({ valid: true, checked: true });
    },
    SKILL_TEST_TIMEOUT,
  );

  it("counts exactly the keys the library builds, whatever their characters", () => {
    const tricky = {
      $id: "https://example.test/s",
      properties: {
        "a b/c~d#e%f é😀€ ": { items: [true, { not: false }], prefixItems: [{}] },
        "": {},
        "[x]": { $anchor: "an", $ref: "#/é x" },
      },
      unknown: { nested: { $comment: "walked like any subschema" } },
      allOf: [{ $id: "#fragment é" }, { $id: "sub/", items: {} }],
      title: "not a schema",
      x: [1],
      $defs: { q: { additionalProperties: false, dependentSchemas: { p: {} } } },
    };
    for (const schema of [tricky, biomeSchema, nested(20, "k é".repeat(30))]) {
      const counted = lookupSize(schema, Number.POSITIVE_INFINITY);
      expect({ keys: counted.keys, chars: counted.chars }).toEqual(libraryLookup(schema));
    }
  });

  it("measures without building what it measures: the 1 MiB case is counted in linear time", () => {
    const schema = nested(99, " ".repeat(10_500));
    const started = performance.now();
    const counted = lookupSize(schema, Number.POSITIVE_INFINITY);
    const ms = performance.now() - started;
    // 156 M characters: building them took ~170 MB and seconds; counting reads each key once a level.
    expect(counted.chars).toBeGreaterThan(150_000_000);
    expect(ms).toBeLessThan(500);
    // With the bound it stops as soon as it is passed, whatever the schema would have cost.
    expect(() => lookupSize(idChain(60))).toThrow(LookupTooLarge);
  });
});
