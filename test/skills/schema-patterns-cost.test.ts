import { describe, expect, it } from "vitest";
import {
  cachedPatternBytes,
  checkPattern,
  MAX_PATTERN_SIZE,
  MAX_SCHEMA_PATTERN_SIZE,
  patternSize,
} from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

// json_schema_validate's patterns are bounded by what compiling them costs (the native syntax check
// and RE2's parser), counted from their text before either engine reads it, and the programs kept
// across requests by the memory they hold. No test here times anything: costs are counted in units.
const SLOW = 120_000;
/** The cache's bound (schema-patterns.ts MAX_CACHED_BYTES, ~15 MB as docs/LIMITS.md says). */
const CACHE_BYTES = 15_000_000;
/** What one unit costs at most, compiling (docs/LIMITS.md): 20,000 units are about 80 ms. */
const MICROSECONDS_PER_UNIT = 4;

const validate = async (schema: unknown, instance: unknown) => {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  return { status: res.status, body: await res.json() };
};

const expectTooLarge = (
  r: { status: number; body: unknown },
  loc: (string | number)[],
  error = "compiling it costs",
) => {
  expect(r.status).toBe(422);
  const [item] = (r.body as { detail: { loc: unknown; type: string; msg: string; ctx: { error: string } }[] })
    .detail;
  expect(item).toMatchObject({ loc: ["body", "schema", ...loc], type: "pattern_unsupported" });
  expect(item?.msg).toContain("too large");
  expect(item?.ctx.error).toContain(error);
};

describe("a pattern's text is counted, so one long class is not one instruction", () => {
  it("weights a class by its length: short classes stay one, 4 million characters are far past the bound", () => {
    expect(patternSize("[a-z]")).toBe(1);
    expect(patternSize("[a-zA-Z0-9._%+-]")).toBe(2);
    expect(patternSize(`[${"a".repeat(4_000_000)}\u0101]`)).toBeGreaterThan(400_000);
    // Text that is no atom of its own is read once too: leading zeros of \u{…}, a group's name.
    expect(patternSize(`\\u{${"0".repeat(80_000)}41}`)).toBeGreaterThan(MAX_PATTERN_SIZE);
    expect(patternSize(`(?<${"n".repeat(80_000)}>a)`)).toBeGreaterThan(MAX_PATTERN_SIZE);
  });

  it(
    "a 4-million-character class is a 422 before it is compiled or cached (it was 200 and kept ~16 MB)",
    async () => {
      const before = cachedPatternBytes();
      const r = await validate({ type: "string", pattern: `^[${"a".repeat(4_000_000)}\u0101]+$` }, "aaa");
      expectTooLarge(r, ["pattern"]);
      expect(cachedPatternBytes()).toBe(before);
    },
    SLOW,
  );

  it(
    "the compiled-pattern cache stays within its bytes under a flood of the largest distinct patterns",
    () => {
      // Each as long as a pattern may be (a class of ~39,000 characters, ~4,900 units, two-byte
      // text): 140 of them are ~33 MB of entries as the cache counts them, twice what it may hold.
      let most = 0;
      let total = 0;
      for (let i = 0; i < 140; i++) {
        const pattern = `^[${String(i).padStart(4, "0")}${"a".repeat(39_000)}\u0101]+$`;
        expect(patternSize(pattern)).toBeLessThanOrEqual(MAX_PATTERN_SIZE);
        checkPattern(pattern, ["pattern"]);
        total += pattern.length * 6;
        most = Math.max(most, cachedPatternBytes());
      }
      expect(total).toBeGreaterThan(2 * CACHE_BYTES);
      expect(most).toBeGreaterThan(CACHE_BYTES / 2);
      expect(most).toBeLessThanOrEqual(CACHE_BYTES);
    },
    SLOW,
  );
});

