import { RE2JS } from "re2js";

/**
 * `pattern` and `patternProperties` of json_schema_validate run on RE2 (re2js), in linear time:
 * a pattern JavaScript accepts but RE2 cannot run (lookaround, backreference) is refused up front.
 * What both engines write alike but read differently (`\s`, `\S`, `.`) is rewritten to mean what
 * ECMA-262, the dialect JSON Schema names, means by it (toRe2Syntax).
 */

/** A pattern that JavaScript accepts but RE2 cannot run in linear time (lookaround, backreference). */
export class UnsupportedPattern extends Error {
  constructor(
    readonly pattern: string,
    readonly path: (string | number)[],
    readonly reason: string,
    /** RE2 could run it, but it is too large to compile here (counted repetition). */
    readonly tooLarge = false,
  ) {
    super(`pattern ${JSON.stringify(pattern)} is not supported: ${reason}`);
  }
}

/** A pattern that is not a valid ECMAScript regular expression: an invalid schema, as before. */
export class InvalidPattern extends Error {}

/** The real constructor: the validator sees a stand-in while it runs (schema-work.ts). */
export const NativeRegExp = RegExp;

/**
 * RE2 expands counted repetition when it compiles: `(?:a.{0,999}z)` is a thousand instructions, and
 * compiling costs about 4 µs and 350 bytes per instruction (re2js, measured here). 600 of them in
 * an 8 KB schema took 2 s and ~200 MB, past a Worker's 128 MB. Matching (an NFA) also costs per
 * instruction per character: `a[ab]{999}$` over 1 MB took 6 s. So a pattern's expanded size is
 * estimated from its text before it is compiled, bounded, and priced into every test.
 */
export const MAX_PATTERN_SIZE = 5_000;
/** All patterns of one schema together: about 80 ms and 7 MB of compiling. */
export const MAX_SCHEMA_PATTERN_SIZE = 20_000;
/** Compiled programs kept across requests, by total size (~15 MB). */
const MAX_CACHED_SIZE = 40_000;

/**
 * An upper estimate of the instructions RE2 compiles a (valid, `u`-mode) ECMAScript pattern to:
 * one per atom, each group its parts plus two (a capture's two instructions; an empty group is not
 * free), one per `|`, `{n,m}` n copies of what it repeats and m − n optional ones (each one more
 * for its branch), `*` `+` `?` one more.
 */
export function patternSize(pattern: string): number {
  const frames: { total: number; last: number }[] = [{ total: 0, last: 0 }];
  const top = () => frames[frames.length - 1] as { total: number; last: number };
  const atom = (n: number) => {
    top().total += n;
    top().last = n;
  };
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === "\\") {
      const next = pattern[i + 1];
      if ((next === "u" || next === "p" || next === "P") && pattern[i + 2] === "{")
        i = pattern.indexOf("}", i);
      else i += next === "x" ? 3 : next === "u" ? 5 : next === "c" ? 2 : 1;
      atom(1);
    } else if (ch === "[") {
      for (i++; i < pattern.length && pattern[i] !== "]"; i++) if (pattern[i] === "\\") i++;
      atom(1);
    } else if (ch === "(") {
      frames.push({ total: 0, last: 0 });
      if (pattern[i + 1] === "?") {
        // (?: (?= (?! (?<= (?<! (?<name>: the prefix is not an atom.
        const named = pattern[i + 2] === "<" && pattern[i + 3] !== "=" && pattern[i + 3] !== "!";
        i = named ? pattern.indexOf(">", i) : i + (pattern[i + 2] === "<" ? 3 : 2);
      }
    } else if (ch === ")") {
      const group = (frames.length > 1 ? frames.pop() : top()) as { total: number };
      atom(group.total + 2);
    } else if (ch === "|") {
      top().total += 1;
      top().last = 0;
    } else if (ch === "*" || ch === "+" || ch === "?") {
      top().total += 1;
      top().last += 1;
    } else if (ch === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (m) {
        const n = Number(m[1]);
        const most = m[2] ? (m[3] ? Number(m[3]) : n + 1) : n;
        const f = top();
        // n copies, then (most − n) optional copies of one more instruction each.
        const repeated = f.last * Math.max(most, 1) + Math.max(most - n, 0);
        f.total += repeated - f.last;
        f.last = repeated;
        i += m[0].length - 1;
      } else atom(1);
    } else {
      atom(1);
    }
  }
  return Math.max(1, frames[0]?.total ?? 1);
}

