import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  meteredValidation,
  resetUniqueItemsProbeForTest,
  WorkLimitExceeded,
} from "../../src/skills/lib/schema-work";
import { libraryAnswer, validateOverHttp } from "./schema-answers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// json_schema_validate runs @cfworker/json-schema with one patch (patches/, patch-package): its
// uniqueItems finds the first duplicate pair by a canonical key per item instead of comparing every
// pair, and the meter charges it linearly, for the array each evaluation checks.

/** The library's own pairwise loop (4.1.6, before the patch): the oracle of the patched check. */
function deepCompareStrict(a: unknown, b: unknown): boolean {
  const typeofa = typeof a;
  if (typeofa !== typeof b) return false;
  const aIsArray = Array.isArray(a);
  if (aIsArray !== Array.isArray(b)) return false;
  if (aIsArray) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepCompareStrict(x[i], y[i])) return false;
    return true;
  }
  if (typeofa === "object") {
    if (!a || !b) return a === b;
    const aKeys = Object.keys(a);
    if (aKeys.length !== Object.keys(b).length) return false;
    for (const k of aKeys) {
      if (!Object.hasOwn(b, k)) return false;
      if (!deepCompareStrict((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
        return false;
    }
    return true;
  }
  return a === b;
}

function originalUniqueItems(instance: unknown[]): OutputUnit[] {
  for (let j = 0; j < instance.length; j++) {
    const a = instance[j];
    const ao = typeof a === "object" && a !== null;
    for (let k = 0; k < instance.length; k++) {
      if (j === k) continue;
      const b = instance[k];
      const bo = typeof b === "object" && b !== null;
      if (a === b || (ao && bo && deepCompareStrict(a, b)))
        return [
          {
            instanceLocation: "#",
            keyword: "uniqueItems",
            keywordLocation: "#/uniqueItems",
            error: `Duplicate items at indexes ${j} and ${k}.`,
          },
        ];
    }
  }
  return [];
}

/** JSON text of `v` with every object's keys in `order` (-0 kept, "__proto__" an own key once parsed). */
function jsonText(v: unknown, order: (keys: string[]) => string[]): string {
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : JSON.stringify(v);
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => jsonText(x, order)).join(",")}]`;
  const obj = v as Record<string, unknown>;
  return `{${order(Object.keys(obj))
    .map((k) => `${JSON.stringify(k)}:${jsonText(obj[k], order)}`)
    .join(",")}}`;
}

/** A copy as JSON.parse makes it, its objects' keys reversed or rotated. */
const reordered = (v: unknown, how: number) =>
  JSON.parse(
    jsonText(v, (keys) => (how % 2 === 0 ? [...keys].reverse() : [...keys.slice(1), ...keys.slice(0, 1)])),
  );

const long = (n: number, last: string) => `${"a".repeat(n - 1)}${last}`;
// Values likely to be confused by a careless key: -0 and 0, numbers and their strings, objects and
// arrays of one content, own "__proto__" keys, strings past V8's 16,383-character hash limit.
const tricky: unknown[] = [
  0,
  -0,
  "0",
  "",
  1,
  "1",
  true,
  "true",
  null,
  "null",
  [],
  {},
  [0],
  [-0],
  ["0"],
  [[]],
  [{}],
  { 0: 0 },
  { a: [] },
  { a: {} },
  { a: 1, b: 2 },
  { b: 2, a: 1 },
  { a: { b: [1, { c: -0 }] } },
  JSON.parse('{"__proto__": 1}'),
  JSON.parse('{"__proto__": {"x": 1}, "y": 2}'),
  ['a",', "b"],
  ["a", '",b'],
  { 'a":1,"b': 2 },
  long(16_000, "x"),
  long(16_000, "y"),
  long(16_001, "x"),
  long(16_001, "y"),
  long(32_001, "x"),
  long(32_001, "y"),
  `~${long(16_000, "x")}`,
  `${long(16_000, "x")}y`, // its first 16,000 characters are a key above, as a trie step
  [long(16_500, "x")],
  { k: long(20_000, "z") },
  // Keys hold strings as they are behind their length: what needs escaping in JSON, and strings
  // that look like a length prefix or a token boundary.
  "\ud800",
  "\udc00",
  "\ud800\udc00",
  "\u0000",
  "\n",
  '"',
  "\\",
  ["\ud800", "\udc00"],
  ["\ud800\udc00"],
  ['1"a'],
  ['1"', "a"],
  ["a", '1"b'],
  ['a1"', "b"],
  [12, "2"],
  ['12"2'],
  ["1", 2],
  ["12"],
  { "1:a": 1 },
  { "1": ":a1" },
  { "2:ab": "" },
  { a: '1"b', b: "" },
  { a: "", b: '1"b' },
  `${long(15_999, '"')}\ud800`,
  [`${long(15_998, "a")}\u0000x`],
];

const value = fc.oneof(
  fc.constantFrom(...tricky),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom("a", "b", "c"),
  fc.string({
    unit: fc.constantFrom("\ud800", "\udc00", "\u0000", "\n", '"', "\\", "1", ":", ",", "a"),
    maxLength: 5,
  }),
);

/** Arrays drawn from a small pool, so duplicates are frequent, each item a reordered copy. */
const arrays = fc
  .tuple(
    fc.array(value, { minLength: 1, maxLength: 8 }),
    fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 30 }),
  )
  .map(([pool, picks]) => picks.map(([i, how]) => reordered(pool[i % pool.length], how)));

describe("the patched uniqueItems answers as the library's pairwise loop", () => {
  it(
    "property: the same first duplicate pair (or none) for random arrays, plain and metered",
    () => {
      const validator = new Validator({ uniqueItems: true }, "2020-12", false);
      fc.assert(
        fc.property(arrays, (instance) => {
          const expected = originalUniqueItems(instance);
          expect(validator.validate(instance).errors).toEqual(expected);
          const metered = meteredValidation({ uniqueItems: true }, instance, "2020-12");
          expect(metered.errors).toEqual(expected);
        }),
        { numRuns: 400 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it("every pair of the tricky values, alone and repeated in another key order", () => {
    const validator = new Validator({ uniqueItems: true }, "2020-12", false);
    for (const x of tricky)
      for (const y of tricky)
        for (const instance of [
          [x, y],
          [y, x, reordered(y, 0)],
          [x, y, reordered(y, 1), reordered(x, 0)],
        ])
          expect(validator.validate(instance).errors).toEqual(originalUniqueItems(instance));
  });

  it("every item's keys are listed once, not once for every pair (the patch is applied)", () => {
    // The library's loop deep-compares every pair of objects, listing both key sets each time.
    let listings = 0;
    const counted = (i: number) =>
      new Proxy(
        { id: i },
        {
          ownKeys(target) {
            listings++;
            return Reflect.ownKeys(target);
          },
        },
      );
    const instance = Array.from({ length: 300 }, (_, i) => counted(i));
    expect(new Validator({ uniqueItems: true }, "2020-12", false).validate(instance).valid).toBe(true);
    expect(listings).toBe(300);
  });
});

describe("the patched uniqueItems keys an item by what it holds, not by its JSON escapes", () => {
  /** Characters of the keys the check stores (every string Map.set is given) for `instance`. */
  function keyCharacters(instance: unknown[]): number {
    let chars = 0;
    const set = Map.prototype.set;
    const spy = vi.spyOn(Map.prototype, "set").mockImplementation(function (
      this: Map<unknown, unknown>,
      k,
      v,
    ) {
      if (typeof k === "string") chars += k.length;
      return set.call(this, k, v);
    });
    try {
      new Validator({ uniqueItems: true }, "2020-12", false).validate(instance);
    } finally {
      spy.mockRestore();
    }
    return chars;
  }

  it("a lone surrogate or a control character costs what a letter does (the meter charges characters)", () => {
    // JSON.stringify wrote "\ud800" as 6 characters (~74 ns each, 26 times what the meter charged).
    const items = (c: string) => [[c.repeat(40_000), 0], { [c.repeat(1_000)]: c.repeat(1_000) }, [c]];
    const plain = keyCharacters(items("a"));
    expect(plain).toBeGreaterThan(42_000);
    expect(plain).toBeLessThan(42_100);
    for (const c of ["\ud800", "\udc00", "\u0000", "\u001f", '"', "\\"])
      expect(keyCharacters(items(c))).toBe(plain);
  });
});

/** The schema and instance of the request the quadratic charge refused: 3,000 records with tags. */
const records = (broken: boolean) => ({
  schema: {
    type: "array",
    items: {
      type: "object",
      required: ["id"],
      properties: {
        id: { type: "integer" },
        tags: { type: "array", items: { type: "string" }, uniqueItems: true },
      },
    },
  },
  instance: Array.from({ length: 3000 }, (_, i) => ({
    id: i,
    tags: broken && i === 2999 ? ["new", "sale", "new"] : ["new", "sale", `t${i % 40}`],
  })),
});

describe("json_schema_validate answers uniqueItems over big arrays", () => {
  it(
    "3,000 records with uniqueItems tags and 40,000 integers are answered as the library answers them",
    async () => {
      const integers = Array.from({ length: 40_000 }, (_, i) => i);
      const cases: [unknown, unknown, boolean][] = [
        [records(false).schema, records(false).instance, true],
        [records(true).schema, records(true).instance, false],
        [{ uniqueItems: true }, integers, true],
        [{ uniqueItems: true }, [...integers, 39_000], false],
        // Any truthy value runs the check, as in the library.
        [{ uniqueItems: 1 }, [...integers, 5], false],
      ];
      for (const [schema, instance, valid] of cases) {
        const r = await validateOverHttp(schema, instance);
        expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
        const expected = libraryAnswer(schema, instance);
        expect(expected.valid).toBe(valid);
        expect(r.body).toMatchObject({ ...expected, checked: true });
      }
      const broken = (await validateOverHttp(records(true).schema, records(true).instance)).body;
      expect(broken.errors).toContainEqual({
        instance_path: "#/2999/tags",
        keyword: "uniqueItems",
        schema_path: "#/items/properties/tags/uniqueItems",
        message: "Duplicate items at indexes 0 and 2.",
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it("each evaluation is charged the array it checks, by its items' nodes and characters", () => {
    const { schema, instance } = records(false);
    const used = (uniqueItems: boolean, records: unknown[]) => {
      const tags = { type: "array", items: { type: "string" }, uniqueItems };
      const properties = { ...schema.items.properties, tags };
      const changed = { ...schema, items: { ...schema.items, properties } } as Schema;
      return meteredValidation(changed, records, "2020-12").used;
    };
    // 3,000 arrays of 4 nodes and 8-9 characters: about a unit each (the quadratic charge was the
    // records' array squared, 36,000 units each).
    const charged = used(true, instance) - used(false, instance);
    expect(charged).toBeGreaterThan(3000);
    expect(charged).toBeLessThan(6000);
    // Characters count: the same arrays holding 10 KB strings cost ten units more each.
    const tagged = (tag: (i: number) => string) =>
      instance.slice(0, 100).map((r, i) => ({ ...r, tags: [tag(i), "y"] }));
    const longTags = tagged((i) => `${i}`.padEnd(10_240, "x"));
    const shortTags = tagged((i) => `${i}`);
    expect(used(true, longTags) - used(true, shortTags)).toBeGreaterThanOrEqual(100 * 9);
  });
});

describe("uniqueItems stays within the work budget", () => {
  it(
    "a key built again at every level of a nested array is charged each time: 422, not seconds of keys",
    async () => {
      // Each level's check keys its whole subtree (the 200 KB string again), 100 levels deep.
      let nested: unknown = ["x".repeat(200_000), 1];
      for (let i = 0; i < 100; i++) nested = [nested, i];
      const schema = { uniqueItems: true, items: { $ref: "#" } };
      expect(() => meteredValidation(schema, nested, "2020-12")).toThrow(WorkLimitExceeded);
      const r = await validateOverHttp(schema, nested);
      expect(r.status).toBe(422);
      expect(JSON.stringify(r.body)).toContain("work_limit_exceeded");
      // Ten levels of a 2 KB string are answered, charged the string at each level.
      let small: unknown = ["x".repeat(2_048), 1];
      for (let i = 0; i < 10; i++) small = [small, i];
      const answered = meteredValidation(schema, small, "2020-12");
      expect(answered.valid).toBe(true);
      expect(answered.used).toBeGreaterThan(11 * 2);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "many uniqueItems over one big array are charged each: 422",
    async () => {
      const schema = { allOf: Array.from({ length: 60 }, () => ({ uniqueItems: true })) };
      const instance = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `n${i}` }));
      expect(() => meteredValidation(schema, instance, "2020-12")).toThrow(WorkLimitExceeded);
      const r = await validateOverHttp(schema, instance);
      expect(r.status).toBe(422);
      expect(JSON.stringify(r.body)).toContain("budget_units");
      // A few are answered.
      const few = await validateOverHttp({ allOf: schema.allOf.slice(0, 3) }, instance);
      expect(few.status).toBe(200);
      expect(few.body.valid).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("without the patch (an install that skipped postinstall) uniqueItems is refused", () => {
  afterEach(() => resetUniqueItemsProbeForTest());

  it("the probe finds the unpatched loop, warns once, and refuses every schema with a truthy uniqueItems", () => {
    // The library's loop as it was, in the patched one's place for the probe.
    resetUniqueItemsProbeForTest((items) => originalUniqueItems(items));
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      // Near-equal long items: the pairwise loop deep-compares each pair to its last element, so no
      // charge made ahead of time bounds it (1,000 x 500 zeros ran 27 s under the old n²/250).
      const nearEqual = Array.from({ length: 1_000 }, (_, i) => [...Array(500).fill(0), i]);
      expect(() => meteredValidation({ uniqueItems: true }, nearEqual, "2020-12")).toThrow(WorkLimitExceeded);
      // However small the array, and for any truthy value.
      expect(() => meteredValidation({ items: { uniqueItems: 1 } } as object, [[1, 2]], "2020-12")).toThrow(
        WorkLimitExceeded,
      );
      // Schemas without it are checked as ever.
      expect(meteredValidation({ items: { type: "integer" } }, [1, 2], "2020-12").valid).toBe(true);
      expect(warn.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([
        expect.objectContaining({ level: "warn", msg: "json-schema patch not applied" }),
      ]);
    } finally {
      warn.mockRestore();
    }
  });

  it("a probe that throws (a library changed under the patch) counts as unpatched, not as a crash", () => {
    resetUniqueItemsProbeForTest(() => {
      throw new TypeError("changed library");
    });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      expect(() => meteredValidation({ uniqueItems: true }, [1, 2], "2020-12")).toThrow(WorkLimitExceeded);
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  it("the installed library passes the probe: no warning, the linear charge", () => {
    resetUniqueItemsProbeForTest();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const integers = Array.from({ length: 40_000 }, (_, i) => i);
      const r = meteredValidation({ uniqueItems: true }, integers, "2020-12");
      expect(r.valid).toBe(true);
      expect(r.used).toBeLessThan(40_000 / 2);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
