import { RE2JS } from "re2js";
import { re2Property } from "./schema-properties";

export { writtenProperty } from "./schema-properties";

/**
 * `pattern` and `patternProperties` of json_schema_validate run on RE2 (re2js), in linear time:
 * a pattern JavaScript accepts but RE2 cannot run (lookaround, backreference) is refused up front.
 * What both engines write alike but read differently (`\s`, `\S`, `.`) is rewritten to mean what
 * ECMA-262, the dialect JSON Schema names, means by it (toRe2Syntax); what RE2 cannot spell so
 * (`^` and `$` in `(?m:…)` on a string holding \r, U+2028 or U+2029; `\P{…}` in `(?i:…)`) is
 * refused, not answered.
 */

/** A pattern that JavaScript accepts but RE2 cannot run in linear time (lookaround, backreference). */
export class UnsupportedPattern extends Error {
  constructor(
    readonly pattern: string,
    readonly path: (string | number)[],
    readonly reason: string,
    /** RE2 could run it, but compiling it costs too much here, alone or with the schema's others. */
    readonly tooLarge = false,
    /** RE2 runs it, but would answer otherwise than ECMAScript on a string of the instance. */
    readonly onInstance = false,
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
 *
 * Some atoms are one instruction but cost far more to read, once however often they are repeated
 * (the native syntax check and RE2's parser each build the set; a repetition copies the result).
 * A unit is what the budget below prices, ~4 µs; per occurrence, measured in workerd (RE2JS compile
 * and `new RegExp(p, "u")` timed over 200 to 4,800 copies in a row and in an alternation, node
 * within 2×):
 * - a Unicode property (`\p{L}`, `\P{…}`, alone or in a class): V8 20–70 µs + RE2 up to 130 µs
 *   (`\p{Alphabetic}`, `\p{L}`, `\p{Cn}`; `\p{N}` 20, `\p{Any}` 1), 185 µs inside `(?i:…)`;
 *   `[\p{L}\p{N}\p{M}]` 200 + 55 µs, a six-property class 340 + 170 µs. 4 patterns of 4,800 of
 *   those were 19,204 "instructions", within the budget, and took 4.7 s: PROPERTY_UNITS each.
 * - a class's text: V8 and RE2 together 0.4 µs a character (40,000 `a` 15 ms, 4,000 distinct CJK
 *   1.7 ms): one unit per CLASS_CHARS_PER_UNIT, so a 4-million-character class is not one unit.
 * - a range of a class inside `(?i:…)`: RE2 folds it code point by code point (20–190 ns each)
 *   unless it spans every case-folding one (U+0041–U+1E943): `(?i:[\u{42}-\u{1e943}])` 2–7.7 ms,
 *   `(?i:[\u{4e00}-\u{9fff}])` 4 ms. One unit per FOLD_CODE_POINTS_PER_UNIT.
 * - `\s` and `\S`, rewritten to ECMAScript's ten ranges (negated for `\S`): 4–5 µs each warm
 *   (node 9.5), but 14–27 µs each cold, in a schema of them: SPACE_UNITS more. At one more unit,
 *   4 patterns of `\S`, `(?i:[\S])` and `(?i:\S)` filling 19,216 units took 222, 240 and 159 ms.
 * - a class holding `\S`, rewritten whole by testing it natively on each space (classToRe2): twice
 *   `[\s]` (`[\S]` 8–9 µs warm, `(?i:[\S])` 11–12; cold 31 and 37): NOT_SPACE_CLASS_UNITS more.
 * Ordinary atoms cost 0.4–2.5 µs; counted repetition of a class and nested repetition cost what
 * their expanded instructions do (`[\p{L}]{1000}`: 0.3 ms). Schemas of each atom above filling
 * 19,000 units compiled in at most 3 µs a unit (cold; `\s` in a row, `(?i:\p{L})` in an alternation
 * 2.5), so 20,000 units stay within about 80 ms. Measured again for the `\s` family (4 patterns in
 * a row, the validator loaded, median of 5 on a loaded 2-core machine), against `(?i:\p{L})` in the
 * same runs (4.6 µs a unit; 3.4 quiet): `\s` 2.4, `\S` 4.4, `[\S]` 3.1, `(?i:\S)` 2.6, `(?i:[\s])`
 * 4.0, `(?i:[\S])` 3.0.
 */
export const MAX_PATTERN_SIZE = 5_000;
/** All patterns of one schema together: about 80 ms and 7 MB of compiling. */
export const MAX_SCHEMA_PATTERN_SIZE = 20_000;
const PROPERTY_UNITS = 50;
const CLASS_CHARS_PER_UNIT = 8;
const FOLD_CODE_POINTS_PER_UNIT = 16;
/** `\s` or `\S` anywhere, besides its instruction: 6 units each. */
const SPACE_UNITS = 5;
/** A class holding `\S`, once, besides its members. */
const NOT_SPACE_CLASS_UNITS = 4;
/** The code points RE2's case folding walks one by one (re2js Unicode.MIN_FOLD, MAX_FOLD). */
const MIN_FOLD = 0x41;
const MAX_FOLD = 0x1e943;

/** The character escapes of a class (ECMA-262 ClassEscape) that are one code point, by letter. */
const CONTROL: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, b: 8, "0": 0 };
/** What a range folded whole costs: charged where a range's ends cannot be read (an invalid one). */
const FULL_FOLD_UNITS = Math.floor((MAX_FOLD - MIN_FOLD + 1) / FOLD_CODE_POINTS_PER_UNIT);

/** The code point of hex digits (any number of leading zeros), or undefined for what is none. */
const hexCodePoint = (digits: string): number | undefined => {
  if (!/^[0-9a-fA-F]+$/.test(digits)) return undefined;
  const cp = Number.parseInt(digits, 16);
  return cp <= 0x10ffff ? cp : undefined;
};

/**
 * The class member at `j` (ECMA-262 ClassAtom, `u` mode): its code point, or undefined for a set
 * (`\d`, `\p{…}`) or what cannot be read (an invalid escape); where it ends; what it is besides.
 * An unescaped `-` is the code point 0x2D: whether it joins a range is the caller's to say.
 */
function classAtomAt(
  pattern: string,
  j: number,
): { end: number; cp: number | undefined; property?: boolean; space?: "s" | "S" } {
  if (pattern[j] !== "\\") {
    const cp = pattern.codePointAt(j) as number;
    return { end: j + (cp > 0xffff ? 2 : 1), cp };
  }
  const pair = escapedPairAt(pattern, j);
  if (pair !== undefined) return { end: j + 12, cp: pair };
  const next = pattern[j + 1] ?? "";
  if ((next === "p" || next === "P") && pattern[j + 2] === "{")
    return { end: braceEnd(pattern, j) + 1, cp: undefined, property: true };
  if (next === "u" && pattern[j + 2] === "{") {
    // All its digits, however many leading zeros (a window of them read a long one as no number).
    const end = braceEnd(pattern, j);
    return { end: end + 1, cp: hexCodePoint(pattern.slice(j + 3, end)) };
  }
  if (next === "u" || next === "x") {
    const digits = next === "u" ? 4 : 2;
    return { end: j + 2 + digits, cp: hexCodePoint(pattern.slice(j + 2, j + 2 + digits)) };
  }
  if (next === "c") {
    const letter = pattern[j + 2] ?? "";
    return { end: j + 3, cp: /^[A-Za-z]$/.test(letter) ? letter.charCodeAt(0) % 32 : undefined };
  }
  if (next === "s" || next === "S") return { end: j + 2, cp: undefined, space: next };
  if (next === "" || "dDwW".includes(next)) return { end: j + 2, cp: undefined };
  const cp = CONTROL[next] ?? (next.codePointAt(0) as number);
  return { end: j + 1 + (cp > 0xffff ? 2 : 1), cp };
}

/**
 * What RE2 folding the range `lo`–`hi` costs inside `(?i:…)`: it walks the case-folding code points
 * of it one by one, unless it spans them all. A range whose ends cannot be read is charged as the
 * whole span: it is no cheaper than any spelling of it.
 */
function foldUnits(lo: number | undefined, hi: number | undefined): number {
  if (lo === undefined || hi === undefined || lo > hi) return FULL_FOLD_UNITS;
  if (lo <= MIN_FOLD && hi >= MAX_FOLD) return 0; // RE2 adds it whole
  const walked = Math.min(hi, MAX_FOLD) - Math.max(lo, MIN_FOLD) + 1;
  return Math.floor(Math.max(walked, 0) / FOLD_CODE_POINTS_PER_UNIT);
}

/**
 * What reading the class at `i` (its `[`) costs besides its instruction, and where it ends (its
 * `]`, as ECMAScript ends it). Its members are read as ECMAScript reads them (ClassRanges): a
 * member, then a range if a `-` follows that does not end the class, so an unescaped `-` is a
 * range's end as well as any other character (`[--\u{1e942}]` is U+002D to U+1E942: RE2 folds
 * ~125,000 code points of it, and it was read as no range). `[a-]`, `[-a]`, `[a-b-c]`.
 */
function classCost(
  pattern: string,
  i: number,
  fold: boolean,
): { end: number; units: number; properties: number } {
  let units = 0;
  let properties = 0;
  let notSpace = false;
  const read = (j: number) => {
    const atom = classAtomAt(pattern, j);
    if (atom.property) {
      units += PROPERTY_UNITS;
      properties++;
    }
    if (atom.space) units += SPACE_UNITS;
    if (atom.space === "S") notSpace = true;
    return atom;
  };
  let j = i + 1;
  if (pattern[j] === "^") j++;
  while (j < pattern.length && pattern[j] !== "]") {
    const lo = read(j);
    j = lo.end;
    if (pattern[j] !== "-" || j + 1 >= pattern.length || pattern[j + 1] === "]") continue;
    const hi = read(j + 1);
    j = hi.end;
    if (fold) units += foldUnits(lo.cp, hi.cp);
  }
  units += Math.floor((j - i - 1) / CLASS_CHARS_PER_UNIT) + (notSpace ? NOT_SPACE_CLASS_UNITS : 0);
  return { end: j, units, properties };
}

/** The `}` closing the brace at or after `i`, or the pattern's end (an invalid pattern). */
const braceEnd = (pattern: string, i: number) => {
  const end = pattern.indexOf("}", i);
  return end < 0 ? pattern.length : end;
};

/** `(?flags-flags:`: whether it turns case-insensitivity on or off, and its length. */
const MODIFIERS = /^\(\?([ims]*)(?:-([ims]*))?:/;

/**
 * An upper estimate of what compiling a (valid, `u`-mode) ECMAScript pattern costs, in RE2
 * instructions: one per atom, each group its parts plus two (a capture's two instructions; an empty
 * group is not free), one per `|`, `{n,m}` n copies of what it repeats and m − n optional ones
 * (each one more for its branch), `*` `+` `?` one more; plus, once, what reading the dear atoms
 * costs (above). `instructions` is the program's size without them, what matching costs by;
 * `properties` counts the Unicode properties as written (nativeCheckMicroseconds).
 */
export function patternEstimate(pattern: string): {
  instructions: number;
  units: number;
  properties: number;
} {
  type Frame = { total: number; last: number; fold: boolean };
  const frames: Frame[] = [{ total: 0, last: 0, fold: false }];
  const top = () => frames[frames.length - 1] as Frame;
  let once = 0;
  let properties = 0;
  const atom = (n: number) => {
    top().total += n;
    top().last = n;
  };
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === "\\") {
      const next = pattern[i + 1];
      if ((next === "u" || next === "p" || next === "P") && pattern[i + 2] === "{") {
        const end = braceEnd(pattern, i);
        // \u{…} may have any number of leading zeros: its digits are read like a class's text.
        once += next === "u" ? Math.floor((end - i - 3) / CLASS_CHARS_PER_UNIT) : PROPERTY_UNITS;
        if (next !== "u") properties++;
        i = end;
      } else {
        if (next === "s" || next === "S") once += SPACE_UNITS;
        i += next === "x" ? 3 : next === "u" ? 5 : next === "c" ? 2 : 1;
      }
      atom(1);
    } else if (ch === "[") {
      const cls = classCost(pattern, i, top().fold);
      once += cls.units;
      properties += cls.properties;
      i = cls.end;
      atom(1);
    } else if (ch === "(") {
      const outer = top().fold;
      const modifiers = MODIFIERS.exec(pattern.slice(i, i + 12));
      frames.push({
        total: 0,
        last: 0,
        fold: modifiers
          ? (outer || (modifiers[1] ?? "").includes("i")) && !(modifiers[2] ?? "").includes("i")
          : outer,
      });
      if (modifiers) i += modifiers[0].length - 1;
      else if (pattern[i + 1] === "?") {
        // (?: (?= (?! (?<= (?<! (?<name>: the prefix is not an atom; a long name is read once.
        const named = pattern[i + 2] === "<" && pattern[i + 3] !== "=" && pattern[i + 3] !== "!";
        const end = named ? pattern.indexOf(">", i) : i + (pattern[i + 2] === "<" ? 3 : 2);
        if (named) once += Math.floor(((end < 0 ? pattern.length : end) - i - 3) / CLASS_CHARS_PER_UNIT);
        i = end < 0 ? pattern.length : end;
      }
    } else if (ch === ")") {
      const group = (frames.length > 1 ? frames.pop() : top()) as Frame;
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
  const instructions = Math.max(1, frames[0]?.total ?? 1);
  return { instructions, units: instructions + once, properties };
}

/** The estimate the budgets count (MAX_PATTERN_SIZE, MAX_SCHEMA_PATTERN_SIZE): compiling's cost. */
export const patternSize = (pattern: string): number => patternEstimate(pattern).units;

/**
 * What the native syntax check alone (`new RegExp(p, "u")`, all the `regex` format runs on an
 * instance string) costs, in µs: V8 builds each Unicode property's set and parses the rest
 * in time linear in the text, without expanding counted repetition (20,000 `a{2,3}` 0 ms, so the
 * budgets' units above, which count RE2's expansion and case folding, would refuse `^.{0,65535}$`
 * for nothing). Measured in workerd, 1,000 copies of each shape in a row, best of 3: a property
 * 3–41 µs alone (`\p{L}` 29, `\P{Cn}` 41), 19–83 µs each in a class of several
 * (`[\p{L}\p{N}\p{M}]` 183 µs, `[\p{Cn}\p{L}\p{Co}]` 249, 37 general categories in one class
 * 1.9 ms), fewer inside `(?i:…)`; any other text at most 25 ns a character (`.`, `\d`, groups,
 * 7,500-character classes of ranges, with or without `(?i:…)`).
 */
const NATIVE_PROPERTY_MICROSECONDS = 100;
const NATIVE_CHAR_MICROSECONDS = 0.03;
/**
 * Groups of one name cost V8 time quadratic in their number (workerd allows duplicate names):
 * each `\k<name>` is resolved against every group of its name, and each group against the others
 * of its name. Measured: 4,000 `(?<a>x)` alternatives with 4,000 `\k<a>` (52 KB) 169 ms, 16,000
 * with 16,000 1.8 s, 40,000 groups alone (320 KB) 300 ms, where the per-character rate said a few
 * ms; distinct names cost what their characters do (30,000 groups and 30,000 references 23 ms).
 * Charged per name, with room: 0.02 µs a group × a reference, 0.001 µs a group × a group.
 */
const NATIVE_GROUP_REFERENCE_MICROSECONDS = 0.02;
const NATIVE_GROUP_GROUP_MICROSECONDS = 0.001;
const MAX_NAME = 256;
/**
 * Σ groups × references and Σ groups² over the names, counted from the text: an upper bound
 * (`(?<=`, `(?<!`, and `(?<` or `\k<` inside a class or after an escape, count too). Names written
 * with an escape (`(?<\u0061>` is `a`) share one bucket, so no spelling splits a name.
 */
function namedGroupPairs(pattern: string): { groupReferences: number; groupGroups: number } {
  const names = new Map<string, { groups: number; references: number }>();
  for (let i = pattern.indexOf("<"); i >= 0; i = pattern.indexOf("<", i + 1)) {
    const group = i >= 2 && pattern[i - 1] === "?" && pattern[i - 2] === "(";
    const reference = !group && i >= 2 && pattern[i - 1] === "k" && pattern[i - 2] === "\\";
    if (!group && !reference) continue;
    if (group && (pattern[i + 1] === "=" || pattern[i + 1] === "!")) continue;
    // A name is short: read to its ">" at most MAX_NAME characters on (an unclosed one, repeated,
    // must not make this quadratic).
    let close = i + 1;
    while (close < pattern.length && close - i <= MAX_NAME && pattern[close] !== ">") close++;
    const written = pattern.slice(i + 1, close);
    const name = written.includes("\\") ? "\\" : written;
    let counts = names.get(name);
    if (!counts) {
      counts = { groups: 0, references: 0 };
      names.set(name, counts);
    }
    if (group) counts.groups++;
    else counts.references++;
  }
  let groupReferences = 0;
  let groupGroups = 0;
  for (const { groups, references } of names.values()) {
    groupReferences += groups * references;
    groupGroups += groups * groups;
  }
  return { groupReferences, groupGroups };
}
const nativeMicroseconds = (pattern: string, properties: number) => {
  const pairs = pattern.includes("<") ? namedGroupPairs(pattern) : { groupReferences: 0, groupGroups: 0 };
  return (
    NATIVE_PROPERTY_MICROSECONDS * properties +
    NATIVE_CHAR_MICROSECONDS * pattern.length +
    NATIVE_GROUP_REFERENCE_MICROSECONDS * pairs.groupReferences +
    NATIVE_GROUP_GROUP_MICROSECONDS * pairs.groupGroups
  );
};
export const nativeCheckMicroseconds = (pattern: string): number =>
  nativeMicroseconds(pattern, patternEstimate(pattern).properties);

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
    else out += re2Property(esc);
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
 * class's `\b` spelled so RE2 reads them as ECMAScript does, and a Unicode property's long name
 * or alias as RE2's (schema-properties.ts); every other escape (`\\s` included) and character is kept.
 *
 * `.` is any code point where the s flag is on: inside `(?s:…)` (or `(?is:…)`, `(?s-i:…)`), until a
 * group within it turns it off (`(?-s:…)`), for that group only. It was rewritten as a line's
 * character everywhere, so `^(?s:.)$` refused "\n", which JavaScript takes. The group's own
 * modifiers are kept (RE2 reads them alike); `(?s)` without a group is no ECMAScript.
 *
 * `multilineAnchors`: whether a `^` or `$` stands where the m flag is on (`(?m:…)`, tracked the same
 * way). There ECMAScript breaks lines at \n, \r, U+2028 and U+2029, RE2 at \n only, and RE2 has no
 * lookbehind to spell the others: `(?m:^b)` on "a\rb" is true natively and was false here. Such a
 * pattern is not answered on a string holding one of those three (compiledEntry).
 *
 * `foldedNegation`: whether a `\P{…}`, bare or in a class, stands where the i flag is on (tracked
 * the same way): such a pattern is refused (FOLDED_NEGATION_REASON).
 */
function translate(pattern: string): { source: string; multilineAnchors: boolean; foldedNegation: boolean } {
  let out = "";
  let multilineAnchors = false;
  let foldedNegation = false;
  // The s, m and i flags in each group open at this point (the outermost first). A whole pattern
  // has none: it runs as `new RegExp(p, "u")`, and `(?i)` without a group is no ECMAScript.
  const flags = [{ s: false, m: false, i: false }];
  const on = (modifiers: RegExpExecArray, flag: string, outer: boolean) =>
    (outer || (modifiers[1] ?? "").includes(flag)) && !(modifiers[2] ?? "").includes(flag);
  for (let i = 0; i < pattern.length; ) {
    const ch = pattern[i];
    const current = flags[flags.length - 1] as { s: boolean; m: boolean; i: boolean };
    if (ch === "\\") {
      const pair = escapedPairAt(pattern, i);
      if (pair !== undefined) {
        out += re2Char(pair);
        i += 12;
        continue;
      }
      const n = escapeLength(pattern, i);
      const esc = pattern.slice(i, i + n);
      if (current.i && esc.startsWith("\\P{")) foldedNegation = true;
      out += esc === "\\s" ? `[${SPACE_MEMBERS}]` : esc === "\\S" ? `[^${SPACE_MEMBERS}]` : re2Property(esc);
      i += n;
    } else if (ch === "[") {
      let end = i + 1;
      while (end < pattern.length && pattern[end] !== "]") {
        if (current.i && pattern[end] === "\\" && pattern[end + 1] === "P") foldedNegation = true;
        end += pattern[end] === "\\" ? 2 : 1;
      }
      out += classToRe2(pattern.slice(i, end + 1));
      i = end + 1;
    } else if (ch === "(") {
      const modifiers = MODIFIERS.exec(pattern.slice(i, i + 12));
      flags.push(
        modifiers
          ? {
              s: on(modifiers, "s", current.s),
              m: on(modifiers, "m", current.m),
              i: on(modifiers, "i", current.i),
            }
          : { ...current },
      );
      out += ch;
      i++;
    } else if (ch === ")") {
      if (flags.length > 1) flags.pop();
      out += ch;
      i++;
    } else {
      if ((ch === "^" || ch === "$") && current.m) multilineAnchors = true;
      out += ch !== "." ? ch : current.s ? ANY_CHAR : JS_DOT;
      i++;
    }
  }
  return { source: out, multilineAnchors, foldedNegation };
}

export const toRe2Syntax = (pattern: string): string => translate(pattern).source;

class PatternTooLarge extends Error {}

/**
 * Compiled programs kept across requests, by the memory they hold (~15 MB). Retained after
 * collection (node --expose-gc, 50 distinct patterns of each kind): ~3 KB an entry, ~175 bytes an
 * instruction of an expanded repetition (80 a literal, 320 a property class), and 2 to 4.6 bytes a
 * character of the text (the key and RE2's copy of it): a class of 4 million characters is one
 * instruction but 16 MB, and 7 of them took an isolate past its 128 MB when the cache counted
 * instructions only. An entry is counted with margin by entryBytes.
 */
const MAX_CACHED_BYTES = 15_000_000;
const entryBytes = (pattern: string, instructions: number) => 3_072 + 350 * instructions + 6 * pattern.length;

type Entry = {
  re: RE2JS;
  instructions: number;
  units: number;
};
const compiled = new Map<string, Entry>();
let cachedBytes = 0;

/** What the cache holds, as entryBytes counts it (for tests: it stays within MAX_CACHED_BYTES). */
export const cachedPatternBytes = () => cachedBytes;

/** The line breaks of ECMAScript's multiline ^ and $ that RE2's are not (it breaks at \n only). */
const OTHER_LINE_BREAK = /[\r\u2028\u2029]/;
const MULTILINE_REASON =
  "in (?m:…) ECMAScript's ^ and $ also break lines at \\r, U+2028 and U+2029, RE2's at \\n only, and the string tested holds one";

/**
 * Under case-insensitive matching ECMAScript takes a character if any code point outside the
 * property case-folds to it (`(?i:\P{Lu})` takes "A": "a" is no Lu); RE2 complements the property
 * with its case folds added (it refuses "A"). Bare, in a class (`[\P{Lu}]`) or a negated one
 * (`[^\P{Lu}]`) alike: over all of Unicode 2,850 code points differ for Lu, 2,904 for Ll, 66 for
 * Lt, 4 for L, LC and M (U+0345, U+0399, U+03B9, U+1FBE), none for N, Nd, P or S (whose members
 * have no case folds), which are refused too, as no table says which properties are closed under
 * folding. `(?i:\p{…})` and `(?i:[^\p{…}])` answer as ECMAScript does (checked the same way).
 */
export const FOLDED_NEGATION_REASON =
  "RE2 would answer otherwise than ECMAScript for a negated Unicode property \\P{…} where case-insensitive matching (?i:…) is on (ECMAScript takes a character if any code point outside the property case-folds to it)";

function compiledEntry(pattern: string) {
  let entry = compiled.get(pattern);
  if (!entry) {
    const { instructions, units } = patternEstimate(pattern);
    if (units > MAX_PATTERN_SIZE) throw new PatternTooLarge(tooLarge(units));
    const { source, multilineAnchors, foldedNegation } = translate(pattern);
    if (foldedNegation) throw new UnsupportedPattern(pattern, [], FOLDED_NEGATION_REASON);
    // Sized from the pattern as written: each rewritten class is one atom either way.
    const re = RE2JS.compile(RE2JS.translateRegExp(source));
    const made: Entry = { re, instructions, units };
    if (multilineAnchors) {
      // test is all the validator calls (schema-work.ts); on such a string RE2 would answer wrong.
      const test = re.test.bind(re);
      re.test = (input: string | number[] | Uint8Array) => {
        if (typeof input === "string" && OTHER_LINE_BREAK.test(input))
          // The entry is shared by every place (and every schema) that has this pattern, and the
          // validator does not say which place is testing: reported at the schema, naming it.
          throw new UnsupportedPattern(pattern, [], MULTILINE_REASON, false, true);
        return test(input);
      };
    }
    entry = made;
    const bytes = entryBytes(pattern, instructions);
    if (cachedBytes + bytes > MAX_CACHED_BYTES) {
      compiled.clear();
      cachedBytes = 0;
    }
    compiled.set(pattern, entry);
    cachedBytes += bytes;
  }
  return entry;
}

const tooLarge = (units: number) =>
  `compiling it costs about ${units} RE2 instructions (counted repetition multiplies what it repeats; a Unicode property \\p{…} counts ${PROPERTY_UNITS}, a class's text one per ${CLASS_CHARS_PER_UNIT} characters, a range of a class in (?i:…) one per ${FOLD_CODE_POINTS_PER_UNIT} code points); at most ${MAX_PATTERN_SIZE}`;

export const compileRe2 = (pattern: string): RE2JS => compiledEntry(pattern).re;

/** `\k` after an even number of backslashes (an escaped backslash before it is no escape of k). */
const NAMED_BACKREFERENCE = /(?:^|[^\\])(?:\\\\)*\\k/;

/** Work units of one test (schema-work.ts's currency): matching costs per instruction per character. */
export const testCost = (pattern: string, chars: number, charsPerUnit: number) =>
  0.5 + (chars * Math.max(1, compiledEntry(pattern).instructions / 8)) / charsPerUnit;

/**
 * The native syntax check runs before a pattern is refused as too large where the check is cheap
 * (nativeCheckMicroseconds at most this, ~200 Unicode properties or ~600,000 characters; the most
 * a refused call can spend on it, once): an invalid pattern is an invalid schema whatever its
 * estimate, as for any other validator (`a{1000}{1000}` and 101 `\p{Bogus}` were "too large").
 * A longer one is refused from its estimate alone: 4,800 `[\p{L}\p{N}\p{M}]` took 1 s to check.
 */
const NATIVE_CHECK_FIRST_MICROSECONDS = 20_000;

const nativeSyntaxCheck = (pattern: string, path: (string | number)[]) => {
  try {
    new NativeRegExp(pattern, "u");
  } catch (e) {
    throw new InvalidPattern(`#/${path.join("/")}: ${e instanceof Error ? e.message : String(e)}`);
  }
};

/**
 * Refuses, before validation, a pattern the schema may not use (an invalid, a non-linear or a too
 * large one). `spent` is what the schema's patterns checked before it cost; returns its own, which
 * the caller adds. A too large one, or the one that would take the schema's patterns together past
 * MAX_SCHEMA_PATTERN_SIZE, is refused from its text before RE2 reads it, and before the native
 * check too unless that is cheap (NATIVE_CHECK_FIRST_MICROSECONDS).
 */
export function checkPattern(pattern: string, path: (string | number)[], spent = 0): number {
  const cached = compiled.get(pattern);
  const estimate = cached ? undefined : patternEstimate(pattern);
  const units = cached ? cached.units : (estimate?.units ?? 0);
  const refuse = (reason: string): never => {
    if (estimate && nativeMicroseconds(pattern, estimate.properties) <= NATIVE_CHECK_FIRST_MICROSECONDS)
      nativeSyntaxCheck(pattern, path);
    throw new UnsupportedPattern(pattern, path, reason, true);
  };
  if (!cached && units > MAX_PATTERN_SIZE) refuse(tooLarge(units));
  if (spent + units > MAX_SCHEMA_PATTERN_SIZE)
    refuse(
      `the schema's patterns together cost more than ${MAX_SCHEMA_PATTERN_SIZE} RE2 instructions to compile`,
    );
  nativeSyntaxCheck(pattern, path);
  // In a valid u-mode pattern every `\k` is a named backreference (anything else is a syntax
  // error there); re2js's translation reads it as the letters "k<name>", a silent wrong answer.
  if (NAMED_BACKREFERENCE.test(pattern))
    throw new UnsupportedPattern(pattern, path, "RE2 cannot run a backreference (\\k<name>)");
  try {
    return compiledEntry(pattern).units;
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new UnsupportedPattern(pattern, path, reason, e instanceof PatternTooLarge);
  }
}