describe("what compiling costs is counted by what it really costs, not one unit an atom", () => {
  // Measured in workerd: the worst per occurrence of 500 in a row or in an alternation, the native
  // check and RE2's parse together (schema-patterns.ts has the figures and how they were taken).
  const cjk = Array.from({ length: 4000 }, (_, i) => String.fromCodePoint(0x4e00 + 2 * i)).join("");
  it.each([
    ["\\p{L}", 150, "\\p{L}"],
    ["\\P{L}", 150, "\\P{L}"],
    ["\\p{Alphabetic}", 150, "\\p{Alphabetic}"],
    ["[\\p{L}]", 150, "[\\p{L}]"],
    ["[\\p{L}\\p{N}\\p{M}]", 255, "[\\p{L}\\p{N}\\p{M}]"],
    ["a class of six properties", 510, "[\\p{Lu}\\p{Ll}\\p{Lt}\\p{Lm}\\p{Lo}\\p{Nd}]"],
    ["(?i:\\p{L})", 185, "(?i:\\p{L})"],
    ["(?i:[\\p{L}\\p{N}\\p{M}])", 265, "(?i:[\\p{L}\\p{N}\\p{M}])"],
    ["(?i:[\\u{4e00}-\\u{9fff}])", 4_000, "(?i:[\\u{4e00}-\\u{9fff}])"],
    ["(?i:[\\u{100}-\\u{2000}])", 180, "(?i:[\\u{100}-\\u{2000}])"],
    ["a class of 4,000 distinct CJK", 1_700, `[${cjk}]`],
    ["a class of 40,000 a", 15_000, `[${"a".repeat(40_000)}]`],
    ["\\s", 5, "\\s"],
    ["\\S", 5, "\\S"],
    ["[\\S]", 9, "[\\S]"],
    ["(?i:\\S)", 7, "(?i:\\S)"],
    ["(?i:[\\S])", 12, "(?i:[\\S])"],
  ])("%s (measured up to %i µs) is counted at least that", (_, microseconds, pattern) => {
    expect(patternSize(pattern) * MICROSECONDS_PER_UNIT).toBeGreaterThanOrEqual(microseconds);
  });

  // Cold, in a schema of 4 patterns of one atom in a row filling ~18,800 units (the validator
  // loaded, median of 5 runs in workerd on a loaded 2-core machine): µs per occurrence. The
  // dearest atom accepted before, (?i:\p{L}), took 4.6 µs a unit in the same runs; at one more
  // unit, 4 patterns of \S filling 19,216 took 222 ms where 20,000 units should take 80.
  const REFERENCE_MICROSECONDS_PER_UNIT = 4.6;
  it.each([
    ["\\s", 14.4],
    ["\\S", 26.5],
    ["[\\S]", 31.4],
    ["(?i:\\S)", 20.9],
    ["(?i:[\\s])", 32.4],
    ["(?i:[\\S])", 36.4],
  ])(
    "%s (%f µs cold in a schema of them) is counted no cheaper a unit than (?i:\\p{L})",
    (pattern, microseconds) => {
      expect(patternSize(pattern) * REFERENCE_MICROSECONDS_PER_UNIT).toBeGreaterThanOrEqual(microseconds);
    },
  );

  it("ordinary atoms keep their count; a case-insensitive group is a group (its flags are no atom)", () => {
    for (const [pattern, size] of [
      ["^[a-z0-9_-]{3,16}$", 32], // its class text, 8 characters, is read once,
      ["(?i:a)", 3],
      ["(?i:[a-z])", 4], // a-z is folded code point by code point,
      ["(?:a)", 3],
      ["[\\p{L}]{1000}", 1_050], // the property is read once, the copies are cheap
    ] as const)
      expect(patternSize(pattern), pattern).toBe(size);
  });

  it("is not fooled by an invalid pattern (an unclosed \\p{ or name is read to the end)", () => {
    for (const pattern of ["\\p{L", "[\\p{L", "(?<name", "\\u{12", "(?i:[a-"])
      expect(patternSize(pattern)).toBeGreaterThan(0);
  });

  it(
    "4 patterns of 4,800 [\\p{L}\\p{N}\\p{M}] are a 422 before either engine reads them (4.7 s before)",
    async () => {
      const before = cachedPatternBytes();
      const atom = "[\\p{L}\\p{N}\\p{M}]";
      const properties = Object.fromEntries(
        [0, 1, 2, 3].map((i) => [`p${i}`, { type: "string", pattern: atom.repeat(4800) + i }]),
      );
      expectTooLarge(await validate({ properties }, { p0: "a" }), ["properties", "p0", "pattern"]);
      expect(cachedPatternBytes()).toBe(before);
      // Within one pattern's bound, together past the schema's.
      const parts = {
        allOf: [0, 1, 2, 3, 4].map((i) => ({ pattern: `${atom.repeat(30)}${i}` })),
      };
      const together = await validate(parts, "x");
      expectTooLarge(together, ["allOf", 4, "pattern"], "together");
    },
    SLOW,
  );

  it("the pattern that would take the schema past its total is refused before it is compiled", () => {
    // ~4,000 units, never seen before: it was compiled (and cached) first, then refused.
    const pattern = `${"[\\p{L}\\p{N}\\p{M}]".repeat(26)}crossing`;
    const units = patternSize(pattern);
    expect(units).toBeLessThanOrEqual(MAX_PATTERN_SIZE);
    const before = cachedPatternBytes();
    expect(() => checkPattern(pattern, ["allOf", 4, "pattern"], MAX_SCHEMA_PATTERN_SIZE - units + 1)).toThrow(
      /together cost more than/,
    );
    expect(cachedPatternBytes()).toBe(before);
    // Within the total, it is compiled and counted as before.
    expect(checkPattern(pattern, ["pattern"], MAX_SCHEMA_PATTERN_SIZE - units)).toBe(units);
    expect(cachedPatternBytes()).toBeGreaterThan(before);
  });

  it("a too-large pattern's message names what is counted", async () => {
    const r = await validate({ pattern: "[\\p{L}\\p{N}\\p{M}]".repeat(40) }, "a");
    expectTooLarge(r, ["pattern"]);
    const [item] = (r.body as { detail: { msg: string }[] }).detail;
    expect(item?.msg).toContain("Unicode properties");
    expect(item?.msg).not.toContain("expands counted repetition");
  });

  it(
    "the dearest schema within the budget is accepted, and counted within it",
    async () => {
      // 380 (?i:\p{L}) in alternations (the dearest atom per unit measured, ~2.5 µs in workerd):
      // 4 patterns of 90, about 19,500 units, so compiling it stays within 20,000 × 4 µs = 80 ms.
      const pattern = (i: number) => `^(?:${Array(90).fill("(?i:\\p{L})").join("|")})+${i}$`;
      const patterns = [0, 1, 2, 3].map(pattern);
      const units = patterns.reduce((sum, p) => sum + patternSize(p), 0);
      expect(units).toBeGreaterThan(MAX_SCHEMA_PATTERN_SIZE * 0.9);
      expect(units).toBeLessThanOrEqual(MAX_SCHEMA_PATTERN_SIZE);
      const r = await validate({ allOf: patterns.map((p) => ({ pattern: p })) }, "Ab0");
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ valid: false, checked: true });
    },
    SLOW,
  );

  it(
    "matching is still priced by instructions: a property class on a long string is not charged its reading",
    async () => {
      const r = await validate({ pattern: "^[\\p{L}\\p{M}]+$" }, "é".repeat(500_000));
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ valid: true });
    },
    SLOW,
  );
});
