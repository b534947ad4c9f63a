import { describe, expect, it } from "vitest";
import { audit } from "../../src/skills/lib/seo-audit";

/** The robots check reads the meta tag's comma-separated directives, each whole. */
const robotsOf = (content: string) => {
  const result = audit(
    `<html><head><meta name="robots" content="${content}"></head></html>`,
    "https://a.test/",
    ["x"],
  );
  const advice = result.recommendations.filter((r) => r.includes("robots meta tag"));
  return { points: result.score_breakdown.robots, advice };
};

describe("seo's robots check", () => {
  it.each([
    "index, follow, max-image-preview:none",
    "max-image-preview:none",
    "max-snippet:-1, max-image-preview: none, max-video-preview:-1",
    "index,follow,unavailable_after: none",
    "noindexer, nonesuch",
    "",
  ])("gives full points to %j: nothing in it says noindex", (content) => {
    expect(robotsOf(content)).toEqual({ points: 8, advice: [] });
  });

  it.each([
    "noindex",
    "NOINDEX, follow",
    "index, follow, none",
    " None ",
    "max-image-preview:large,noindex",
    "noindex nofollow",
  ])("reads %j as noindex", (content) => {
    const { points, advice } = robotsOf(content);
    expect(points).toBe(0);
    expect(advice).toHaveLength(1);
    expect(advice[0]).toMatch(/^Remove "noindex"/);
  });

  it.each(["index, nofollow", "NoFollow", "max-image-preview:none, nofollow"])(
    "reads %j as nofollow only",
    (content) => {
      const { points, advice } = robotsOf(content);
      expect(points).toBe(5);
      expect(advice).toEqual([
        'Remove "nofollow" from the robots meta tag so search engines follow this page\'s links.',
      ]);
    },
  );
});