/**
 * ECMAScript's `\s`: WhiteSpace and LineTerminator (ECMA-262 22.2.2.9), as code point ranges. RE2's
 * `\s` is Perl's [\t\n\f\r ] only, so `^\S+$` took "pay\u00a0ment" and `^\s*$` refused "\u3000".
 */
const JS_SPACE: readonly [number, number][] = [
  [0x09, 0x0d], // \t \n \v \f \r
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const re2Char = (cp: number) => `\\x{${cp.toString(16)}}`;
const SPACE_MEMBERS = JS_SPACE.map(([a, b]) => (a === b ? re2Char(a) : `${re2Char(a)}-${re2Char(b)}`)).join(
  "",
);
const SPACE_CHARS = JS_SPACE.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i));
/** ECMAScript's `.` without the s flag stops at every line terminator; RE2's at \n only. */
const JS_DOT = "[^\\n\\r\\x{2028}\\x{2029}]";
const ANY_CHAR = "[\\x{0}-\\x{10ffff}]";
const NO_CHAR = "[^\\x{0}-\\x{10ffff}]";

/** Length of the escape at `i` (a backslash): `\p{…}` whole, any other escape its backslash and one unit. */
const escapeLength = (pattern: string, i: number) => {
  const next = pattern[i + 1];
  if ((next === "p" || next === "P") && pattern[i + 2] === "{") {
    const end = pattern.indexOf("}", i);
    if (end > 0) return end - i + 1;
  }
  return 2;
};

/**
 * `\uD83D\uDE00` at `i`: in `u` mode ECMAScript reads an escaped lead and trail surrogate as the
 * one code point they encode (U+1F600); RE2 reads two surrogates, which no text holds, so
 * `^\uD83D\uDE00$` refused "😀". Answers that code point, or undefined for anything else.
 */
const SURROGATE_PAIR = /^\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})/i;
function escapedPairAt(pattern: string, i: number): number | undefined {
  if (pattern[i + 1] !== "u") return undefined;
  const m = SURROGATE_PAIR.exec(pattern.slice(i, i + 12));
  if (!m) return undefined;
  const lead = Number.parseInt(m[1] as string, 16);
  const trail = Number.parseInt(m[2] as string, 16);
  return 0x10000 + ((lead - 0xd800) << 10) + (trail - 0xdc00);
}

/**
 * One character class (`[` to its `]`, as ECMAScript ends it: at the first unescaped `]`). `\s`
 * becomes JavaScript's whitespace members. `\S` has no RE2 spelling inside a class besides its own
 * (Perl's), so a class holding it is rewritten whole: it takes every non-space character (or, negated,
 * none) plus the spaces its other members take, which the native engine tells by testing the class
 * alone on each of the 25 spaces (one class on one character: no backtracking). A `[` is escaped:
 * RE2 would read `[[:alpha:]` as a POSIX class and refuse it, ECMAScript reads the characters.
 * `\b` is a backspace in a class (ECMA-262 ClassEscape), which RE2 does not spell so: it refused
 * `[\b]` as an invalid escape.
 */
function classToRe2(cls: string): string {
  const negated = cls[1] === "^";
  let out = negated ? "[^" : "[";
  let notSpace = false;
  for (let i = negated ? 2 : 1; i < cls.length - 1; ) {
    if (cls[i] !== "\\") {
      out += cls[i] === "[" ? "\\[" : cls[i];
      i++;
      continue;
    }
    const pair = escapedPairAt(cls, i);
    if (pair !== undefined) {
      out += re2Char(pair);
      i += 12;
      continue;
    }
    const n = escapeLength(cls, i);
    const esc = cls.slice(i, i + n);
    if (esc === "\\s") out += SPACE_MEMBERS;
    else if (esc === "\\S") notSpace = true;
    else if (esc === "\\b") out += re2Char(0x08);
    else out += esc;
    i += n;
  }
  if (!notSpace) return `${out}]`;
  const native = new NativeRegExp(cls, "u");
  const taken = SPACE_CHARS.filter((cp) => native.test(String.fromCodePoint(cp)));
  if (negated) return taken.length > 0 ? `[${taken.map(re2Char).join("")}]` : NO_CHAR;
  const left = SPACE_CHARS.filter((cp) => !taken.includes(cp));
  return left.length > 0 ? `[^${left.map(re2Char).join("")}]` : ANY_CHAR;
}

