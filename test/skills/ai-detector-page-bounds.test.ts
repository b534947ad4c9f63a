import { describe, expect, it } from "vitest";
import { htmlToText, sourceRead } from "../../src/skills/lib/html-convert";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// ai_detector reads a fetched page (up to 2 MiB) for its first 8,000 characters of text
// (htmlToText with maxChars): the converter builds a DOM of what the prepass lets it read. Markup
// inside the elements both converters drop (scripts, styles, SVG) did not count toward the
// 400,000-character stop, so a page of nothing but them was built whole: 2 MiB of
// `<script>a</script>` made ~233,000 nodes (~58 MB of an isolate's 128 MB) to read no text.
const PAGE = 2 * 1024 * 1024;
const MAX_SOURCE = 400_000;
const fill = (unit: string, room: number) => unit.repeat(Math.floor(room / unit.length));

describe("htmlToText with a stop reads a bounded part of a page of dropped elements", () => {
  it(
    "2 MiB of scripts, of styles, or one <svg> holding the rest of the page",
    () => {
      const pages = {
        scripts: `${fill("<script>a</script>", PAGE)}<p>after</p>`,
        styles: `${fill("<style>a</style>", PAGE)}<p>after</p>`,
        "one svg": `<body><svg>${fill("<a/>", PAGE)}</svg><p>after</p>`,
        "one noscript": `<body><noscript>${fill("<b></b>", PAGE)}</noscript><p>after</p>`,
      };
      for (const [what, page] of Object.entries(pages)) {
        const read = page.slice(0, sourceRead(page, 8000));
        // The part converted (the DOM built) is bounded by the stop: its tags, at least 7
        // characters an element, count toward the 400,000 characters.
        expect(read.length, what).toBeLessThan(MAX_SOURCE * 1.1);
        const elements = read.match(/<[a-z]/g)?.length ?? 0;
        expect(elements, what).toBeLessThan(MAX_SOURCE / 7 + 10);
        expect(htmlToText(page, ["url"], 8000), what).toBe("");
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "scripts before the article within the bound are still read past",
    () => {
      const article = `<p>${"The article's own prose, which the detector should read. ".repeat(20)}</p>`;
      // 20,000 scripts (340,000 characters of their tags): under the stop, so the article is read.
      const page = `<html><head>${"<script>a</script>".repeat(20_000)}</head><body>${article}</body></html>`;
      const text = htmlToText(page, ["url"], 8000);
      expect(text).toBe(htmlToText(page).slice(0, 8000));
      expect(text.startsWith("The article's own prose")).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );
});
