import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileRe2 } from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

// ECMA-262 escapes that RE2 spells otherwise or not at all: a class's `\b` (backspace) and an
// escaped surrogate pair (one code point in `u` mode). Both engines must read them alike.
const validate = async (pattern: string, instance: string) => {
  const res = await postJson("/api/skills/json-schema-validate", {
    instance,
    schema: { type: "string", pattern },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { valid: boolean }).valid;
};

describe("json_schema_validate reads ECMAScript's class and Unicode escapes", () => {
  it.each([
    ["[\\b] takes a backspace", "[\\b]", "\b", true],
    ["[\\b] refuses a b", "^[\\b]$", "b", false],
    ["[^\\b] refuses a backspace", "^[^\\b]$", "\b", false],
    ["[\\b-\\n] is the range backspace to newline", "^[\\b-\\n]+$", "\b\t\n", true],
    ["\\b outside a class is still a word boundary", "^a\\b", "a b", true],
    ["\\b outside a class needs a boundary", "^a\\b", "ab", false],
    ["an escaped surrogate pair is one code point", "^\\uD83D\\uDE00$", "\u{1f600}", true],
    ["an escaped surrogate pair in a class", "^[\\ud83d\\ude00x]+$", "x\u{1f600}", true],
    ["an escaped surrogate pair, quantified as one", "^\\uD83D\\uDE00{2}$", "\u{1f600}\u{1f600}", true],
    ["an escaped backslash before u is no escape", "^\\\\uD83D\\\\uDE00$", "\\uD83D\\uDE00", true],
    ["\\cJ is a newline", "^[\\cJ]$", "\n", true],
    ["\\0 is NUL", "^[\\0]\\0$", "\0\0", true],
    ["\\u{…} is a code point", "^[\\u{1F600}]\\u{41}$", "\u{1f600}A", true],
    ["\\- in a class is a hyphen", "^[a\\-z]$", "-", true],
    ["\\- in a class is no range", "^[a\\-z]$", "b", false],
  ])("%s", async (_, pattern, instance, valid) => {
    expect(await validate(pattern, instance)).toBe(valid);
  });

  it("agrees with the native engine on random classes and sequences of these escapes", () => {
    const atom = fc.constantFrom(
      "\\b",
      "\\cJ",
      "\\ca",
      "\\0",
      "\\u{1F600}",
      "\\uD83D\\uDE00",
      "\\ud83d\\ude01",
      "\\x08",
      "\\u0008",
      "\\-",
      "b",
      "a",
      "\\n",
    );
    const charsOf = ["\b", "\n", "\u0001", "\0", "\u{1f600}", "\u{1f601}", "-", "b", "a", "\\", "c", "J"];
    const pattern = fc
      .tuple(fc.array(atom, { minLength: 1, maxLength: 4 }), fc.boolean(), fc.boolean())
      .map(([atoms, inClass, negated]) => {
        const body = inClass
          ? `[${negated ? "^" : ""}${atoms.join("")}]+`
          : atoms.filter((a) => a !== "\\-").join("");
        return `^${body || "a"}$`;
      })
      .filter((p) => {
        try {
          new RegExp(p, "u");
          return true;
        } catch {
          return false; // a range out of order
        }
      });
    fc.assert(
      fc.property(pattern, fc.array(fc.constantFrom(...charsOf), { maxLength: 4 }), (p, parts) => {
        const s = parts.join("");
        expect(compileRe2(p).matcher(s).find(), `${p} on ${JSON.stringify(s)}`).toBe(
          new RegExp(p, "u").test(s),
        );
      }),
      { numRuns: 2000, seed: 42 },
    );
  });
});
