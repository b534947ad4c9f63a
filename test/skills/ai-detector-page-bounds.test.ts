import { describe, expect, it } from "vitest";
import { htmlToText, sourceRead } from "../../src/skills/lib/html-convert";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// ai_detector reads a fetched page (up to 2 MiB) for its first 8,000 characters of text
// (htmlToText with maxChars): the converter builds a DOM of what the prepass lets it read. Markup
// inside the elements both converters drop (scripts, styles, SVG) did not count toward the
// 400,000-character stop, so a page of nothing but them was built whole: 2 MiB of
// `<script>a</script>` made ~233,000 nodes (~58 MB of an isolate's 128 MB) to read no text. Each
// element there counted as its tags alone still left attributes, comments and texts uncounted.
const PAGE = 2 * 1024 * 1024;
// The page's own markup (at most 400,000 characters) and what the nodes inside dropped elements
// cost, together (html-prepass.ts MAX_READ_COST).
const MAX_READ = 500_000;
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
        // characters an element, count toward the budget of what dropped elements hold.
        expect(read.length, what).toBeLessThan(MAX_READ * 1.1);
        const elements = read.match(/<[a-z]/g)?.length ?? 0;
        expect(elements, what).toBeLessThan(MAX_READ / 7 + 10);
        expect(htmlToText(page, ["url"], 8000), what).toBe("");
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "attributes, comments, processing instructions and texts inside them count too",
    () => {
      // Elements counted as their tags alone, and nothing else, left these read whole (2 MiB,
      // a 57–75 MB heap in Node): 26 attributes a tag, or a comment and a text a node each.
      const pages = {
        attributes: `<body><svg>${fill("<g a b c d e f g h i j k l m n o p q r s t u v w x y z/>", PAGE)}</svg>`,
        "comments in an svg": `<body><svg>${fill("<!---->a", PAGE)}</svg>`,
        "comments in the head": `<head>${fill("<!---->a", PAGE)}</head>`,
        "bogus comments": `<body><svg>${fill("<!>a", PAGE)}</svg>`,
        "processing instructions": `<body><svg>${fill("<?x>a", PAGE)}</svg>`,
        cdata: `<body><svg>${fill("<![CDATA[]]>a", PAGE)}</svg>`,
        "entities in a text": `<body><svg><text>${fill("&amp;", PAGE)}</text></svg>`,
        "entities in values": `<body><svg>${fill('<g a="&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;"/>', PAGE)}</svg>`,
        "one tag of 150,000 attributes": `<body><svg><g ${Array.from({ length: 150_000 }, (_, i) => `a${i}`).join(" ")}/></svg>`,
      };
      for (const [what, page] of Object.entries(pages)) {
        expect.soft(sourceRead(page, 8000), what).toBeLessThan(MAX_READ * 1.1);
        expect.soft(htmlToText(page, ["url"], 8000), what).toBe("");
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an indented SVG sprite and a big stylesheet before the article are still read past",
    () => {
      const article = `<p>${"The article's own prose, which the detector should read. ".repeat(20)}</p>`;
      const d =
        "M12 2C6.48 2 2 6.48 2 12s4.48 10 10 10 10-4.48 10-10S17.52 2 12 2zm0 18c-4.41 0-8-3.59-8-8s3.59-8 8-8 8 3.59 8 8-3.59 8-8 8z";
      const symbol = (i: number) =>
        `  <symbol id="icon-${i}" viewBox="0 0 24 24">\n    <path fill="currentColor" d="${d}"/>\n  </symbol>\n`;
      const sprite = `<svg xmlns="http://www.w3.org/2000/svg" style="display:none">\n${Array.from({ length: 3000 }, (_, i) => symbol(i)).join("")}</svg>`;
      const page = `<html><head><style>${".a{color:red}\n".repeat(30_000)}</style></head><body>${sprite}${article}</body></html>`;
      expect(page.length).toBeGreaterThan(900_000);
      const text = htmlToText(page, ["url"], 8000);
      expect(text).toBe(htmlToText(page).slice(0, 8000));
      expect(text.startsWith("The article's own prose")).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "formatted markup before the article (a path a line, indented, a long <select>) is still read past; with the page's own markup, one bound holds",
    () => {
      const article = `<p>${"The article's own prose, which the detector should read. ".repeat(20)}</p>`;
      const pages = {
        "a path a line": `<body><svg>\n${'<path d="M0 0L1 1"/>\n'.repeat(25_000)}</svg>${article}`,
        indented: `<body><svg>\n${'    <path fill="none" stroke="red" d="M0 0L1 1"/>\n'.repeat(15_000)}</svg>${article}`,
        select: `<body><select>\n${"  <option>x</option>\n".repeat(20_000)}</select>${article}`,
      };
      for (const [what, page] of Object.entries(pages)) {
        const text = htmlToText(page, ["url"], 8000);
        expect(text, what).toBe(htmlToText(page).slice(0, 8000));
        expect(text, what).toContain("The article's own prose");
      }
      // A sprite and 400,000 characters of the page's own (textless) markup: read to one bound, not
      // to the sum of two (712 KB, 162,000 elements, a 71 MB heap with two).
      const mixed = `<body><svg>${"<a/>\n".repeat(62_400)}</svg>${"<p> ".repeat(100_000)}`;
      expect(sourceRead(mixed, 8000)).toBeLessThan(MAX_READ * 1.1);
      // Whitespace decoded from entities is no line break of formatted markup: it costs its source.
      for (const entity of ["&#32;", "&nbsp;", "&Tab;", "&#x20;"]) {
        const spaces = `<body><svg><text>${entity.repeat(Math.floor(PAGE / entity.length))}</text></svg>`;
        expect(sourceRead(spaces, 8000), entity).toBeLessThan(MAX_READ * 1.1);
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
