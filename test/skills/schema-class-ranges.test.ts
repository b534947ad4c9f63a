import { describe, expect, it } from "vitest";
import {
  cachedPatternBytes,
  MAX_PATTERN_SIZE,
  MAX_SCHEMA_PATTERN_SIZE,
  patternSize,
} from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

// Inside (?i:…) RE2 folds a class's ranges code point by code point, so the estimate charges each
// range by its width: it must read a range's ends as ECMAScript does, whatever their spelling. No
// test here times anything: what compiling costs is counted in units.
const MIN_FOLD = 0x41;
const MAX_FOLD = 0x1e943;
/** What (?i:…) adds to a class's estimate: the folding of its ranges alone. */
const foldOf = (cls: string) => patternSize(`(?i:${cls})`) - patternSize(`(?:${cls})`);
const hex = (cp: number, width: number) => cp.toString(16).padStart(width, "0");

/** Every way the pattern may write one code point as a range's end, in a class (u mode). */
function spellings(cp: number): string[] {
  const out = [`\\u{${hex(cp, 1)}}`, `\\u{${hex(cp, 24)}}`, `\\u{${hex(cp, 13).toUpperCase()}}`];
  if (cp === 0x2d) out.push("-", "\\-");
  else if (cp >= 0x20 && cp !== 0x5c && cp !== 0x5d && cp !== 0x5e && (cp < 0xd800 || cp > 0xdfff))
    out.push(String.fromCodePoint(cp));
  if (cp <= 0xff) out.push(`\\x${hex(cp, 2)}`);
  if (cp <= 0xffff && (cp < 0xd800 || cp > 0xdfff))
    out.push(`\\u${hex(cp, 4)}`, `\\u${hex(cp, 4).toUpperCase()}`);
  if (cp > 0xffff) {
    const s = String.fromCodePoint(cp);
    out.push(`\\u${hex(s.charCodeAt(0), 4)}\\u${hex(s.charCodeAt(1), 4)}`);
  }
  if (cp >= 1 && cp <= 26)
    out.push(`\\c${String.fromCharCode(0x40 + cp)}`, `\\c${String.fromCharCode(0x60 + cp)}`);
  if (cp === 0) out.push("\\0");
  const control: Record<number, string> = { 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r" };
  if (control[cp]) out.push(control[cp] as string);
  return out;
}

const POINTS = [
  0x0, 0x1, 0x9, 0xd, 0x1a, 0x2d, 0x41, 0x42, 0x5a, 0x61, 0x7a, 0xff, 0x100, 0x2000, 0x4e00, 0x9fff, 0xfffd,
  0x10000, 0x1e942, 0x1e943, 0x1f600, 0x10ffff,
];
/** Where a range may stand in a class: first, after a set, after another range, before a member. */
const CONTEXTS = [
  (r: string) => `[${r}]`,
  (r: string) => `[^${r}]`,
  (r: string) => `[0-9${r}]`,
  (r: string) => `[${r}z-]`,
];

describe("a class's range is charged its folding however its ends are spelled", () => {
  it("every spelling of every range of the table is estimated as its canonical [\\u{lo}-\\u{hi}]", () => {
    const differ: string[] = [];
    let rows = 0;
    for (const lo of POINTS)
      for (const hi of POINTS) {
        if (hi < lo) continue;
        const canonical = `\\u{${hex(lo, 1)}}-\\u{${hex(hi, 1)}}`;
        for (const context of CONTEXTS) {
          const expected = foldOf(context(canonical));
          const native = new RegExp(`^${context(canonical)}$`, "u");
          for (const a of spellings(lo))
            for (const b of spellings(hi)) {
              const cls = context(`${a}-${b}`);
              // The table itself is checked: each spelling is valid and means the same range.
              const spelled = new RegExp(`^${cls}$`, "u");
              for (const cp of [lo, hi, lo - 1, hi + 1, 0x2d, 0x61])
                if (
                  cp >= 0 &&
                  cp <= 0x10ffff &&
                  spelled.test(String.fromCodePoint(cp)) !== native.test(String.fromCodePoint(cp))
                )
                  differ.push(`${cls} on U+${hex(cp, 4)}: not ${context(canonical)}`);
              rows++;
              if (foldOf(cls) !== expected)
                differ.push(`${cls}: ${foldOf(cls)}, ${context(canonical)}: ${expected}`);
            }
        }
      }
    expect(differ).toEqual([]);
    expect(rows).toBeGreaterThan(10_000);
  });

  it("the canonical ranges are charged one unit per 16 case-folding code points, none for a whole span", () => {
    const fold = (lo: number, hi: number) => foldOf(`[\\u{${hex(lo, 1)}}-\\u{${hex(hi, 1)}}]`);
    expect(fold(0x2d, 0x1e942)).toBe(Math.floor((0x1e942 - MIN_FOLD + 1) / 16));
    expect(fold(0x42, 0x1e942)).toBe(Math.floor((0x1e942 - 0x42 + 1) / 16));
    expect(fold(0x4e00, 0x9fff)).toBe(Math.floor((0x9fff - 0x4e00 + 1) / 16));
    expect(fold(0x0, MAX_FOLD)).toBe(0);
    expect(fold(0x0, 0x40)).toBe(0);
    expect(fold(0x1e944, 0x10ffff)).toBe(0);
  });

  it("reads an unescaped - as ECMAScript does: a member at either end of the class, or a range's end", () => {
    const wide = Math.floor((0x1e942 - MIN_FOLD + 1) / 16);
    expect(foldOf("[--\\u{1e942}]")).toBe(wide); // U+002D to U+1E942: it was read as no range
    expect(foldOf(`[--\\u{${hex(0x1e942, 20)}}]`)).toBe(wide);
    expect(foldOf("[a-]")).toBe(0);
    expect(foldOf("[-a]")).toBe(0);
    expect(foldOf("[\\u{41}-]")).toBe(0);
    // [a-b-c]: the range a-b, then - and c as members (not the range b-c).
    expect(foldOf("[\\u{100}-\\u{1100}-\\u{2000}]")).toBe(Math.floor(0x1001 / 16));
    expect(foldOf("[\\u{100}-\\u{101}-\\u{2000}]")).toBe(0);
    // After a range, - starts the next one: [0-9--\u{1e942}] is 0-9 and U+002D to U+1E942.
    expect(foldOf("[0-9--\\u{1e942}]")).toBe(wide);
  });

  it("a range whose ends cannot be read is charged the whole fold span (the estimate runs before the syntax check)", () => {
    const whole = Math.floor((MAX_FOLD - MIN_FOLD + 1) / 16);
    for (const cls of [
      "[\\d-\\u{1e942}]",
      "[\\u{42}-\\w]",
      "[\\uZZZZ-\\u{1e942}]",
      "[\\u{110000}-\\u{1e942}]",
      "[\\u{1e942}-\\u{42}]",
    ])
      expect(foldOf(cls), cls).toBeGreaterThanOrEqual(whole);
  });

  it("4 patterns of (?i:[--\\u{1e942}]) alternations are a 422 before compiling (200 after 17.9 s before)", async () => {
    for (const [unit, count] of [
      [(i: number) => `[--\\u{${hex(0x1e942 - i, 1)}}]`, 1_600],
      [(i: number) => `[\\u{${hex(0x42, 13)}}-\\u{${hex(0x1e942 - i, 13)}}]`, 800],
    ] as const) {
      // As many as the old estimate let into ~4,800 units each (3 and 6 a class): 4 of them
      // were within the schema's 20,000 together.
      const pattern = (p: number) =>
        `(?i:${Array.from({ length: count }, (_, i) => unit(i + count * p)).join("|")})`;
      const patterns = [0, 1, 2, 3].map(pattern);
      for (const p of patterns) expect(patternSize(p)).toBeGreaterThan(MAX_PATTERN_SIZE);
      expect(patternSize(`(?i:${unit(0)})`)).toBeGreaterThan(7_800);
      const before = cachedPatternBytes();
      const res = await postJson(
        "/api/skills/json-schema-validate",
        JSON.stringify({ schema: { allOf: patterns.map((p) => ({ pattern: p })) }, instance: "a" }),
      );
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: unknown; type: string; msg: string }[] };
      expect(body.detail[0]).toMatchObject({
        loc: ["body", "schema", "allOf", 0, "pattern"],
        type: "pattern_unsupported",
      });
      expect(body.detail[0]?.msg).toContain("too large");
      expect(cachedPatternBytes()).toBe(before);
    }
    expect(MAX_SCHEMA_PATTERN_SIZE).toBe(20_000);
  }, 120_000);
});
