import { describe, expect, it } from "vitest";
import { extractKeywords } from "../../src/skills/lib/keywords";
import { postJson } from "../helpers";

describe("keyword_extract folds a capital dotted İ as the i it lowercases to", () => {
  it("counts İstanbul and istanbul as one term, over HTTP as the skill answers", async () => {
    const res = await postJson("/api/skills/keyword-extract", {
      text: "Ökonomie ökonomie İstanbul istanbul",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
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
