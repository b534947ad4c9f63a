import { describe, expect, it } from "vitest";
import { countTerms, extractKeywords, foldTerm } from "../../src/skills/lib/keywords";
import { givenKeywords } from "../../src/skills/lib/seo-keywords";
import { postJson } from "../helpers";

/** keyword_extract's answer for `text`, over HTTP as the skill answers. */
async function extractOverHttp(text: string) {
  const res = await postJson("/api/skills/keyword-extract", { text });
  expect(res.status).toBe(200);
  return res.json();
}

describe("keyword_extract folds a capital dotted İ as the i it lowercases to", () => {
  it("counts İstanbul and istanbul as one term, over HTTP as the skill answers", async () => {
    expect(await extractOverHttp("Ökonomie ökonomie İstanbul istanbul")).toMatchObject({
      keywords: [
        { term: "istanbul", count: 2 },
        { term: "ökonomie", count: 2 },
      ],
      unique_terms: 2,
      tokens: 4,
    });
  });

  it("reads İ as i anywhere in a word and in capitals, so a capitalized stopword is still one", () => {
    const r = extractKeywords("İZMİR izmir İzmir. İT is here", 10);
    expect(r.keywords).toEqual([{ term: "izmir", count: 3 }]);
    expect(r.keywords.every(({ term }) => !term.includes("\u0307"))).toBe(true);
  });

  it("keeps other letters' marks: café and cafe stay two terms", () => {
    expect(extractKeywords("Café cafe CAFÉ", 5).keywords).toEqual([
      { term: "café", count: 2 },
      { term: "cafe", count: 1 },
    ]);
  });
});

// The Unicode audit: a decomposed "Cafe\u0301" and a composed "café" were two terms (the answer
// showed "café" twice), and invisible format characters inside a word made five "price" terms.
describe("keyword_extract folds Unicode spellings of one word", () => {
  it("composes: Cafe\u0301 (NFD) and café (NFC) are one term, written composed", async () => {
    const text = "caf\u00e9 Cafe\u0301 caf\u00e9 \u212bngstr\u00f6m A\u030angstro\u0308m";
    expect(await extractOverHttp(text)).toMatchObject({
      keywords: [
        { term: "caf\u00e9", count: 3 },
        { term: "\u00e5ngstr\u00f6m", count: 2 },
      ],
      unique_terms: 2,
    });
  });

  it("drops bidi controls, LRM, ZWJ, ZWNJ, the word joiner, the soft hyphen and a BOM inside a word", () => {
    const text =
      "price \u202aprice\u202c price\u200e \u2066price\u2069 pri\u00adce pr\u200dice p\u200cri\u2060ce \ufeffprice";
    expect(extractKeywords(text, 10).keywords).toEqual([{ term: "price", count: 8 }]);
  });

  it("keeps the zero width space a word boundary, and compatibility forms apart", () => {
    expect(extractKeywords("foo\u200bbar", 10).keywords).toEqual([
      { term: "bar", count: 1 },
      { term: "foo", count: 1 },
    ]);
    expect(extractKeywords("\uff50\uff52\uff49\uff43\uff45 price", 10).unique_terms).toBe(2);
  });
});

describe("a run of combining marks longer than any script stacks", () => {
  // NFC's reordering is quadratic in such a run (alternating classes: 21 s for 100,000 marks), so
  // a run is cut to its first 30 marks (UAX #15's stream-safe bound) before the text is composed.
  it("is folded with its first 30 marks only, the same term however long the run", async () => {
    type Answer = { keywords: { term: string; count: number }[] };
    const short = (await extractOverHttp(`a${"\u0301\u0316".repeat(15)}`)) as Answer;
    const long = (await extractOverHttp(`a${"\u0301\u0316".repeat(500)}`)) as Answer;
    expect(long.keywords).toEqual(short.keywords);
    expect([...(long.keywords[0]?.term ?? "")].length).toBeLessThanOrEqual(31);
  });

  it("keeps a given seo keyword's first 100 characters, folded, however long it was", () => {
    const keyword = `café ${"x".repeat(1_000_000)}`;
    expect(givenKeywords([keyword])).toEqual([`café ${"x".repeat(95)}`]);
  });
});

describe("countTerms folds each distinct written word once", () => {
  it("counts every written form of a term together, terms in the order they first occur, as folding each word does", () => {
    // Folding each word as it was met is the reference; countTerms folds each distinct word once
    // (200,000 characters of CJK are ~200,000 words of ~20,000 distinct).
    const text =
      "Cafe\u0301 café CAFÉ caf\u00e9 İstanbul istanbul ISTANBUL pri\u00adce price \u202aprice\u202c 图书馆 图书馆 " +
      "Ökonomie ökonomie ÖKONOMIE it’s it's";
    const segmenter = new Intl.Segmenter("und", { granularity: "word" });
    const reference = new Map<string, number>();
    let tokens = 0;
    for (const seg of segmenter.segment(text)) {
      if (!seg.isWordLike) continue;
      tokens++;
      const term = foldTerm(seg.segment);
      reference.set(term, (reference.get(term) ?? 0) + 1);
    }
    const { counts, tokens: counted } = countTerms(text);
    expect(counted).toBe(tokens);
    expect([...counts]).toEqual([...reference]);
    expect(counts.get("café")).toBe(4);
    expect(counts.get("istanbul")).toBe(3);
  });
});
