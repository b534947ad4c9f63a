import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { extractKeywords } from "../../src/skills/lib/keywords";
import { limitSlug } from "../../src/skills/slugify";
import { diffTexts } from "../../src/skills/text-diff";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const rebuild = (ops: { op: string; value: string }[]) => ({
  a: ops
    .filter((o) => o.op !== "ins")
    .map((o) => o.value)
    .join(""),
  b: ops
    .filter((o) => o.op !== "del")
    .map((o) => o.value)
    .join(""),
});

describe("text_diff", () => {
  it(
    "gives a complete script in each mode, echoing the mode",
    async () => {
      for (const mode of ["char", "word", "line"]) {
        const a = "The cat sat.\nOn the mat.\n";
        const b = "The cat sat.\nOn a hat.\nThe end.\n";
        const res = await postJson("/api/skills/text-diff", { a, b, options: { mode } });
        const body = await res.json<{
          mode: string;
          ops: { op: string; value: string }[];
          inserted: number;
          deleted: number;
          equal: number;
        }>();
        expect(body.mode).toBe(mode);
        expect(rebuild(body.ops)).toEqual({ a, b });
        expect(body.equal + body.deleted).toBe(a.length);
        expect(body.equal + body.inserted).toBe(b.length);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "word mode never splits a word",
    () => {
      const { ops } = diffTexts("alpha beta gamma", "alpha betx gamma", "word");
      expect(ops).toEqual([
        { op: "equal", value: "alpha " },
        { op: "del", value: "beta" },
        { op: "ins", value: "betx" },
        { op: "equal", value: " gamma" },
      ]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "counts characters as code points and never splits a surrogate pair",
    () => {
      const r = diffTexts("a😀b", "a😃b", "char");
      expect(r.deleted).toBe(1);
      expect(r.inserted).toBe(1);
      for (const { value } of r.ops) expect(value.isWellFormed()).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "rejects an unknown mode",
    async () => {
      const res = await postJson("/api/skills/text-diff", { a: "", b: "", options: { mode: "para" } });
      expect((await detailOf(res))[0]).toMatchObject({
        loc: ["body", "options", "mode"],
        type: "literal_error",
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "rebuilds both inputs for any pair of texts, in every mode",
    () => {
      fc.assert(
        fc.property(
          fc.string({ unit: "grapheme-composite", maxLength: 60 }),
          fc.string({ unit: "grapheme-composite", maxLength: 60 }),
          fc.constantFrom("char", "word", "line" as const),
          (a, b, mode) => {
            const r = diffTexts(a, b, mode as "char");
            expect(rebuild(r.ops)).toEqual({ a, b });
            for (let i = 1; i < r.ops.length; i++) expect(r.ops[i]?.op === r.ops[i - 1]?.op).toBe(false);
          },
        ),
        { numRuns: 300, seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "stays complete on 200,000-character unrelated texts (bounded work)",
    () => {
      const rand = (seed: number) => {
        let x = seed;
        let s = "";
        while (s.length < 200_000) {
          x = (x * 1103515245 + 12345) & 0x7fffffff;
          s += String.fromCharCode(97 + (x % 26));
          if (x % 7 === 0) s += " ";
          if (x % 61 === 0) s += ".\n";
        }
        return s.slice(0, 200_000);
      };
      const a = rand(1);
      const b = rand(2);
      const r = diffTexts(a, b, "char");
      expect(rebuild(r.ops)).toEqual({ a, b });
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("keyword_extract", () => {
  it(
    "ranks by count then term, filters stopwords and numbers, honours limit",
    () => {
      const r = extractKeywords("Zebra apple. Apple zebra! The 42 apples and a mango; mango, APPLE.", 3);
      expect(r.keywords).toEqual([
        { term: "apple", count: 3 },
        { term: "mango", count: 2 },
        { term: "zebra", count: 2 },
      ]);
      expect(r.tokens).toBe(12);
      expect(r.unique_terms).toBe(4);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "segments non-Latin scripts",
    () => {
      const r = extractKeywords("Привет мир, привет! Café café naïve", 5);
      expect(r.keywords.slice(0, 2)).toEqual([
        { term: "café", count: 2 },
        { term: "привет", count: 2 },
      ]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "is deterministic and bounded by limit",
    () => {
      fc.assert(
        fc.property(fc.string({ maxLength: 300 }), fc.integer({ min: 1, max: 50 }), (text, limit) => {
          const r = extractKeywords(text, limit);
          expect(r.keywords.length).toBeLessThanOrEqual(limit);
          expect(extractKeywords(text, limit)).toEqual(r);
          for (let i = 1; i < r.keywords.length; i++) {
            const [p, q] = [r.keywords[i - 1], r.keywords[i]];
            if (p && q) expect(p.count > q.count || (p.count === q.count && p.term < q.term)).toBe(true);
          }
        }),
        { seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("slugify", () => {
  const slug = async (text: string, max_len?: number) =>
    await (await postJson("/api/skills/slugify", { text, max_len })).json<{
      slug: string;
      chars: number;
      empty: boolean;
    }>();

  it(
    "transliterates and joins with -",
    async () => {
      expect((await slug("Ærøskøbing – Straße Öl")).slug).toBe("aeroskobing-strasse-oel");
      expect((await slug("  Hello,   World!! ")).slug).toBe("hello-world");
      // Compatibility characters (a PDF's ligatures, Roman numerals, full-width letters) kept.
      expect((await slug("ﬁnancial ﬂow ﬀ report")).slug).toBe("financial-flow-ff-report");
      expect((await slug("Chapter Ⅻ ＡＢＣ")).slug).toBe("chapter-xii-abc");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "cuts at a word boundary within max_len and never ends in -",
    async () => {
      expect((await slug("alpha beta gamma", 12)).slug).toBe("alpha-beta");
      expect((await slug("alphabetagamma", 5)).slug).toBe("alpha");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reports an empty slug",
    async () => {
      expect(await slug("!!! ???")).toEqual({ skill: "slugify", ok: true, slug: "", chars: 0, empty: true });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "always yields [a-z0-9-], no leading/trailing/double dash, within max_len",
    () => {
      fc.assert(
        fc.property(fc.string({ maxLength: 200 }), fc.integer({ min: 1, max: 200 }), (text, max) => {
          const s = limitSlug(
            text
              .toLowerCase()
              .replace(/[^a-z0-9]+/g, "-")
              .replace(/^-|-$/g, ""),
            max,
          );
          expect(s.length).toBeLessThanOrEqual(max);
          expect(s).toMatch(/^(?:[a-z0-9]+(?:-[a-z0-9]+)*)?$/);
        }),
        { seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the endpoint's slugs satisfy the charset and length rules for arbitrary Unicode",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.string({ unit: "grapheme", maxLength: 80 }),
          fc.integer({ min: 1, max: 40 }),
          async (text, max) => {
            const r = await slug(text, max);
            expect(r.slug.length).toBeLessThanOrEqual(max);
            expect(r.slug).toMatch(/^(?:[a-z0-9]+(?:-[a-z0-9]+)*)?$/);
            expect(r.empty).toBe(r.slug === "");
          },
        ),
        { numRuns: 100, seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});
