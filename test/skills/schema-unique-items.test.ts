import { type Schema, Validator } from "@cfworker/json-schema";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { meteredValidation, WorkLimitExceeded } from "../../src/skills/lib/schema-work";
import { libraryAnswer, validateOverHttp } from "./schema-answers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// uniqueItems was charged for the longest array anywhere in the instance on every evaluation: a
// few tags on each of 3,000 records cost as if each list were 3,000 long, and the request was
// 422. It is now charged for the array it compares, by what the library's pairwise loop does
// with what that array holds (docs/LIMITS.md): the hostile side is in the last describe.

const validate = validateOverHttp;
const library = libraryAnswer;

const tagged = {
  type: "array",
  items: {
    type: "object",
    properties: {
      id: { type: "integer" },
      tags: { type: "array", items: { type: "string" }, uniqueItems: true },
    },
  },
};
/** 3,000 records of a few tags (105 KB); `duplicate` repeats a tag in one of them. */
const records = (duplicate = false) =>
  Array.from({ length: 3000 }, (_, i) => ({
    id: i,
    tags: duplicate && i === 1234 ? ["new", "sale", "new"] : ["new", `t${i % 7}`, `c${i % 13}`],
  }));

const refused = (schema: unknown, instance: unknown) => {
  expect(() =>
    meteredValidation(structuredClone(schema) as Schema, structuredClone(instance), "2020-12"),
  ).toThrow(WorkLimitExceeded);
};

describe("uniqueItems is charged for the array it compares", () => {
  it(
    "3,000 records' tags answer 200 with the library's verdict, valid and with a duplicate",
    async () => {
      const ok = await validate(tagged, records());
      expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
      expect(ok.body).toMatchObject({ ...library(tagged, records()), valid: true, checked: true });
      const dup = await validate(tagged, records(true));
      expect(dup.status).toBe(200);
      const expected = library(tagged, records(true));
      expect(expected.errors.map((e) => e.keyword)).toContain("uniqueItems");
      expect(dup.body).toMatchObject({ ...expected, valid: false, checked: true });
    },
    SKILL_TEST_TIMEOUT,
  );

  it("a short array's check costs the same beside a 3,000-item array as alone", () => {
    const many = meteredValidation(structuredClone(tagged) as Schema, records(), "2020-12");
    // Each record's evaluations (the item, id, tags and its three strings) plus a small uniqueItems:
    // the old charge was 3,000² / 250 = 36,000 units a record.
    expect(many.used).toBeLessThan(3000 * 8);
    expect(many.used).toBeLessThan(0.5 * many.budget);
    const one = meteredValidation(structuredClone(tagged) as Schema, records().slice(0, 1), "2020-12");
    expect(one.used).toBeLessThan(8);
  });

  it("the global Array.isArray is the native one again after a call, and after a refusal", () => {
    const native = Array.isArray;
    meteredValidation({ uniqueItems: true }, [1, 2, 3], "2020-12");
    expect(Array.isArray).toBe(native);
    expect(() =>
      meteredValidation(
        { uniqueItems: true },
        Array.from({ length: 4000 }, (_, i) => i),
        "2020-12",
      ),
    ).toThrow(WorkLimitExceeded);
    expect(Array.isArray).toBe(native);
  });

  it("property: uniqueItems answers what the library does, within its budget", () => {
    const item = fc.oneof(
      fc.integer({ min: 0, max: 5 }),
      fc.constantFrom("a", "b", "ab"),
      fc.constant(null),
      fc.jsonValue({ maxDepth: 2 }),
      fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 3 }),
      fc.record({ a: fc.integer({ min: 0, max: 2 }), b: fc.constantFrom("x", "y") }, { requiredKeys: [] }),
    );
    const array = fc.array(item, { maxLength: 12 });
    const instance = fc.oneof(array, fc.array(array, { maxLength: 6 }), item);
    const schema = fc.oneof(
      fc.constant({ uniqueItems: true }),
      fc.constant({ items: { uniqueItems: true } }),
      fc.constant({ type: ["array", "string", "null"], uniqueItems: true, items: { uniqueItems: true } }),
      fc.constant({ anyOf: [{ uniqueItems: true }, { items: { type: "array", uniqueItems: true } }] }),
      fc.constant({ items: { enum: [[1, 1], [0], "a"] }, uniqueItems: true }),
    );
    fc.assert(
      fc.property(schema, instance, (s, inst) => {
        const r = meteredValidation(structuredClone(s) as Schema, structuredClone(inst), "2020-12");
        const expected = new Validator(structuredClone(s) as Schema, "2020-12", false).validate(
          structuredClone(inst),
        );
        expect(r.valid).toBe(expected.valid);
        expect(r.errors).toEqual(expected.errors);
        expect(r.used).toBeLessThanOrEqual(r.budget);
      }),
      { numRuns: 300, seed: 11 },
    );
  });
});

