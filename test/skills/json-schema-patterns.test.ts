import { describe, expect, it } from "vitest";
import { toRe2Syntax } from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";
import { disagreements, everyCodePoint } from "./native-agreement";

// JSON Schema's `pattern` is an ECMA-262 regular expression; json_schema_validate runs it on RE2,
// whose `\s`, `\S` and `.` (Perl's) differ from ECMAScript's.
const validate = async (schema: unknown, instance: unknown) => {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  expect(res.status).toBe(200);
  return (await res.json()) as { valid: boolean; errors: { keyword: string }[] };
};

describe("json_schema_validate patterns read as ECMAScript reads them", () => {
  it.each([
    ["^\\S+$ refuses a no-break space", { type: "string", pattern: "^\\S+$" }, "pay\u00a0ment", false],
    ["^\\s*$ takes U+00A0, U+3000 and \\v", { pattern: "^\\s*$" }, "\u00a0\u3000\u000b", true],
    ["^.+$ stops at \\r", { pattern: "^.+$" }, "line1\rline2", false],
    ["^.+$ stops at U+2028", { pattern: "^.+$" }, "line1\u2028line2", false],
    [
      "patternProperties ^\\s applies to a key starting with U+00A0",
      { patternProperties: { "^\\s": { type: "number" } } },
      { "\u00a0x": "str" },
      false,
    ],
    ["[\\s\\d] takes U+3000 and digits", { pattern: "^[\\s\\d]+$" }, "1\u30002", true],
    ["[\\s\\d] refuses a letter", { pattern: "^[\\s\\d]+$" }, "1\u3000a", false],
    ["an escaped backslash before s is a backslash and an s", { pattern: "^a\\\\s$" }, "a\\s", true],
    ["an escaped backslash before s is not \\s", { pattern: "^a\\\\s$" }, "a s", false],
    ["an escaped dot is a dot", { pattern: "^a\\.b$" }, "a\rb", false],
    ["a dot in a class is a dot", { pattern: "^[.]$" }, ".", true],
    ["[^\\S\\n] is whitespace but a newline", { pattern: "^[^\\S\\n]+$" }, " \u00a0\t\u2028", true],
    ["[^\\S\\n] refuses a newline", { pattern: "^[^\\S\\n]+$" }, " \n", false],
    ["[\\S\\u00a0] takes U+00A0", { pattern: "^[\\S\\u00a0]+$" }, "a\u00a0b", true],
    ["[\\S\\u00a0] refuses U+3000", { pattern: "^[\\S\\u00a0]+$" }, "a\u3000b", false],
    ["[\\s\\S] takes anything", { pattern: "^[\\s\\S]+$" }, "a\r\n\u2028\u{1f600}", true],
    ["[^\\s\\S] takes nothing", { pattern: "[^\\s\\S]" }, "a \u00a0", false],
    ["\\p{…} is left alone", { pattern: "^\\p{L}+$" }, "Ünïcode", true],
    ["[[:alpha:] is ECMAScript's class of [ : a l p h", { pattern: "^[[:alpha:]+$" }, "[a:", true],
  ])("%s", async (_, schema, instance, valid) => {
    expect((await validate(schema, instance)).valid).toBe(valid);
  });

  it("agrees with the native engine on \\s, \\S, . and classes of them over the BMP and beyond", () => {
    const patterns = [
      "^\\s$",
      "^\\S$",
      "^.$",
      "^[\\s]$",
      "^[^\\s]$",
      "^[\\S]$",
      "^[^\\S\\n]$",
      "^[\\Sa\\t]$",
    ];
    const chars = everyCodePoint();
    for (const pattern of patterns) {
      expect(
        disagreements(pattern, chars).map((c) => c.codePointAt(0)?.toString(16)),
        pattern,
      ).toEqual([]);
    }
  });

  it("leaves a pattern without \\s, \\S or . as it was", () => {
    for (const pattern of [
      "^[a-z0-9-]{1,64}$",
      "^(a+)+$",
      "\\d+\\w*\\b",
      "^\\p{L}+$",
      "a\\\\sb",
      "[\\]\\-^]",
    ])
      expect(toRe2Syntax(pattern), pattern).toBe(pattern);
  });
});
