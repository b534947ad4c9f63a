import { describe, expect, it } from "vitest";
import { compileRe2, UnsupportedPattern } from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

// Inside (?m:…) ECMAScript's ^ and $ break lines at \n, \r, U+2028 and U+2029; RE2's at \n only,
// and RE2 has no lookbehind to spell the others. On a string holding one of those three, such a
// pattern is not answered from RE2: that test is refused (422 pattern_unsupported at the pattern's
// place). Every other answer is checked against native RegExp here.
const OTHER_BREAKS = /[\r\u2028\u2029]/;

/** [pattern, whether it has ^ or $ where the m flag is on] */
const PATTERNS: [string, boolean][] = [
  ["(?m:^b)", true],
  ["(?m:a$)", true],
  ["(?m:^)", true],
  ["(?m:$)", true],
  ["(?m:^$)", true],
  ["^(?m:^b$)", true],
  ["x(?m:^b)", true],
  ["(?m:a$)\\r", true],
  ["(?im:^B)", true],
  ["(?mi:A$)", true],
  ["(?m-i:^b)", true],
  ["(?ms:^.)", true],
  ["(?s:(?m:.$))", true],
  ["(?m:(?:^b))", true],
  ["(?m:(b)$)", true],
  ["(?m:(?<g>^b))", true],
  ["(?m:(?-m:^)|^b)", true],
  ["(?m:\\\\^b)", true], // an escaped backslash, then ^
  ["(?m:a|^b)", true],
  ["(?m:(?-m:^b))", false], // the m flag turned off for that group,
  ["(?m:(?i-m:a$))", false],
  ["(?m:[\\^$]b)", false], // ^ and $ in a class are characters,
  ["(?m:[$]b)", false],
  ["(?m:\\^b)", false], // escaped ones too,
  ["(?m:\\$)", false],
  ["(?m:a)^b", false], // and the flag ends with its group.
  ["(?m:a)$", false],
  ["^b", false],
  ["a$", false],
  ["^a\\rb$", false],
  ["(?m:[\\r])", false],
];
const INPUTS = [
  "b",
  "a",
  "ab",
  "a\nb",
  "a\n",
  "\n",
  "\nb",
  "^b",
  "$",
  "\\b",
  "xb",
  "x\nb",
  "B",
  "a\nB",
  "a\rb",
  "a\u2028b",
  "a\u2029b",
  "a\r\nb",
  "a\r",
  "\r",
  "x\rb",
  "\\\rb",
];

describe("(?m:…)'s ^ and $ are answered only where RE2 reads them as ECMAScript does", () => {
  it("agrees with native RegExp on every pattern and input of the table, or refuses the test", () => {
    const differ: string[] = [];
    for (const [pattern, anchored] of PATTERNS) {
      const native = new RegExp(pattern, "u");
      const re2 = compileRe2(pattern);
      for (const input of INPUTS) {
        const at = `${pattern} on ${JSON.stringify(input)}`;
        let answer: boolean | "refused";
        try {
          answer = re2.test(input);
        } catch (e) {
          if (!(e instanceof UnsupportedPattern)) throw e;
          answer = "refused";
        }
        const refuse = anchored && OTHER_BREAKS.test(input);
        if (refuse && answer !== "refused")
          differ.push(`${at}: answered ${answer}, native ${native.test(input)}`);
        if (!refuse && answer !== native.test(input))
          differ.push(`${at}: ${answer}, native ${native.test(input)}`);
      }
    }
    expect(differ).toEqual([]);
  });

  it("the refused answers are the ones RE2 got wrong: (?m:^b) on a\\rb", () => {
    expect(/(?m:^b)/u.test("a\rb")).toBe(true);
    expect(() => compileRe2("(?m:^b)").test("a\rb")).toThrow(UnsupportedPattern);
    expect(compileRe2("(?m:^b)").test("a\nb")).toBe(true);
    expect(compileRe2("(?m:^b)").test("ab")).toBe(false);
  });

  it("a call is 422 pattern_unsupported naming the pattern, not a wrong answer", async () => {
    const call = async (schema: unknown, instance: unknown) => {
      const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const schema = { properties: { line: { type: "string", pattern: "(?m:^b)" } } };
    for (const text of ["a\rb", "a\u2028b", "a\u2029b"]) {
      const r = await call(schema, { line: text });
      expect(r.status).toBe(422);
      const [item] = (r.body as { detail: { loc: unknown; type: string; msg: string; ctx: unknown }[] })
        .detail;
      expect(item).toMatchObject({
        // The schema, not one place: the pattern may stand in several (below).
        loc: ["body", "schema"],
        type: "pattern_unsupported",
        ctx: { pattern: "(?m:^b)" },
      });
      expect(item?.msg).toContain("\\r, U+2028");
    }
    // The same pattern in two places, the string at the first one: never blamed on the other.
    const twice = await call(
      { properties: { a: { pattern: "(?m:^b)" }, z: { pattern: "(?m:^b)" } } },
      { a: "a\rb", z: "b" },
    );
    expect((twice.body as { detail: { loc: unknown }[] }).detail[0]?.loc).toEqual(["body", "schema"]);
    expect((await call(schema, { line: "a\nb" })).body).toMatchObject({ valid: true, checked: true });
    expect((await call(schema, { line: "ab" })).body).toMatchObject({ valid: false, checked: true });
    // A property name is a string the pattern is tested on too.
    const names = await call({ patternProperties: { "(?m:a$)": { type: "number" } } }, { "a\r": "x" });
    expect(names.status).toBe(422);
    // Without the m flag, ^ and $ are the string's ends in both engines: answered.
    expect((await call({ pattern: "^a\\rb$" }, "a\rb")).body).toMatchObject({ valid: true, checked: true });
  });
});