// Measured in node on the trap inputs (docs/LIMITS.md): each took the isolate 0.1-3 s; those
// marked "accepted" were charged 4,000 units (12 ms) and answered 200 before.
describe("a uniqueItems that costs what it is charged is still refused", () => {
  const keys = (n: number, value: () => unknown, id: number) => {
    const o: Record<string, unknown> = {};
    for (let k = 0; k < n; k++) o[`k${k}`] = value();
    o.id = id;
    return o;
  };

  it("many items: 4,000 integers, 4,000 objects", () => {
    refused(
      { uniqueItems: true },
      Array.from({ length: 4000 }, (_, i) => i),
    );
    refused(
      { uniqueItems: true },
      Array.from({ length: 4000 }, (_, i) => ({ id: i })),
    );
    // Past 52,500 items no body could pay for the pairs alone: counted without holding its items.
    refused({ items: { uniqueItems: true } }, [Array.from({ length: 60_000 }, (_, i) => ({ id: i }))]);
  });

  it("objects and arrays alike up to their last entry (2.6-3.2 s, accepted before)", () => {
    refused(
      { uniqueItems: true },
      Array.from({ length: 1000 }, (_, i) => keys(60, () => 0, i)),
    );
    refused(
      { uniqueItems: true },
      Array.from({ length: 1000 }, (_, i) => keys(60, () => ({}), i)),
    );
    refused(
      { uniqueItems: true },
      Array.from({ length: 1500 }, (_, i) => [...Array(40).fill(0), i]),
    );
    const nested = (i: number) => {
      let o: unknown = i;
      for (let d = 0; d < 60; d++) o = { a: o };
      return o;
    };
    refused(
      { uniqueItems: true },
      Array.from({ length: 1000 }, (_, i) => nested(i)),
    );
  });

  it("objects that differ in their first entry still list their keys (0.7 s, accepted before)", () => {
    const integerKeys = (i: number) =>
      Object.fromEntries(Array.from({ length: 60 }, (_, k) => [k, k ? 0 : i]));
    refused(
      { uniqueItems: true },
      Array.from({ length: 1000 }, (_, i) => integerKeys(i)),
    );
  });

  it("strings of one length that begin alike are compared to their end (47 ms, accepted before)", () => {
    const long = (i: number) => `${"x".repeat(1996)}${i % 2 ? "中" : "x"}${String(i).padStart(3, "0")}`;
    refused(
      { uniqueItems: true },
      Array.from({ length: 400 }, (_, i) => long(i)),
    );
    refused(
      { uniqueItems: true },
      Array.from({ length: 1000 }, (_, i) => ({ k: `${"x".repeat(3000)}${String(i).padStart(4, "0")}` })),
    );
  });

  it("each evaluation is charged: a long array checked by many subschemas meets the budget", () => {
    const ints = Array.from({ length: 600 }, (_, i) => i);
    expect(meteredValidation({ uniqueItems: true }, ints, "2020-12").valid).toBe(true);
    refused({ allOf: Array.from({ length: 40 }, () => ({ uniqueItems: true })) }, ints);
  });
});
