import { describe, expect, it, vi } from "vitest";
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from "../../src/http/json-text";
import { audit, MAX_JSON_LD_TYPES } from "../../src/skills/lib/seo-audit";

/**
 * JSON-LD blocks get the bound every JSON body has (scanJson): a page's blocks together hold at
 * most MAX_JSON_CONTAINERS arrays and objects, nested MAX_JSON_DEPTH levels at most. A block past
 * it is not parsed and counts as invalid, with its own advice.
 */
const page = (...blocks: string[]) =>
  `<html><head>${blocks.map((b) => `<script type="application/ld+json">${b}</script>`).join("")}</head></html>`;
/** A JSON-LD array of `n` containers: itself and n - 1 objects, each of a type of its own. */
const array = (n: number) => `[${Array.from({ length: n - 1 }, (_, i) => `{"@type":"T${i}"}`).join(",")}]`;
const structured = (html: string) => {
  const result = audit(html, "https://a.test/", ["x"]);
  return {
    ...result.checks.structured_data,
    types: result.checks.structured_data.types.length,
    points: result.score_breakdown.structured_data,
    advice: result.recommendations.filter((r) => r.includes("JSON-LD")),
  };
};
const shrink = (n: number) =>
  `Shrink ${n} JSON-LD block(s): this audit reads 500,000 arrays and objects of a page's JSON-LD at most, nested 200 levels at most, and did not read them.`;

describe("seo's JSON-LD blocks are bounded as every JSON body is", () => {
  it("2 MiB of `[{},{},…]` in one block is not parsed: an unread block, with advice to shrink it", () => {
    const big = `[${"{},".repeat(700_000)}{}]`;
    expect(big.length).toBeGreaterThan(2_000_000);
    const parse = vi.spyOn(JSON, "parse");
    try {
      expect(structured(page(big, '{"@type":"Article"}'))).toEqual({
        json_ld_blocks: 2,
        invalid_json_ld: 1,
        types: 1,
        microdata_items: 0,
        points: 5,
        advice: [shrink(1)],
      });
      expect(parse.mock.calls.some(([text]) => text === big)).toBe(false);
    } finally {
      parse.mockRestore();
    }
  });

  it("a block at the bound is read; the page's blocks share it", () => {
    expect(structured(page(array(MAX_JSON_CONTAINERS)))).toMatchObject({
      invalid_json_ld: 0,
      types: MAX_JSON_LD_TYPES,
      points: 5,
      advice: [],
    });
    // Two halves and one more: the third block would take the page past the bound.
    const half = array(MAX_JSON_CONTAINERS / 2);
    expect(structured(page(half, half, "{}"))).toMatchObject({
      json_ld_blocks: 3,
      invalid_json_ld: 1,
      types: MAX_JSON_LD_TYPES,
      points: 5,
      advice: [shrink(1)],
    });
  });

  it("a block nested deeper than the bound is not parsed; invalid JSON keeps its own advice", () => {
    const deep = `${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`;
    const fine = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    expect(structured(page(deep, fine, "{nope"))).toMatchObject({
      json_ld_blocks: 3,
      invalid_json_ld: 2,
      points: 5,
      advice: ["Fix 1 JSON-LD block(s) that are not valid JSON; search engines ignore them.", shrink(1)],
    });
    expect(structured(page(deep))).toMatchObject({ invalid_json_ld: 1, points: 0, advice: [shrink(1)] });
  });

  it("lists each type once, the first 50 distinct: a page naming 140,000 is not an answer of 140,000 lines", () => {
    const result = audit(
      page(array(140_000), '[{"@type":"Article"},{"@type":"Article"}]'),
      "https://a.test/",
      null,
    );
    const { types } = result.checks.structured_data;
    expect(types).toHaveLength(MAX_JSON_LD_TYPES);
    expect(types.slice(0, 3)).toEqual(["T0", "T1", "T2"]);
    const repeated = audit(
      page('[{"@type":"Article"},{"@type":["Article","NewsArticle"]}]'),
      "https://a.test/",
      null,
    );
    expect(repeated.checks.structured_data.types).toEqual(["Article", "NewsArticle"]);
  });
});
