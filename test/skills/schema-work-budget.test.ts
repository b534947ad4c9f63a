import { type Schema, Validator } from "@cfworker/json-schema";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { meteredValidation, WORK_BUDGET_BASE, WORK_BUDGET_PER_NODE } from "../../src/skills/lib/schema-work";
import { libraryAnswer, meteredRun, validateOverHttp } from "./schema-answers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The work meter charges what @cfworker/json-schema does per evaluation. An audit found three
// ordinary requests refused (422 work_limit_exceeded) that the library alone checks in 1-35 ms:
// `properties`, `enum` and `minLength`/`maxLength` were charged for work the library does not do.
// Asserted on work units and answers, not time: the hostile side is in the last describe.

const validate = validateOverHttp;
const library = libraryAnswer;

/** The skill answers 200, checked, with the library's verdict and errors. */
const expectLibraryAnswer = async (schema: unknown, instance: unknown, valid: boolean) => {
  const r = await validate(schema, instance);
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
  const expected = library(schema, instance);
  expect(expected.valid).toBe(valid);
  expect(r.body).toMatchObject({ ...expected, checked: true });
  return r.body;
};

const optionalStrings = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, { type: "string" }]));
const codes = Array.from({ length: 250 }, (_, i) =>
  String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26)),
);

/** The audit's three requests; `broken` makes one of them invalid. */
const audit = {
  properties: (broken = false) => ({
    // 68 KB: 300 optional fields, 2,000 records of 3 keys.
    schema: { type: "array", items: { type: "object", properties: optionalStrings(300) } },
    instance: Array.from({ length: 2000 }, (_, i) => ({
      f1: "a",
      f2: "b",
      [`f${i % 300}`]: broken && i === 1234 ? 7 : "c",
    })),
  }),
  enum: (broken = false) => ({
    schema: { type: "array", items: { enum: codes } },
    instance: Array.from({ length: 1000 }, (_, i) => (broken && i % 250 === 3 ? "ZZ" : codes[(i * 7) % 250])),
  }),
  maxLength: (broken = false) => ({
    // 230 KB: the unconstrained `body` made every title's check cost the 200 KB string.
    schema: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "title"],
        properties: { id: { type: "integer" }, title: { type: "string", maxLength: 200 } },
      },
    },
    instance: Array.from({ length: 1000 }, (_, i) => ({
      id: i,
      title: broken && i === 500 ? "t".repeat(201) : `title ${i}`,
      ...(i === 0 ? { body: "x".repeat(200_000) } : {}),
    })),
  }),
};

