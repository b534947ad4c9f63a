import { type Schema, Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { MAX_ERRORS } from "../../src/skills/json-schema-validate";
import { MAX_ERROR_ENTRIES, TooManyErrors, withShortErrorLists } from "../../src/skills/lib/schema-errors";
import { meteredValidation } from "../../src/skills/lib/schema-work";
import { postJson } from "../helpers";
import { answerOf, libraryAnswer, validateOverHttp } from "./schema-answers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The validator collects every error and holds them all until it returns, ~150 bytes each (node):
// a reviewer found that `{"items":{"minimum":1}}` over 500,000 zeros (a 1 MB body, one $0.006
// call) answered 200 after building 1,000,000 errors, ~160 MB of heap, past the 128 MB a Worker
// isolate shares with every request in flight on it (the work budget counts CPU, not this).

const validate = validateOverHttp;
const answer = answerOf;
const library = libraryAnswer;

const zeros = (n: number) => new Array<number>(n).fill(0);

describe("json_schema_validate's error lists", () => {
  it("the validator's lists hold their first 100 errors and one shared stand-in past them", () => {
    const schema = { items: { minimum: 1 } };
    const plain = new Validator(schema, "2020-12", false).validate(zeros(60));
    const r = withShortErrorLists(MAX_ERRORS, () =>
      new Validator(structuredClone(schema), "2020-12", false).validate(zeros(500_000)),
    );
    expect(r.valid).toBe(false);
    expect(r.errors).toHaveLength(1_000_000);
    // What held ~160 MB: a million distinct objects, each with its message and paths.
    expect(new Set(r.errors).size).toBe(MAX_ERRORS + 1);
    // 60 items make 120 errors: the first 100 are the same whatever follows them.
    expect(r.errors.slice(0, MAX_ERRORS)).toEqual(plain.errors.slice(0, MAX_ERRORS));
    // Push is itself again afterwards, for every list.
    const after: number[] = [];
    after.push(...zeros(150));
    expect(new Set(after)).toEqual(new Set([0]));
    expect(Array.prototype.push.name).toBe("push");
  });

  it(
    "500,000 zeros against a failing minimum answer the library's verdict, first 100 errors and count",
    async () => {
      const r = await validate({ items: { minimum: 1 } }, zeros(500_000));
      expect(r.bytes).toBeGreaterThan(1_000_000);
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      // An item's two errors ("items", then its "minimum") come in item order.
      const { errors } = library({ items: { minimum: 1 } }, zeros(60));
      expect(r.body).toMatchObject({ valid: false, checked: true, error_count: 1_000_000, errors });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "nested: items over allOf answers in full, allOf over items is the stack's 422 as before",
    async () => {
      const itemsAllOf = { items: { allOf: [{ minimum: 1 }] } };
      const r = await validate(itemsAllOf, zeros(500_000));
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      const { errors } = library(itemsAllOf, zeros(40));
      expect(r.body).toMatchObject({ valid: false, error_count: 1_500_000, errors });
      // The branch's million errors are spread into one call's arguments: past the stack.
      const allOfItems = await validate({ allOf: [{ items: { minimum: 1 } }] }, zeros(500_000));
      expect(allOfItems.status).toBe(422);
      expect(allOfItems.body.detail).toMatchObject([
        { type: "work_limit_exceeded", loc: ["body", "schema"] },
      ]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "ordinary failing validations answer exactly what the library does",
    async () => {
      const record = {
        type: "object",
        required: ["id", "name"],
        properties: {
          id: { type: "integer", minimum: 0 },
          name: { type: "string", maxLength: 5 },
          tags: { type: "array", items: { enum: ["a", "b"] }, uniqueItems: true },
        },
        additionalProperties: false,
      };
      const cases: [unknown, unknown][] = [
        // A few hundred errors through properties, items, enum, additionalProperties.
        [
          { type: "array", items: record },
          Array.from({ length: 150 }, (_, i) =>
            i % 2 ? { id: -i, name: "too long", tags: ["a", "c", "a"] } : { id: 1.5, extra: true },
          ),
        ],
        // A combinator's error is inserted before its branches' (splice), at place 100 and past.
        [{ items: { anyOf: [{ type: "string" }, { minimum: 5 }] } }, zeros(120)],
        [{ items: { oneOf: [{ type: "string" }, { maximum: -1 }] } }, zeros(80)],
        // Failed branches are cut from the list when another branch holds: valid.
        [{ anyOf: [{ items: { minimum: 1 } }, { type: "array" }] }, zeros(5_000)],
        [{ contains: { minimum: 1 }, items: { type: "integer" } }, [...zeros(300), 4]],
        [{ not: { items: { minimum: 1 } } }, zeros(300)],
        [{ $defs: { z: { maximum: -1 } }, items: { $ref: "#/$defs/z" } }, zeros(300)],
      ];
      for (const [schema, instance] of cases) {
        const r = await validate(schema, instance);
        expect(r.status, JSON.stringify(schema)).toBe(200);
        expect(r.body, JSON.stringify(schema)).toMatchObject({ ...library(schema, instance), checked: true });
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a flood past 2,000,000 places is refused before it is built: 60,000 required names over 200 objects",
    async () => {
      // Before: the work budget (a missing name costs 1/16 of a unit) stopped it after ~4 M errors,
      // ~600 MB of heap in node and 3-5 s; each object's 60,000 errors are also copied into the
      // list of `items`.
      const schema = { items: { required: new Array(60_000).fill("a") } };
      const r = await validate(schema, new Array(200).fill({}));
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatchObject([
        {
          type: "work_limit_exceeded",
          loc: ["body", "schema"],
          ctx: { budget_units: null, error_entries: MAX_ERROR_ENTRIES },
        },
      ]);
      expect(() => meteredValidation(schema, new Array(200).fill({}), "2020-12")).toThrow(TooManyErrors);
    },
    SKILL_TEST_TIMEOUT,
  );

  it("meteredValidation answers the library's first errors and counts them all", () => {
    const schema: Schema = { items: { type: "string", minLength: 2 } };
    const r = meteredValidation(schema, zeros(1_000), "2020-12", 10);
    expect(r.errorCount).toBe(2_000);
    expect(answer(r.errors)).toEqual(library(schema, zeros(1_000)).errors.slice(0, 10));
  });
});

describe("the error cap counts errors, not the copies nesting makes of them", () => {
  // Each enclosing allOf copies its child's list into its own (the child's then garbage): counting
  // every copy made 34 levels over 30,000 errors pass the 2,000,000 cap, and a valid instance (the
  // anyOf's `true`) was a 422 "too many errors".
  const nest = (d: number, inner: unknown): unknown => (d === 0 ? inner : { allOf: [nest(d - 1, inner)] });
  const instance = new Array(30_000).fill(0);

  it("a valid instance under deep nesting is answered valid", async () => {
    const schema = { anyOf: [nest(34, { items: { minimum: 1 } }), true] };
    const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ valid: true, error_count: 0 });
  }, 60_000);

  it("an invalid one is answered with every error counted once per list it ends in", async () => {
    const res = await postJson(
      "/api/skills/json-schema-validate",
      JSON.stringify({ schema: nest(34, { items: { minimum: 1 } }), instance }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ valid: false, error_count: 60_034 });
  }, 60_000);
});
