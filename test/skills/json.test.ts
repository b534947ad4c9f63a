import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { flatten } from "../../src/skills/json-flatten";
import { canonicalJson } from "../../src/skills/json-sort";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const flat = async (body: unknown) =>
  (await (await postJson("/api/skills/json-flatten", body)).json<{ flat: unknown }>()).flat;

describe("json_flatten", () => {
  it(
    "joins keys with the separator, arrays by index, keeps empties as leaves",
    async () => {
      expect(await flat({ data: { a: { b: [1, { c: null }] }, e: {}, f: [] } })).toEqual({
        "a.b.0": 1,
        "a.b.1.c": null,
        e: {},
        f: [],
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "stringifies any separator value",
    async () => {
      expect(await flat({ data: { a: { b: 1 } }, options: { sep: "/" } })).toEqual({ "a/b": 1 });
      expect(await flat({ data: { a: { b: 1 } }, options: { sep: 7 } })).toEqual({ a7b: 1 });
      expect(await flat({ data: { a: { b: 1 } }, options: { sep: null } })).toEqual({ anullb: 1 });
      expect(await flat({ data: { a: { b: 1 } }, options: { sep: "" } })).toEqual({ ab: 1 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "keeps subtrees deeper than max_depth whole, with integer-like strings accepted",
    async () => {
      const data = { a: { b: { c: { d: 1 } } } };
      expect(await flat({ data, options: { max_depth: 2 } })).toEqual({ "a.b": { c: { d: 1 } } });
      expect(await flat({ data, options: { max_depth: " +1 " } })).toEqual({ a: { b: { c: { d: 1 } } } });
      expect(await flat({ data, options: { max_depth: "-3" } })).toEqual({ "": data });
      expect(await flat({ data })).toEqual({ "a.b.c.d": 1 });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "flattens scalars and empty roots predictably",
    async () => {
      expect(await flat({ data: 5 })).toEqual({ "": 5 });
      expect(await flat({ data: {} })).toEqual({});
      expect(await flat({ data: [] })).toEqual({});
      expect(await flat({ data: ["x"] })).toEqual({ "0": "x" });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "keeps a __proto__ key as data",
    async () => {
      const res = await postJson("/api/skills/json-flatten", '{"data":{"__proto__":{"x":1}}}');
      expect(await res.text()).toContain('"__proto__.x":1');
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "max_depth may be any number, its fraction dropped (spec 2.3: number or integer-like string)",
    async () => {
      const data = { a: { b: { c: 1 } } };
      for (const [max_depth, expected] of [
        [1.5, { a: { b: { c: 1 } } }],
        [2.9, { "a.b": { c: 1 } }],
        [-0.5, { "": data }],
        [1e20, { "a.b.c": 1 }], // sent as 100000000000000000000: past 2^53, kept exact
      ] as const) {
        const res = await postJson("/api/skills/json-flatten", { data, options: { max_depth } });
        expect(res.status, String(max_depth)).toBe(200);
        expect((await res.json<{ flat: unknown }>()).flat, String(max_depth)).toEqual(expected);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([
    ["abc", "int_parsing"],
    [true, "int_type"],
    ["1.0", "int_parsing"],
  ])(
    "max_depth %j is 422 %s",
    async (value, type) => {
      const res = await postJson("/api/skills/json-flatten", { data: {}, options: { max_depth: value } });
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({ loc: ["body", "options", "max_depth"], type });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "is idempotent on shallow data: flattening a flat object changes nothing",
    () => {
      fc.assert(
        fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
          const once = Object.fromEntries(flatten(value, ".", 12));
          expect(Object.fromEntries(flatten(once, ".", 12))).toEqual(once);
          // Every leaf is a scalar or an empty container.
          for (const v of Object.values(once)) {
            if (v !== null && typeof v === "object") expect(Object.keys(v)).toHaveLength(0);
          }
        }),
        { seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("json_sort", () => {
  it(
    "sorts keys by code point, recursively and inside arrays",
    async () => {
      const res = await postJson("/api/skills/json-sort", {
        data: { b: [{ d: 1, c: 2 }], a: 1, B: 0, é: 1, z: 2 },
      });
      const text = await res.text();
      expect(text).toContain('"sorted":{"B":0,"a":1,"b":[{"c":2,"d":1}],"z":2,"é":1}');
      const body = JSON.parse(text);
      expect(body.canonical).toBe('{"B":0,"a":1,"b":[{"c":2,"d":1}],"z":2,"é":1}');
      expect(body.bytes).toBe(new TextEncoder().encode(body.canonical).length);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "orders integer-like keys as text, which a JS object cannot do",
    async () => {
      const res = await postJson("/api/skills/json-sort", { data: { "9": 1, "10": 2, b: 3 } });
      const text = await res.text();
      expect(text).toContain('"sorted":{"10":2,"9":1,"b":3}');
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reverses and handles astral characters in code-point order",
    async () => {
      const res = await postJson("/api/skills/json-sort", {
        data: { "\u{1F600}": 1, "\uFFFD": 2, a: 3 },
        reverse: true,
      });
      const body = await res.json<{ canonical: string }>();
      expect(body.canonical).toBe('{"😀":1,"�":2,"a":3}');
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "is idempotent and preserves the value",
    () => {
      fc.assert(
        fc.property(fc.jsonValue(), fc.boolean(), (value, reverse) => {
          const once = canonicalJson(value, reverse);
          expect(canonicalJson(JSON.parse(once), reverse)).toBe(once);
          expect(JSON.parse(once)).toEqual(JSON.parse(JSON.stringify(value)));
        }),
        { seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("integers past 2^53 (ids, snowflakes)", () => {
  // JSON.parse alone would answer 12345678901234567000: a sorted or flattened document must hand
  // the client's own numbers back.
  const body =
    '{"data":{"id":12345678901234567890,"neg":-9007199254740993,"list":[18446744073709551615],"f":1.5,"safe":9007199254740991}}';
  it(
    "json_sort keeps them digit for digit in sorted, canonical and bytes",
    async () => {
      const text = await (await postJson("/api/skills/json-sort", body)).text();
      const canonical =
        '{"f":1.5,"id":12345678901234567890,"list":[18446744073709551615],"neg":-9007199254740993,"safe":9007199254740991}';
      expect(text).toContain(`"sorted":${canonical}`);
      expect(text).toContain(`"canonical":${JSON.stringify(canonical)}`);
      expect(text).toContain(`"bytes":${canonical.length}`);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "json_flatten keeps them digit for digit as leaves",
    async () => {
      const text = await (await postJson("/api/skills/json-flatten", body)).text();
      expect(text).toContain(
        '"flat":{"id":12345678901234567890,"neg":-9007199254740993,"list.0":18446744073709551615,"f":1.5,"safe":9007199254740991}',
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a document too deep is refused for its depth, whatever digits it holds",
    async () => {
      const deep = `{"data":${"[".repeat(100_000)}12345678901234567890${"]".repeat(100_000)}}`;
      const res = await postJson("/api/skills/json-sort", deep);
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]?.ctx?.error).toMatch(/nesting deeper than 200/);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "other skills' numeric fields still validate as numbers",
    async () => {
      const res = await postJson("/api/skills/uuid-mint", '{"count":12345678901234567890}');
      expect(res.status).toBe(422);
      expect((await detailOf(res)).map((d) => d.type)).toEqual(["less_than_equal"]);
    },
    SKILL_TEST_TIMEOUT,
  );
});