describe("json_schema_validate charges what the library does", () => {
  it.each(Object.keys(audit) as (keyof typeof audit)[])(
    "the audit's %s request answers 200 with the library's verdict, valid and invalid",
    async (name) => {
      const ok = audit[name]();
      await expectLibraryAnswer(ok.schema, ok.instance, true);
      const broken = audit[name](true);
      const body = await expectLibraryAnswer(broken.schema, broken.instance, false);
      expect(body.error_count).toBeGreaterThan(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it("a string's length check costs that string, not the longest string of the instance", () => {
    const { schema, instance } = audit.maxLength();
    const withBody = meteredValidation(schema as Schema, instance, "2020-12");
    const without = meteredValidation(
      schema as Schema,
      instance.map(({ body, ...rest }) => rest),
      "2020-12",
    );
    // The body is measured by nothing: it costs no more than its one node (was 195 units a title).
    expect(withBody.used).toBe(without.used);
    // A long string that is measured is charged by its length, once per check.
    const one = meteredValidation({ maxLength: 5 }, "x".repeat(102_400), "2020-12");
    expect(one.valid).toBe(false);
    expect(one.used).toBeGreaterThanOrEqual(100);
  });

  it("a schema's own pattern still runs and is charged beside the length check", () => {
    const schema = { type: "string", minLength: 2, maxLength: 10, pattern: "^[a-z]+$" } as Schema;
    for (const [instance, valid] of [
      ["abc", true],
      ["a", false],
      ["ABC", false],
      ["abcdefghijk", false],
    ] as const) {
      const r = meteredValidation(schema, instance, "2020-12");
      expect(r.valid, instance).toBe(valid);
      expect(r.errors, instance).toEqual(
        new Validator(structuredClone(schema), "2020-12", false).validate(instance).errors,
      );
    }
  });
});

/** Real-world shapes, a few thousand records: each validates within the budget, as the library says. */
const realistic: Record<string, () => { schema: unknown; instance: unknown }> = {
  "an OpenAPI-style component over 3,000 records": () => ({
    schema: {
      $defs: {
        Address: {
          type: "object",
          required: ["country"],
          properties: {
            line1: { type: "string", maxLength: 120 },
            city: { type: "string", minLength: 1, maxLength: 80 },
            postal_code: { type: "string", pattern: "^[0-9A-Z -]{3,10}$" },
            country: { enum: codes },
          },
          additionalProperties: false,
        },
        Customer: {
          type: "object",
          required: ["id", "email", "status", "created"],
          properties: {
            id: { type: "string", pattern: "^cus_[A-Za-z0-9]{8}$" },
            email: { type: "string", format: "email", maxLength: 254 },
            name: { type: ["string", "null"], maxLength: 200 },
            status: { enum: ["active", "suspended", "closed"] },
            created: { type: "string", format: "date-time" },
            balance: { type: "integer", minimum: -1_000_000, maximum: 1_000_000 },
            address: { $ref: "#/$defs/Address" },
            tags: {
              type: "array",
              items: { type: "string", maxLength: 32 },
              maxItems: 10,
            },
            metadata: { type: "object", additionalProperties: { type: "string", maxLength: 500 } },
            ...optionalStrings(40),
          },
        },
      },
      type: "array",
      items: { $ref: "#/$defs/Customer" },
    },
    instance: Array.from({ length: 3000 }, (_, i) => ({
      id: `cus_${String(i).padStart(8, "0")}`,
      email: `user${i}@example.com`,
      name: i % 3 ? `Customer ${i}` : null,
      status: ["active", "suspended", "closed"][i % 3],
      created: "2024-05-01T12:00:00Z",
      balance: i * 10,
      address: { line1: `${i} Main St`, city: "Springfield", postal_code: "12345", country: codes[i % 250] },
      tags: ["vip", `t${i % 7}`],
      metadata: { note: "n".repeat(i % 100) },
      f3: "x",
    })),
  }),
  "a GeoJSON-like feature collection with a oneOf on a const type": () => ({
    schema: {
      type: "object",
      required: ["type", "features"],
      properties: {
        type: { const: "FeatureCollection" },
        features: {
          type: "array",
          items: {
            type: "object",
            required: ["type", "geometry", "properties"],
            properties: {
              type: { const: "Feature" },
              geometry: {
                oneOf: [
                  {
                    type: "object",
                    required: ["type", "coordinates"],
                    properties: {
                      type: { const: "Point" },
                      coordinates: { type: "array", items: { type: "number" }, minItems: 2, maxItems: 3 },
                    },
                  },
                  {
                    type: "object",
                    required: ["type", "coordinates"],
                    properties: {
                      type: { const: "LineString" },
                      coordinates: {
                        type: "array",
                        minItems: 2,
                        items: { type: "array", items: { type: "number" }, minItems: 2, maxItems: 3 },
                      },
                    },
                  },
                ],
              },
              properties: {
                type: "object",
                properties: {
                  name: { type: "string", maxLength: 100 },
                  kind: { enum: ["road", "poi", "river"] },
                },
              },
            },
          },
        },
      },
    },
    instance: {
      type: "FeatureCollection",
      features: Array.from({ length: 2000 }, (_, i) => ({
        type: "Feature",
        geometry:
          i % 2
            ? { type: "Point", coordinates: [i / 10, -i / 20] }
            : {
                type: "LineString",
                coordinates: [
                  [0, 0],
                  [i, i],
                ],
              },
        properties: { name: `feature ${i}`, kind: ["road", "poi", "river"][i % 3] },
      })),
    },
  }),
  "an event log with a long free-text field, if/then and string bounds": () => ({
    schema: {
      type: "array",
      items: {
        type: "object",
        required: ["ts", "level", "message"],
        properties: {
          ts: { type: "integer", minimum: 0 },
          level: { enum: ["debug", "info", "warn", "error"] },
          message: { type: "string", minLength: 1, maxLength: 500 },
          stack: { type: "string" },
          code: { type: "string", pattern: "^E[0-9]{4}$" },
        },
        if: { properties: { level: { const: "error" } } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's keyword
        then: { required: ["code"] },
      },
    },
    instance: Array.from({ length: 4000 }, (_, i) => ({
      ts: 1_700_000_000 + i,
      level: ["debug", "info", "warn", "error"][i % 4],
      message: `event ${i} happened`,
      ...(i % 4 === 3 ? { code: `E${String(i % 10_000).padStart(4, "0")}` } : {}),
      ...(i === 7 ? { stack: "at frame\n".repeat(20_000) } : {}),
    })),
  }),
};

describe("realistic schemas pass", () => {
  it.each(Object.keys(realistic))(
    "%s validates (200, the library's answer), and a broken record is reported",
    async (name) => {
      const { schema, instance } = (realistic[name] as () => { schema: unknown; instance: unknown })();
      await expectLibraryAnswer(schema, instance, true);
      const r = meteredValidation(structuredClone(schema) as Schema, structuredClone(instance), "2020-12");
      // Room to spare: these are the ordinary case, not the budget's edge.
      expect(r.used).toBeLessThan(0.75 * r.budget);
      const broken = structuredClone(instance) as unknown[] | { features: unknown[] };
      const records = (Array.isArray(broken) ? broken : broken.features) as Record<string, unknown>[];
      // A wrong value in a field each shape constrains: type, status or level.
      for (const key of ["type", "status", "level"])
        if (key in (records[11] as object)) (records[11] as Record<string, unknown>)[key] = "fatal";
      await expectLibraryAnswer(schema, broken, false);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("what the audit's requests were charged for stays charged where the library does it", () => {
  const refused = (schema: unknown, instance: unknown) => {
    let thrown: unknown;
    try {
      meteredValidation(structuredClone(schema) as Schema, structuredClone(instance), "2020-12");
    } catch (e) {
      thrown = e;
    }
    expect((thrown as Error | undefined)?.constructor.name).toBe("WorkLimitExceeded");
  };

  it("many length checks of one long string meet the budget", () => {
    refused({ allOf: Array.from({ length: 1000 }, () => ({ minLength: 1 })) }, "y".repeat(500_000));
    refused(
      { items: { allOf: Array.from({ length: 200 }, () => ({ maxLength: 500 })) } },
      Array(2000).fill("z".repeat(400)),
    );
  });

  it("a failing enum or const is charged the message it writes (a 900 KB const failed by 100 items held 92 MB)", () => {
    refused({ items: { const: "x".repeat(900_000) } }, Array(100).fill(1));
    refused({ items: { enum: ["x".repeat(900_000)] } }, Array(100).fill(1));
    refused({ items: { const: { a: "x".repeat(900_000) } } }, Array(100).fill({ a: 1 }));
    refused({ items: { enum: codes } }, Array(100_000).fill(0));
    // Equal-length strings are compared character by character.
    const long = (i: number) => `${"x".repeat(96)}${String(i).padStart(4, "0")}`;
    refused(
      { items: { enum: Array.from({ length: 5000 }, (_, i) => long(i)) } },
      Array.from({ length: 5000 }, (_, i) => long(i + 5000)),
    );
  });

  it("`properties` past V8's fast-property limit is charged as the dictionary it is", () => {
    // 5,000 properties over 100,000 `{}` (419 KB) held the isolate 2-4 s before the budget stopped it.
    refused({ items: { properties: optionalStrings(5000) } }, Array(100_000).fill({}));
    refused({ items: { properties: optionalStrings(1000) } }, Array(100_000).fill({}));
    // An entry of a dictionary costs 180-280 ns (1,021 to 50,000 entries), ~10 times one of a
    // fast map: each of 10 records is charged 2,000 / 8 units for its walk (it was 2,000 / 16).
    const dictionary = meteredValidation(
      { items: { properties: optionalStrings(2000) } } as Schema,
      Array(10).fill({}),
      "2020-12",
    );
    expect(dictionary.used).toBeGreaterThanOrEqual((10 * 2000) / 8);
    const fast = meteredValidation(
      { items: { properties: optionalStrings(1000) } } as Schema,
      Array(10).fill({}),
      "2020-12",
    );
    expect(fast.used).toBeGreaterThanOrEqual((10 * 1000) / 32);
  });

  it(
    "property: enum, const, properties and length checks never spend past the budget",
    () => {
      const value = fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.integer(),
        fc.constant(null),
        fc.jsonValue({ maxDepth: 2 }),
      );
      const leaf = fc.oneof(
        fc.record({ enum: fc.array(value, { maxLength: 30 }) }),
        fc.record({ const: value }),
        fc.record({ minLength: fc.nat(50), maxLength: fc.nat(300) }, { requiredKeys: [] }),
        fc.record({ maxLength: fc.nat(20), pattern: fc.constantFrom("^a+$", "(a|aa)+$", "b") }),
        fc.record({ type: fc.constantFrom("string", "number", "object", "array") }),
        fc.nat(400).map((n) => ({ properties: optionalStrings(n) })),
      );
      const schema = fc.letrec((tie) => ({
        node: fc.oneof(
          { depthSize: "small" },
          leaf,
          fc.record({ allOf: fc.array(tie("node"), { maxLength: 4 }) }),
          fc.record({ anyOf: fc.array(tie("node"), { maxLength: 4 }) }),
          fc.record({ items: tie("node") }),
          fc.record({ additionalProperties: tie("node") }),
        ),
      })).node;
      const instance = fc.oneof(
        fc.jsonValue({ maxDepth: 4 }),
        fc.nat(2000).map((n) => `${"a".repeat(n)}!`),
        fc.nat(1000).map((n) => Array.from({ length: n }, (_, i) => `f${i % 300}`)),
        fc.nat(300).map((n) => Array.from({ length: n }, (_, i) => ({ [`f${i}`]: "a" }))),
      );
      fc.assert(
        fc.property(schema, instance, (s, inst) => {
          const text = JSON.stringify({ schema: s, instance: inst });
          fc.pre(text.length <= 10_240);
          const { used, budget, ms } = meteredRun(s, inst);
          expect(used).toBeLessThanOrEqual(budget);
          expect(budget).toBeLessThanOrEqual(WORK_BUDGET_BASE + WORK_BUDGET_PER_NODE * 10_240);
          expect(ms).toBeLessThan(2000);
        }),
        { numRuns: 200, seed: 7 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("schemas the meter could not see", () => {
  it("a uniqueItems that is truthy but not true is charged as the library runs it, for its array", () => {
    // The library runs its check for any truthy value; only `true` was charged (1 unit for a
    // 224 KB call that held the isolate 3.7 s with the pairwise loop).
    const instance = Array.from({ length: 40_000 }, (_, i) => i);
    const unchecked = meteredValidation({ uniqueItems: false }, instance, "2020-12").used;
    for (const uniqueItems of [true, 1, "yes", {}, []]) {
      const r = meteredValidation({ uniqueItems } as Schema, instance, "2020-12");
      expect(r.valid).toBe(true);
      // 40,001 nodes at 4 a unit (schema-work.ts, UNIQUE_NODES_PER_UNIT).
      expect(r.used - unchecked, String(uniqueItems)).toBeGreaterThanOrEqual(10_000);
    }
  });

  it("a schema holding every key the meter can sit on is refused, not run unmetered", async () => {
    const schema = {
      uniqueItems: true,
      __absolute_recursive_ref__: "x",
      __absolute_ref__: "y",
      maxContains: 1e9,
      minContains: 0,
      unevaluatedItems: true,
      additionalItems: true,
      dependencies: {},
      dependentSchemas: {},
      dependentRequired: {},
      propertyNames: true,
      minProperties: 0,
      maxProperties: 1e9,
      multipleOf: 1,
      exclusiveMinimum: -1,
      exclusiveMaximum: 1e9,
    };
    const r = await validate(
      schema,
      Array.from({ length: 8_000 }, (_, i) => ({ k: i })),
    );
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain("budget_units");
  });
});
