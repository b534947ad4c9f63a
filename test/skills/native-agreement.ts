import { compileRe2 } from "../../src/skills/lib/schema-patterns";

/** Every BMP code point but the surrogates, one astral one and the last: one string each. */
export function everyCodePoint(): string[] {
  const chars: string[] = [];
  for (let cp = 0; cp <= 0xffff; cp++) if (cp < 0xd800 || cp > 0xdfff) chars.push(String.fromCodePoint(cp));
  chars.push("\u{1f600}", "\u{10ffff}");
  return chars;
}

/** The inputs on which json_schema_validate's RE2 reading of `pattern` answers otherwise than native RegExp. */
export function disagreements(pattern: string, inputs: readonly string[]): string[] {
  const native = new RegExp(pattern, "u");
  const re2 = compileRe2(pattern);
  return inputs.filter((input) => native.test(input) !== re2.test(input));
}
