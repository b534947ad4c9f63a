import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";
import { disagreements, everyCodePoint } from "./native-agreement";

// ECMAScript's modifiers (`(?s:…)`, `(?-s:…)`, which workerd's V8 reads) turn the s flag on or off
// for one group: there `.` is any code point. Every row is checked against native RegExp here.
const PATTERNS = [
  "^(?s:.)$",
  "^(?-s:.)$",
  "^(?is:.)$",
  "^(?si:.)$",
  "^(?s-i:.)$",
  "^(?i-s:.)$",
  "^(?m:.)$",
  "^(?s:.)+$",
  "^(?s:.{2})$",
  "^(?s:a|.)$",
  "^(?s:(?:.))$", // a group within inherits the flag,
  "^(?s:(.))$",
  "^(?<g>(?s:.))$",
  "^(?s:(?<g>.))$",
  "^(?s:(?-s:.))$", // unless it turns it off,
  "^(?s:(?-s:a)|.)$", // for itself only,
  "^(?s:(?i-s:.)|(?-i:.))$",
  "^(?s:a).$", // and it ends with the group.
  "^(?s:(a)).$",
  "^(?-s:(?s:.)).$",
  "^(?i:(?s:.))$",
  "^(?s:[.])$", // a dot in a class is a dot,
  "^(?s:[^.])$",
  "^(?s:[)].)$", // a parenthesis in a class closes nothing,
  "^(?s:[(])$",
  "^(?s:\\.)$", // an escaped dot is a dot,
  "^(?s:\\\\.)$", // an escaped backslash is not,
  "^(?s:\\)|.)$", // nor an escaped parenthesis a group.
  "^(?s:\\().$",
  "^.$",
  "^[\\s\\S]$",
];
const INPUTS = [
  "\n",
  "\r",
  "\u2028",
  "\u2029",
  "a",
  "A",
  ".",
  ")",
  "(",
  "\\",
  "\u{1f600}",
  "\ud800",
  "\n\n",
  "a\n",
  "\na",
  "A\r",
  "\\\n",
  ")\n",
  "(\n",
  "aa",
];

describe("(?s:…) turns the s flag on for its group, as in ECMAScript", () => {
  it("agrees with native RegExp on every pattern and input of the table", () => {
    const differ = PATTERNS.flatMap((pattern) =>
      disagreements(pattern, INPUTS).map((input) => `${pattern} on ${JSON.stringify(input)}`),
    );
    expect(differ).toEqual([]);
  });

  it("the s flag's groups take every code point, the rest still stop at line terminators", () => {
    // Lone surrogates too: the s flag's dot takes them.
    const chars = [...everyCodePoint()];
    for (let cp = 0xd800; cp <= 0xdfff; cp++) chars.push(String.fromCharCode(cp));
    for (const pattern of ["^(?s:.)$", "^(?s:(?-s:.))$", "^(?s:a|(?i-s:.)|b)$"]) {
      expect(
        disagreements(pattern, chars).map((c) => c.codePointAt(0)?.toString(16)),
        pattern,
      ).toEqual([]);
    }
  });

  it.each([
    ["^(?s:.)$", "\n", true],
    ["^(?s:.)$", "\u2028", true],
    ["^(?s:a.b)$", "a\r\nb", false],
    ["^(?s:a..b)$", "a\r\nb", true],
    ["^(?s:(?-s:.))$", "\n", false],
    ["^(?s:x).$", "x\n", false],
  ])("%s on %j is %s through the skill", async (pattern, instance, valid) => {
    const res = await postJson(
      "/api/skills/json-schema-validate",
      JSON.stringify({ schema: { pattern }, instance }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ valid, checked: true });
    expect(new RegExp(pattern, "u").test(instance)).toBe(valid);
  });
});
