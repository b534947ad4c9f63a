import { env } from "cloudflare:test";
import fc from "fast-check";
import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { describe, expect, it } from "vitest";
import { pieceCounter } from "../../src/skills/lib/bpe-count";
import { BpeTable } from "../../src/skills/lib/bpe-table";
import { postJson } from "../helpers";

// token_count reads the BPE tables from static assets (scripts/gen-bpe-tables.mjs, through the
// ASSETS binding) instead of gpt-tokenizer's own modules; on any text the counts must be the library's.
const TEXT = [
  "Héllo wörld! The quick brown fox — jumps over 13 lazy dogs. ",
  "日本語のテキストと emoji 🚀🔥, code: `const x = arr.map((v) => v * 2);` ",
  "<|endoftext|> tabs\tand\nnewlines, URLs https://example.com/a?b=c#d ",
].join("\n");

/** Each encoding: token_count's name for it, the library's. */
const BOTH: [string, string][] = [
  ["cl100k", "cl100k_base"],
  ["o200k", "o200k_base"],
];

/** gpt-tokenizer's own count of an encoding, special-token text counted as plain text. */
async function libraryCounter(name: string) {
  const lib =
    name === "cl100k_base"
      ? await import("gpt-tokenizer/encoding/cl100k_base")
      : await import("gpt-tokenizer/encoding/o200k_base");
  const plain = { disallowedSpecial: new Set<string>() };
  return (text: string) => lib.countTokens(text, plain);
}

/** The library's encoding itself: its rank table and its byte lookup. */
async function library(name: string) {
  const lib =
    name === "cl100k_base"
      ? await import("gpt-tokenizer/encoding/cl100k_base")
      : await import("gpt-tokenizer/encoding/o200k_base");
  return (
    lib.default as unknown as {
      bytePairEncodingCoreProcessor: {
        bytePairRankDecoder: (string | number[])[];
        getBpeRankFromBytes(bytes: Uint8Array): number | undefined;
      };
    }
  ).bytePairEncodingCoreProcessor;
}

/** Our table as the Worker's static assets serve it, read as token_count reads it. */
async function ourTable(name: string) {
  const res = await env.ASSETS.fetch(`https://assets.invalid/assets/bpe/${name}.bin`);
  return BpeTable.read(await res.arrayBuffer(), name === "cl100k_base" ? 100_256 : 199_998);
}

/** token_count's counter over our table, without the route (thousands of texts in a test). */
async function ourCounter(encoding: string, name: string) {
  return pieceCounter(
    await ourTable(name),
    encoding === "o200k" ? O200K_TOKEN_SPLIT_REGEX : CL100K_TOKEN_SPLIT_REGEX,
  );
}

/** token_count's answer for the text, through the route. */
async function ourCount(encoding: string, text: string) {
  const res = await postJson("/api/skills/token-count", { text, encoding });
  return (await res.json<{ approx_tokens: number }>()).approx_tokens;
}

describe("token_count tables are gpt-tokenizer's", () => {
  it.each(BOTH)("%s counts like gpt-tokenizer/encoding/%s", { timeout: 60_000 }, async (encoding, name) => {
    const count = await libraryCounter(name);
    for (const text of [TEXT, TEXT.repeat(7), "a"]) {
      expect(await ourCount(encoding, text)).toBe(count(text));
    }
  });
});

describe("token_count's counter counts what gpt-tokenizer counts, on any text", () => {
  // Pieces that exercise the pre-tokenizer's branches: contractions in either case, digit runs,
  // punctuation runs, line ends, Unicode letters and spaces, special-token text, a long piece.
  const PIECES = [
    "the",
    " quick",
    "'s",
    "'LL",
    "'Re",
    "'",
    "123456",
    "7",
    "!!!",
    "...",
    "\n",
    "\r\n",
    "\t",
    "  ",
    "\u00a0",
    "é",
    "Straße",
    "漢字",
    "😀",
    "🚀🔥",
    "<|endoftext|>",
    "<|fim_prefix|>",
    "x".repeat(600),
    "ab".repeat(300),
    "naïve",
    "КИРИЛЛИЦА",
    "ـــ",
    "\u200b",
  ];
  it.each(BOTH)(
    "%s: 300 random texts, counted twice (the second time from remembered pieces)",
    { timeout: 120_000 },
    async (encoding, name) => {
      const count = await libraryCounter(name);
      const texts = fc.sample(
        fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((p) => p.join("")),
        { numRuns: 300, seed: 42 },
      );
      for (let round = 0; round < 2; round++) {
        for (const text of texts) {
          expect(await ourCount(encoding, text), JSON.stringify(text.slice(0, 80))).toBe(count(text));
        }
      }
    },
  );
});

