import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * ECMAScript spells a Unicode general category by its long name or alias too (`\p{Letter}`,
 * `\p{digit}`, `\p{gc=Lu}`) and a script as `\p{Script=Greek}`; RE2 knows the short names only, so
 * these valid patterns were refused 422 as "not supported" (the official JSON Schema Test Suite's
 * optional/ecmascript-regex.json, 14 cases in every draft). They now answer as JavaScript does.
 */
async function validate(schema: unknown, instance: unknown) {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  return { status: res.status, body: await res.json<{ valid?: boolean }>() };
}

const CASES: [pattern: string, instance: string, valid: boolean][] = [
  ["\\p{Letter}cole", "école", true],
  ["\\p{Letter}cole", "-cole", false],
  ["^\\p{digit}+$", "৪২", true],
  ["^\\p{digit}+$", "4x", false],
  ["^\\P{Decimal_Number}$", "x", true],
  ["^[\\p{Uppercase_Letter}_]+$", "AB_C", true],
  ["^[\\p{Uppercase_Letter}_]+$", "AbC", false],
  ["^\\p{gc=Lu}$", "Ä", true],
  ["^\\p{General_Category=Punctuation}$", "!", true],
  ["^\\p{Script=Greek}+$", "αβγ", true],
  ["^\\p{sc=Greek}+$", "abc", false],
];

describe("json_schema_validate: Unicode property names as ECMAScript spells them", () => {
  it(
    "answers as JavaScript does, in pattern and in patternProperties",
    async () => {
      for (const [pattern, instance, valid] of CASES) {
        expect(new RegExp(pattern, "u").test(instance), pattern).toBe(valid);
        const asValue = await validate({ type: "string", pattern }, instance);
        expect([pattern, asValue.status, asValue.body.valid]).toEqual([pattern, 200, valid]);
        const asKey = await validate(
          { type: "object", patternProperties: { [pattern]: true }, additionalProperties: false },
          { [instance]: 1 },
        );
        expect([pattern, asKey.status, asKey.body.valid]).toEqual([pattern, 200, valid]);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "still refuses what RE2 has no spelling for (`\\p{ASCII}`, a four-letter script code), 422 not a wrong answer",
    async () => {
      for (const pattern of ["^\\p{ASCII}$", "^\\p{sc=Grek}$"]) {
        const { status, body } = await validate({ type: "string", pattern }, "a");
        expect([pattern, status, JSON.stringify(body)]).toEqual([
          pattern,
          422,
          expect.stringContaining("pattern_unsupported"),
        ]);
        // Named for what it is, not as a lookaround or backreference.
        expect(JSON.stringify(body)).toContain("but not this property");
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "names the property as the caller wrote it, not as RE2 was given it",
    async () => {
      const { body } = await validate({ type: "string", pattern: "^\\p{sc=Grek}$" }, "a");
      const message = (body as { detail: { msg: string }[] }).detail[0]?.msg;
      expect(message).toContain("but not this property: \\p{sc=Grek}");
      expect(message).not.toContain("\\p{Grek}");
    },
    SKILL_TEST_TIMEOUT,
  );
});

/**
 * Under case-insensitive matching ECMAScript takes a character when any code point outside a
 * negated property case-folds to it; RE2 complements the property with its folds added, so
 * `(?i:\P{Uppercase_Letter})` answered "A" false where JavaScript says true. Such a pattern is
 * refused, bare or in a class; `\p{…}` and `[^\p{…}]` under `(?i:…)` agree and still run.
 */
describe("json_schema_validate: a negated Unicode property under (?i:…)", () => {
  const REFUSED: [pattern: string, instance: string][] = [
    ["^(?i:\\P{Uppercase_Letter})$", "A"],
    ["^(?i:\\P{Lu})$", "A"],
    ["^(?i:\\P{Letter})$", "\u0345"],
    ["^(?i:[\\P{Lowercase_Letter}])$", "a"],
    ["^(?i:[^\\P{Titlecase_Letter}])$", "\u01c4"],
    ["^(?i:x(?:\\P{Script=Greek}))$", "x\u03b9"],
    ["^(?i:x(?-s:\\P{Mark}))$", "x\u0399"],
  ];

  it(
    "is 422 pattern_unsupported at its place, saying why, not an answer RE2 would give otherwise",
    async () => {
      for (const [pattern, instance] of REFUSED) {
        const { status, body } = await validate({ type: "string", pattern }, instance);
        expect([pattern, status]).toEqual([pattern, 422]);
        expect((body as { detail: unknown[] }).detail[0]).toMatchObject({
          type: "pattern_unsupported",
          loc: ["body", "schema", "pattern"],
          msg: expect.stringContaining("negated Unicode property"),
        });
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "still answers a negated property outside (?i:…), or where a group turns i off, and \\p{…} or [^\\p{…}] within it, as JavaScript does",
    async () => {
      // Native RegExp here is workerd's, which reads (?i:…) as ECMAScript does.
      const cases: [pattern: string, instance: string][] = [
        ["^(?i:\\p{Lu})$", "a"],
        ["^(?i:\\p{Lu})$", "1"],
        ["^(?i:[^\\p{Lu}])$", "a"],
        ["^(?i:[^\\p{Lu}])$", "1"],
        ["^\\P{Lu}$", "A"],
        ["^(?i:a(?-i:\\P{Lu}))$", "AA"],
        ["^(?i:a(?-i:\\P{Lu}))$", "Ab"],
      ];
      for (const [pattern, instance] of cases) {
        const native = new RegExp(pattern, "u").test(instance);
        const { status, body } = await validate({ type: "string", pattern }, instance);
        expect([pattern, instance, status, body.valid]).toEqual([pattern, instance, 200, native]);
      }
    },
    SKILL_TEST_TIMEOUT,
  );
});
