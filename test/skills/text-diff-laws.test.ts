import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffTexts } from "../../src/skills/text-diff";
import { reportable } from "./reportable";

/**
 * Laws of text_diff's answer, over texts with what breaks naive diffs: astral characters, lone
 * surrogates (JSON allows "\ud800"), CRLF and lone CR, punctuation runs, repeated lines. The
 * rebuild law over grapheme strings is in text.test.ts; these add the counts and the boundaries
 * each mode promises.
 */

type Mode = "char" | "word" | "line";
const MODES: Mode[] = ["char", "word", "line"];

const side = (ops: { op: string; value: string }[], skip: string) =>
  ops.filter((o) => o.op !== skip).map((o) => o.value);

/** Offsets in `text` where one op of its side ends and the next begins. */
function cuts(values: string[]): number[] {
  const at: number[] = [];
  let n = 0;
  for (const v of values.slice(0, -1)) {
    n += v.length;
    at.push(n);
  }
  return at;
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const WORD = /[\p{L}\p{M}\p{N}_]/u;
/** The code point ending just before `i` and the one starting at `i`. */
const around = (s: string, i: number) => {
  const before =
    isLow(s.charCodeAt(i - 1)) && isHigh(s.charCodeAt(i - 2)) ? s.slice(i - 2, i) : s.slice(i - 1, i);
  const cp = s.codePointAt(i) ?? 0;
  return [before, String.fromCodePoint(cp)] as const;
};

const atom = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 4 }) },
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      "a",
      "b",
      "word",
      "mot",
      "é",
      "e\u0301",
      "😀",
      "👍🏽",
      "\ud800",
      "\udc00",
      "\ud83d",
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\r",
      ".",
      "!?",
      "... ",
      "1",
      "_",
      "中文",
      "\u200b",
      "line one\n",
      "line one\r\n",
    ),
  },
);
const text = fc.array(atom, { maxLength: 25 }).map((xs) => xs.join(""));
/** b as an edit of a, so most pairs share a lot (unrelated pairs only test the fallback). */
const pair = fc.oneof(
  fc.tuple(text, text),
  fc.tuple(text, text, text, text).map(([p, x, y, s]) => [p + x + s, p + y + s] as [string, string]),
);

describe("text_diff laws", () => {
  it("rebuilds a and b, counts code points as the ops hold them, and cuts where its mode says", () => {
    fc.assert(
      fc.property(
        pair,
        fc.constantFrom(...MODES),
        reportable(([a, b], mode) => {
          const r = diffTexts(a, b, mode);
          const aSide = side(r.ops, "ins");
          const bSide = side(r.ops, "del");
          expect(aSide.join("")).toBe(a);
          expect(bSide.join("")).toBe(b);
          for (const o of r.ops) expect(o.value).not.toBe("");
          for (let i = 1; i < r.ops.length; i++) expect(r.ops[i]?.op).not.toBe(r.ops[i - 1]?.op);

          // README: counts are code points, and equal+del covers a as equal+ins covers b.
          const points = (o: string) =>
            r.ops.filter((x) => x.op === o).reduce((n, x) => n + [...x.value].length, 0);
          expect([r.inserted, r.deleted, r.equal]).toEqual([points("ins"), points("del"), points("equal")]);
          expect(r.equal + r.deleted).toBe([...a].length);
          expect(r.equal + r.inserted).toBe([...b].length);

          for (const [s, values] of [
            [a, aSide],
            [b, bSide],
          ] as const) {
            for (const i of cuts(values)) {
              // No mode cuts a surrogate pair in two.
              expect(
                isHigh(s.charCodeAt(i - 1)) && isLow(s.charCodeAt(i)),
                `${mode} ${JSON.stringify(s)} @${i}`,
              ).toBe(false);
              if (mode === "line") expect(s[i - 1], `${JSON.stringify(s)} @${i}`).toBe("\n");
              if (mode === "word") {
                const [x, y] = around(s, i);
                expect(WORD.test(x) && WORD.test(y), `${JSON.stringify(s)} @${i}`).toBe(false);
              }
            }
          }
        }),
      ),
      { numRuns: 3000, seed: 11 },
    );
  });
});

// The cost bounds a caller meets (text-diff.ts): a block is aligned while (n + m)² / 2 fits the
// 8,000,000 block cap, i.e. n + m ≤ 4,000 tokens, and the call's 40,000,000 budget runs out after a
// few such blocks; past either bound a block comes back as one delete and one insert. The char
// level reaches these through two paths (code units as they are, or code points encoded when a
// surrogate is present), whose counts must agree.
describe("text_diff cost bounds, char mode", () => {
  const shape = (a: string, b: string) =>
    diffTexts(a, b, "char")
      .ops.map((o) => `${o.op}${[...o.value].length}`)
      .join(",");
  for (const [name, letter] of [
    ["BMP text", "a"],
    ["astral text", "\u{1d400}"],
  ] as const) {
    const x = `${letter}b`.repeat(1000);
    const y = `b${letter}`.repeat(1000);
    it(`${name}: 4,000 code points in all are aligned, 4,001 are one replacement`, () => {
      expect(shape(x, y)).toBe("del1,equal1999,ins1");
      expect(shape(x, `${y}c`)).toBe("del2000,ins2001");
    });
    // Five blocks of 8,000,000 would spend the 40,000,000 budget exactly, but the line, sentence and
    // word levels spend a little first (534 here), so the fifth no longer fits: four are aligned.
    it(`${name}: seven such blocks, the budget aligns the first four and replaces the rest`, () => {
      const lines = (s: string) => Array(7).fill(s).join("\n");
      const aligned = "del1,equal1999,ins1";
      const replaced = "del2000,ins2000";
      expect(shape(lines(x), lines(y))).toBe(
        [aligned, aligned, aligned, aligned, replaced, replaced, replaced].join(",equal1,"),
      );
    });
  }
});
