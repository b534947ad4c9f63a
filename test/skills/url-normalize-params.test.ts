import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isTrackingParam } from "../../src/skills/lib/tracking-params";
import { normalizeUrl } from "../../src/skills/url-normalize";

/** The parameters of `query` as a sorted list of [key, value] pairs (a repeated key once per value). */
const pairsOf = (query: Record<string, string | string[]>) =>
  Object.entries(query)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, x]))
    .sort((a, b) => (`${a}` < `${b}` ? -1 : `${a}` > `${b}` ? 1 : 0));

/** WHATWG's reading of a URL's parameters, tracking ones left out, in the same order. */
const whatwgPairs = (url: string) =>
  [...new URL(url).searchParams]
    .filter(([k]) => !isTrackingParam(k))
    .sort((a, b) => (`${a}` < `${b}` ? -1 : `${a}` > `${b}` ? 1 : 0));

describe("url_normalize reads parameter names as WHATWG does", () => {
  it("keeps a leading ? of a name (another parameter than the name without it)", () => {
    const r = normalizeUrl("https://ex.com/page??id=5");
    expect(r.query).toEqual({ "?id": "5" });
    expect(r.canonical).toBe("https://ex.com/page?%3Fid=5");
    expect(normalizeUrl("https://ex.com/page?id=5").canonical).not.toBe(r.canonical);

    const two = normalizeUrl("https://ex.com/?a=1&?b=2");
    expect(two.query).toEqual({ a: "1", "?b": "2" });
    expect(two.canonical).toBe("https://ex.com/?%3Fb=2&a=1");

    const bare = normalizeUrl("https://ex.com/??");
    expect(bare.query).toEqual({ "?": "" });
    expect(bare.canonical).toBe("https://ex.com/?%3F=");

    // A piece kept as written (escapes that are no UTF-8) keeps its "?" too.
    const raw = normalizeUrl("https://ex.com/??x=%F0%9F");
    expect(raw.canonical).toBe("https://ex.com/??x=%F0%9F");
    expect(Object.keys(raw.query)).toEqual(["?x"]);

    for (const url of [r, two, bare, raw].map((x) => x.canonical)) {
      expect(normalizeUrl(url).canonical).toBe(url);
      expect(normalizeUrl(url).query).toEqual(normalizeUrl(url).query);
    }
  });

  it("gives WHATWG's parameters, tracking ones removed, for random URLs; its canonical URL holds the same", () => {
    const query = fc.array(
      fc.tuple(fc.constantFrom("", "?", "??", "&", "&?", "=", "utm_source="), fc.webQueryParameters()),
      { maxLength: 4 },
    );
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true }), query, (base, extra) => {
        const url = base + (base.includes("?") ? "" : "?") + extra.map(([a, b]) => a + b).join("");
        const r = normalizeUrl(url);
        expect(pairsOf(r.query)).toEqual(whatwgPairs(url));
        expect(whatwgPairs(r.canonical)).toEqual(whatwgPairs(url));
        expect(normalizeUrl(r.canonical).canonical).toBe(r.canonical);
      }),
      { numRuns: 1000, seed: 42 },
    );
  });
});