/**
 * A (valid, `u`-mode) ECMAScript pattern with `\s`, `\S`, `.`, an escaped surrogate pair and a
 * class's `\b` spelled so RE2 reads them as ECMAScript does; every other escape (`\\s` included,
 * `\p{…}` whole) and character is kept.
 */
export function toRe2Syntax(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; ) {
    const ch = pattern[i];
    if (ch === "\\") {
      const pair = escapedPairAt(pattern, i);
      if (pair !== undefined) {
        out += re2Char(pair);
        i += 12;
        continue;
      }
      const n = escapeLength(pattern, i);
      const esc = pattern.slice(i, i + n);
      out += esc === "\\s" ? `[${SPACE_MEMBERS}]` : esc === "\\S" ? `[^${SPACE_MEMBERS}]` : esc;
      i += n;
    } else if (ch === "[") {
      let end = i + 1;
      while (end < pattern.length && pattern[end] !== "]") end += pattern[end] === "\\" ? 2 : 1;
      out += classToRe2(pattern.slice(i, end + 1));
      i = end + 1;
    } else {
      out += ch === "." ? JS_DOT : ch;
      i++;
    }
  }
  return out;
}

class PatternTooLarge extends Error {}

const compiled = new Map<string, { re: RE2JS; size: number }>();
let cachedSize = 0;

function compiledEntry(pattern: string) {
  let entry = compiled.get(pattern);
  if (!entry) {
    const size = patternSize(pattern);
    if (size > MAX_PATTERN_SIZE) throw new PatternTooLarge(tooLarge(size));
    // Sized from the pattern as written: each rewritten class is one atom either way.
    entry = { re: RE2JS.compile(RE2JS.translateRegExp(toRe2Syntax(pattern))), size };
    if (cachedSize + size > MAX_CACHED_SIZE) {
      compiled.clear();
      cachedSize = 0;
    }
    compiled.set(pattern, entry);
    cachedSize += size;
  }
  return entry;
}

const tooLarge = (size: number) =>
  `it expands to about ${size} RE2 instructions (counted repetition multiplies what it repeats); at most ${MAX_PATTERN_SIZE}`;

export const compileRe2 = (pattern: string): RE2JS => compiledEntry(pattern).re;

/** `\k` after an even number of backslashes (an escaped backslash before it is no escape of k). */
const NAMED_BACKREFERENCE = /(?:^|[^\\])(?:\\\\)*\\k/;

/** Work units of one test (schema-work.ts's currency): matching costs per instruction per character. */
export const testCost = (pattern: string, chars: number, charsPerUnit: number) =>
  0.5 + (chars * Math.max(1, compiledEntry(pattern).size / 8)) / charsPerUnit;

/**
 * Refuses, before validation, a pattern the schema may not use (an invalid, a non-linear or a too
 * large one). Returns its estimated size, which the caller sums over the schema.
 */
export function checkPattern(pattern: string, path: (string | number)[]): number {
  try {
    new NativeRegExp(pattern, "u");
  } catch (e) {
    throw new InvalidPattern(`#/${path.join("/")}: ${e instanceof Error ? e.message : String(e)}`);
  }
  // In a valid u-mode pattern every `\k` is a named backreference (anything else is a syntax
  // error there); re2js's translation reads it as the letters "k<name>", a silent wrong answer.
  if (NAMED_BACKREFERENCE.test(pattern))
    throw new UnsupportedPattern(pattern, path, "RE2 cannot run a backreference (\\k<name>)");
  try {
    return compiledEntry(pattern).size;
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new UnsupportedPattern(pattern, path, reason, e instanceof PatternTooLarge);
  }
}

/** The schema's patterns together may not pass MAX_SCHEMA_PATTERN_SIZE (checked as they are met). */
export function checkSchemaPatterns(total: number, pattern: string, path: (string | number)[]) {
  if (total > MAX_SCHEMA_PATTERN_SIZE) {
    throw new UnsupportedPattern(
      pattern,
      path,
      `the schema's patterns together expand to more than ${MAX_SCHEMA_PATTERN_SIZE} RE2 instructions`,
      true,
    );
  }
}
