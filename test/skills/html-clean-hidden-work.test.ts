import { describe, expect, it } from "vitest";
import { htmlToMd, htmlToText } from "../../src/skills/lib/html-convert";
import { visibilityWork } from "../../src/skills/lib/text-mode";

/** The elements a page opens: the most children showsAgain can look at, once each. */
const elements = (html: string) => html.match(/<[a-z]/g)?.length ?? 0;

/**
 * Whether a hidden region shows something again is asked at each of its quotes and items: the
 * work must stay one look per element, not one walk of the subtree per level (510 nested hidden
 * quotes over 54,000 elements took 1.5 s through the app, for a 400 KB page).
 */
describe("html_clean text mode looks at a hidden region's elements once", () => {
  it.each([
    [
      "510 nested hidden quotes",
      '<blockquote style="visibility:hidden">'.repeat(510) + "<i></i>".repeat(54_000),
    ],
    [
      "a styled div and 509 quotes",
      '<div style="visibility:hidden">' + "<blockquote>".repeat(509) + "<i></i>".repeat(54_000),
    ],
    [
      "255 nested hidden list items",
      "<ol><li style=visibility:hidden>".repeat(255) + "<i></i>".repeat(55_000),
    ],
  ])("%s", (_, html) => {
    const before = visibilityWork.visits;
    const text = htmlToText(html);
    expect(text.trim()).toBe("");
    expect(visibilityWork.visits - before).toBeGreaterThan(0);
    expect(visibilityWork.visits - before).toBeLessThanOrEqual(elements(html));
  });

  it("and still finds what shows again at the bottom", () => {
    const html = `a${'<blockquote style="visibility:hidden">'.repeat(300)}<b style="visibility:visible">deep</b>${"<i>x</i>".repeat(1000)}`;
    expect(htmlToText(html)).toMatch(/^a\n\n(> )+deep$/);
    expect(htmlToMd(html)).toContain("deep");
  });
});
