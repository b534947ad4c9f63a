import { afterEach, describe, expect, it, vi } from "vitest";
import { audit } from "../../src/skills/lib/seo-audit";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Crawlers read a page's indexing rules from every robots meta tag and from the X-Robots-Tag
 * response header, and the most restrictive rule applies. The audit read the first meta only.
 */

const PAGE = (metas: string[]) =>
  `<html><head>${metas.map((m) => `<meta name="robots" content="${m}">`).join("")}</head></html>`;

const robotsOf = (html: string, header: string | null = null) => {
  const result = audit(html, "https://a.test/", ["x"], header);
  const advice = result.recommendations.filter((r) => /noindex|nofollow/.test(r));
  return { points: result.score_breakdown.robots, advice, checks: result.checks };
};

describe("seo reads every robots meta tag", () => {
  it("a noindex in the second meta counts", () => {
    const { points, advice, checks } = robotsOf(PAGE(["index, follow", "noindex"]));
    expect(points).toBe(0);
    expect(advice).toEqual([
      'Remove "noindex" from the robots meta tag ("index, follow, noindex") if this page should appear in search results.',
    ]);
    expect(checks.robots).toBe("index, follow, noindex");
  });

  it("a nofollow in a later meta counts, and repeated contents are listed once", () => {
    const { points, checks } = robotsOf(PAGE(["max-snippet:-1", "max-snippet:-1", "NOFOLLOW"]));
    expect(points).toBe(5);
    expect(checks.robots).toBe("max-snippet:-1, nofollow");
  });

  it("no robots meta is null, as before", () => {
    expect(robotsOf("<html><head></head></html>").checks.robots).toBeNull();
  });
});

describe("seo reads the X-Robots-Tag header", () => {
  it.each([
    ["noindex", 0],
    ["NOINDEX, nofollow", 0],
    ["none", 0],
    // Repeated headers arrive joined with ", ".
    ["noarchive, noindex", 0],
    ["max-snippet: 20, noindex", 0],
    ["unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow", 5],
    ["noarchive, max-image-preview: none", 8],
    // Rules for all crawlers before another crawler's name still apply to all.
    ["nofollow, otherbot: noindex", 5],
    // robots: is every crawler, as <meta name="robots"> is.
    ["robots: noindex", 0],
  ])("%j: robots points %d", (header, points) => {
    expect(robotsOf(PAGE([]), header).points).toBe(points);
  });

  it.each(["googlebot: noindex", "otherbot: noindex, nofollow", "googlebot: nofollow, bingbot: none"])(
    "%j is one crawler's rule, left out as a <meta name=googlebot> is",
    (header) => {
      expect(robotsOf(PAGE([]), header)).toMatchObject({ points: 8, advice: [] });
    },
  );

  it("names where the noindex is, the meta and the header each", () => {
    const { points, advice, checks } = robotsOf(PAGE(["nofollow"]), "noindex");
    expect(points).toBe(0);
    expect(advice).toEqual([
      'Remove "noindex" from the X-Robots-Tag header ("noindex") if this page should appear in search results.',
    ]);
    expect(checks).toMatchObject({ robots: "nofollow", x_robots_tag: "noindex" });
    expect(robotsOf(PAGE(["noindex"]), "noindex").advice).toHaveLength(2);
    expect(robotsOf(PAGE([]), "nofollow").advice).toEqual([
      'Remove "nofollow" from the X-Robots-Tag header so search engines follow this page\'s links.',
    ]);
  });
});

describe("seo on a page whose server sends X-Robots-Tag", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it(
    "scores the header's noindex (both values of a repeated header)",
    async () => {
      const path = `/pages/x-robots-${crypto.randomUUID()}.html`;
      const real = globalThis.fetch;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
        const req = new Request(input, init);
        if (req.url !== `${FIXTURE}${path}`) return real(input, init);
        const headers = new Headers({ "content-type": "text/html; charset=utf-8" });
        headers.append("x-robots-tag", "noarchive");
        headers.append("x-robots-tag", "noindex");
        return new Response(PAGE(["index, follow"]), { headers });
      });
      const res = await postJson("/api/skills/seo", { url: `${FIXTURE}${path}`, keywords: ["x"] });
      expect(res.status).toBe(200);
      const body = await res.json<{
        score_breakdown: { robots: number };
        recommendations: string[];
        checks: { robots: string | null; x_robots_tag: string | null };
      }>();
      expect(body.score_breakdown.robots).toBe(0);
      expect(body.checks).toMatchObject({ robots: "index, follow", x_robots_tag: "noarchive, noindex" });
      expect(body.recommendations).toContain(
        'Remove "noindex" from the X-Robots-Tag header ("noarchive, noindex") if this page should appear in search results.',
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});
