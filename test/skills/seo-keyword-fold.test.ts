import { describe, expect, it } from "vitest";
import { audit } from "../../src/skills/lib/seo-audit";

/**
 * seo finds its keywords where the page has them, folded as keyword_extract folds its terms:
 * "İstanbul" (U+0130, whose lowercase is "i" + a combining dot) is the term "istanbul".
 */
const page = `<!doctype html><html lang="tr"><head><title>İstanbul guide</title>
<meta name="description" content="İstanbul in a day"></head>
<body><h1>İstanbul</h1><p>${"İstanbul has ferries and İstanbul has markets. ".repeat(5)}</p></body></html>`;

interface Report {
  keyword: string;
  in_title: boolean;
  in_h1: boolean;
  in_description: boolean;
  body_count: number;
}
const reports = (result: unknown) => (result as { checks: { keywords: Report[] } }).checks.keywords;

describe("seo keywords with a dotted capital I", () => {
  it("an extracted keyword is found in the title, the h1, the description and the body", () => {
    const istanbul = reports(audit(page, "https://example.test/", null)).find(
      (k) => k.keyword === "istanbul",
    );
    expect(istanbul).toMatchObject({ in_title: true, in_h1: true, in_description: true });
    expect(istanbul?.body_count).toBeGreaterThanOrEqual(10);
  });

  it("a given keyword written with İ matches the page written with i, and the other way round", () => {
    const lowered = page.replaceAll("İstanbul", "istanbul");
    const given = reports(audit(lowered, "https://example.test/", ["İstanbul"]))[0];
    expect(given).toMatchObject({ keyword: "istanbul", in_title: true, in_h1: true });
    expect(given?.body_count).toBeGreaterThanOrEqual(10);
  });
});

// The Unicode audit: a page written decomposed ("Cafe\u0301") reported the keyword "café" absent.
describe("seo keywords in other Unicode spellings", () => {
  const cafe = (w: string) => `<!doctype html><html lang="fr"><head><title>${w} guide</title>
<meta name="description" content="${w} in a day"></head>
<body><h1>${w}</h1><p>${`${w} has coffee and ${w} has cake. `.repeat(5)}</p></body></html>`;

  it("a composed keyword is found on a decomposed page, and the other way round", () => {
    for (const [written, given] of [
      ["Cafe\u0301", "caf\u00e9"],
      ["Caf\u00e9", "cafe\u0301"],
    ]) {
      const [report] = reports(audit(cafe(written as string), "https://example.test/", [given as string]));
      expect(report).toMatchObject({
        keyword: "caf\u00e9",
        in_title: true,
        in_h1: true,
        in_description: true,
      });
      expect(report?.body_count).toBe(11); // the h1 and the paragraph's ten
    }
  });

  it("a page or keyword with format characters inside words is read without them", () => {
    const [report] = reports(
      audit(cafe("caf\u00ad\u00e9\u200e"), "https://example.test/", ["\u2066caf\u00e9\u2069"]),
    );
    expect(report).toMatchObject({ keyword: "caf\u00e9", in_title: true, in_h1: true, in_description: true });
    expect(report?.body_count).toBe(11); // the h1 and the paragraph's ten
  });
});