describe("token_count on long runs with no word boundary (one huge BPE piece)", () => {
  // Seeded, so a failure names the same text again.
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pick = (alphabet: string[], n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
  const letters = [..."abcdefghijklmnopqrstuvwxyz"];
  const long = [
    "a".repeat(3000),
    pick(letters, 4000),
    pick(["a", "b"], 2500),
    `${" ".repeat(1999)}x`,
    "😀".repeat(700),
    "漢字".repeat(600),
    pick([..."ACGT"], 3000),
    `prefix ${pick(letters, 1200)} suffix ${"=".repeat(900)}`,
    // White space is the one long piece a BOM (JavaScript's \s) can sit inside.
    `${pick(["\ufeff", "\n", " ", "\t", "\ufeff\n", "\u00a0"], 1500)}x`,
  ];

  it.each(BOTH)(
    "%s: the long-piece merge counts exactly what gpt-tokenizer's own loop counts",
    { timeout: 60_000 },
    async (encoding, name) => {
      const count = await libraryCounter(name);
      for (const text of long) {
        expect(await ourCount(encoding, text), text.slice(0, 20)).toBe(count(text));
      }
    },
  );

  it("400k characters in one piece answer in time (the library's loop took 43 s for 'a', 128 s for emoji, 270 s for CJK)", {
    timeout: 30_000,
  }, async () => {
    for (const text of ["a".repeat(400_000), "😀".repeat(200_000), "漢字".repeat(200_000)]) {
      const res = await postJson("/api/skills/token-count", { text });
      expect(res.status).toBe(200);
      expect((await res.json<{ approx_tokens: number }>()).approx_tokens).toBeGreaterThan(1000);
    }
  });
});

describe("token_count chars and words", () => {
  it("counts code points and runs of non-white-space (Unicode white space included)", async () => {
    const cases: [string, number, number][] = [
      ["", 0, 0],
      ["  a  b\t\nc ", 10, 3],
      // 🚀 is one code point (two UTF-16 units); a lone surrogate counts as one.
      ["🚀 go\ud83d", 5, 2],
      // no-break, ideographic, line-separator and BOM spaces separate words; zero-width space does not.
      ["a\u00a0b\u3000c\u2028d\ufeffe f\u200bg", 13, 6],
    ];
    for (const [text, chars, words] of cases) {
      const res = await postJson("/api/skills/token-count", { text });
      expect(await res.json()).toMatchObject({ chars, words });
    }
  });
});

describe("the binary tables look bytes up as gpt-tokenizer does", () => {
  const BOM = [0xef, 0xbb, 0xbf];
  it.each([
    ["cl100k_base", CL100K_TOKEN_SPLIT_REGEX],
    ["o200k_base", O200K_TOKEN_SPLIT_REGEX],
  ])(
    "%s: every entry's bytes, alone and after a BOM, have the library's rank; every string entry counts as the library counts it",
    { timeout: 120_000 },
    async (name, split) => {
      const core = await library(name);
      const table = await ourTable(name);
      const count = pieceCounter(table, split);
      const libraryCount = await libraryCounter(name);
      const utf8 = new TextEncoder();
      const wrong: string[] = [];
      let single = 0;
      core.bytePairRankDecoder.forEach((entry, rank) => {
        const bytes = typeof entry === "string" ? utf8.encode(entry) : Uint8Array.from(entry);
        // A BOM's bytes in front: the library decodes, drops the BOM and asks for the rest.
        for (const b of [bytes, Uint8Array.from([...BOM, ...bytes])]) {
          const ours = table.rankOf(b, 0, b.length);
          const theirs = core.getBpeRankFromBytes(b);
          if (ours !== theirs) wrong.push(`rank ${rank} [${b.join(",")}]: ${ours} vs ${theirs}`);
        }
        if (typeof entry === "string") {
          const theirs = libraryCount(entry);
          if (theirs === 1) single++;
          if (count(entry) !== theirs)
            wrong.push(`rank ${rank} ${JSON.stringify(entry)} counts ${count(entry)} vs ${theirs}`);
        }
      });
      expect(wrong.slice(0, 10)).toEqual([]);
      // Most tokens are one piece of the pre-tokenizer and count 1 (not a vacuous comparison).
      expect(single).toBeGreaterThan(core.bytePairRankDecoder.length * 0.9);
    },
  );

  it.each(BOTH)(
    "%s: random Unicode, lone surrogates and BOMs included, counts like the library",
    { timeout: 120_000 },
    async (encoding, name) => {
      const count = await libraryCounter(name);
      const ours = await ourCounter(encoding, name);
      // Any UTF-16 unit (lone surrogates too), whole code points, and BOMs around words and lines.
      const unit = fc.oneof(
        fc.string({ unit: "binary", maxLength: 30 }),
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.string({
          unit: fc.constantFrom("\ufeff", "\ud800", "\udfff", "\n", " ", "using", "//", "é", "😀"),
          maxLength: 12,
        }),
      );
      const texts = fc.sample(
        fc.array(unit, { maxLength: 8 }).map((p) => p.join("")),
        { numRuns: 1500, seed: 7 },
      );
      for (const text of texts) expect(ours(text), JSON.stringify(text)).toBe(count(text));
      // And through the route, a sample: what a caller reads.
      for (const text of texts.slice(0, 60))
        expect(await ourCount(encoding, text), JSON.stringify(text)).toBe(count(text));
    },
  );

  it.each(BOTH)(
    "%s: the bench's one-piece inputs, at a size the library's own loop finishes, count like the library",
    { timeout: 120_000 },
    async (encoding, name) => {
      const count = await libraryCounter(name);
      for (const text of [
        "a".repeat(20_000),
        "漢字".repeat(4_000),
        "😀".repeat(3_000),
        "\ufeff".repeat(3_000),
      ]) {
        expect(await ourCount(encoding, text), text.slice(0, 4)).toBe(count(text));
      }
    },
  );
});

describe("the pre-tokenizer's character classes count like the library", () => {
  it.each(BOTH)(
    "%s: Unicode white space, digits of every script, contractions in any case, special-token look-alikes",
    { timeout: 120_000 },
    async (encoding, name) => {
      const count = await libraryCounter(name);
      const ours = await ourCounter(encoding, name);
      // What \s, \p{N}, \p{L}/\p{M} and the contraction branch of the split regexes decide on.
      const of = (...units: string[]) => fc.string({ unit: fc.constantFrom(...units), maxLength: 30 });
      const piece = fc.oneof(
        of(" ", "\t", "\n", "\r", "\r\n", "\u000b", "\f", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff"),
        of("0", "1", "9", "\u0663", "\uff15", "\u216b", "\u00b2", "\u00bd", "\u{1d7ce}"),
        of("A", "a", "É", "ǅ", "ʰ", "ß", "İ", "ﬁ", "\u0301", "\u064b", "_", "-", "."),
        fc.constantFrom(
          "'s",
          "'S",
          "'lL",
          "\u2019s",
          "'VE",
          "'D",
          " 's",
          "'t'",
          "<|endofprompt|>",
          "<|im_start|>",
          "<|endoftext",
        ),
        fc.constantFrom("1".repeat(200), " ".repeat(200), "\n".repeat(100), "ab ".repeat(100)),
      );
      const texts = fc.sample(
        fc.array(piece, { maxLength: 10 }).map((p) => p.join("")),
        { numRuns: 1500, seed: 8 },
      );
      for (const text of texts) expect(ours(text), JSON.stringify(text)).toBe(count(text));
    },
  );
});
