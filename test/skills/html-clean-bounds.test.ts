import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { htmlToMd, htmlToText, outputAtLeast, sourceRead } from "../../src/skills/lib/html-convert";
import { MAX_HTML_DEPTH } from "../../src/skills/lib/html-depth";
import { MAX_ATTRIBUTES } from "../../src/skills/lib/html-for-markdown";
import { MAX_PREFIX_NESTING } from "../../src/skills/lib/html-prepass";
import { MAX_OUTPUT_BYTES } from "../../src/skills/lib/output-size";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/** The deepest quote prefix ("> > …") and list indent on any line of a text. */
const deepestQuote = (text: string) =>
  Math.max(0, ...text.split("\n").map((l) => /^(> ?)*/.exec(l)?.[0].length ?? 0));
const deepestIndent = (text: string) =>
  Math.max(0, ...text.split("\n").map((l) => /^ */.exec(l)?.[0].length ?? 0));

describe("html_clean's output is sized before it is built (quotes and lists put a prefix on every line)", () => {
  it(
    "a page whose markdown would pass 8 MB is 422 output_too_large from the prepass's count",
    async () => {
      // 500 quotes deep: ~1,000 characters of "> " on each of 48,000 lines (11 s to build, then refused).
      const html = `${"<blockquote>".repeat(500)}${"<p>x</p>".repeat(48_000)}`.slice(0, 400_000);
      // The refusal comes from the count, which htmlToMd checks before mdream runs.
      expect(outputAtLeast(html, "markdown")).toBeGreaterThan(MAX_OUTPUT_BYTES);
      const res = await postJson("/api/skills/html-clean", { html, mode: "markdown" });
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({ loc: ["body"], type: "output_too_large" });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    `text mode writes quotes and lists nested past ${MAX_PREFIX_NESTING} levels as plain blocks`,
    async () => {
      const text = async (html: string) => {
        const res = await postJson("/api/skills/html-clean", { html });
        expect(res.status).toBe(200);
        return (await res.json<{ output: string }>()).output;
      };
      const quoted = await text(`${"<blockquote>".repeat(100)}<p>a</p><p>b</p>`);
      expect(deepestQuote(quoted)).toBe(2 * MAX_PREFIX_NESTING);
      expect(quoted).toMatch(/a\n(> )+\n(> )+b$/);
      // Items of the lists past the bound: one per line, no marker, no further indent (the first
      // on the line of the markers above it, as html-to-text writes a nested list, and d under c).
      const listed = await text(`${"<ul><li>".repeat(100)}<ul><li>c</li><li>d</li></ul>`);
      const indent = deepestIndent(listed);
      expect(indent).toBeLessThan(3 * MAX_PREFIX_NESTING);
      expect(listed).toMatch(new RegExp(`^ (\\* ){${MAX_PREFIX_NESTING}}c\\n {${indent}}d$`));
      expect(listed.indexOf("c")).toBe(indent);
      // Up to the bound, as before: every level its "> ".
      expect(deepestQuote(await text(`${"<blockquote>".repeat(MAX_PREFIX_NESTING)}<p>a</p>`))).toBe(
        2 * MAX_PREFIX_NESTING,
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the reviewer's text-mode page (500 quotes, 400 KB) is a bounded answer, not an 18 s refusal",
    async () => {
      const html = `${"<blockquote>".repeat(500)}${"<p>x</p>".repeat(48_000)}`.slice(0, 400_000);
      const res = await postJson("/api/skills/html-clean", { html });
      expect(res.status).toBe(200);
      const { output } = await res.json<{ output: string }>();
      expect(output.length).toBeLessThan(MAX_OUTPUT_BYTES);
      expect(deepestQuote(output)).toBe(2 * MAX_PREFIX_NESTING);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the count never passes the real output, in either mode (so no answer that fits is refused)",
    () => {
      const tags = [
        ..."blockquote ul ol li p div section main nav pre code span b a h2 table tr td th font center".split(
          " ",
        ),
        ..."button video dl dd details summary figure figcaption label body html head title script br hr".split(
          " ",
        ),
        ..."img sub q noscript textarea select option".split(" "),
      ];
      const attrs = [
        "",
        "",
        "",
        " hidden",
        " style='display:none'",
        " aria-hidden=true",
        " href='https://a.test'",
      ];
      const texts = [
        "x",
        "ab c",
        " ",
        "\n",
        "x\ny\n",
        "&amp;",
        "&nbsp;",
        "é",
        "\u00ad",
        "<",
        "*",
        "1.",
        "> ",
        "\r\n",
      ];
      const piece = fc.oneof(
        fc.tuple(fc.constantFrom(...tags), fc.constantFrom(...attrs)).map(([tag, attr]) => `<${tag}${attr}>`),
        fc.constantFrom(...tags).map((tag) => `</${tag}>`),
        fc.constantFrom(...texts),
      );
      // Found by the property with a random seed: an <html> or <body> inside a page is inline to
      // html-to-text, and was counted a line break.
      for (const html of ["<blockquote>x<html>x", "<p>x<html>x", "<p>x<body>x"]) {
        expect(outputAtLeast(html, "text"), html).toBeLessThanOrEqual(htmlToText(html).length);
        expect(outputAtLeast(html, "markdown"), html).toBeLessThanOrEqual(htmlToMd(html).length);
      }
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 60 }), (pieces) => {
          const html = pieces.join("");
          expect(outputAtLeast(html, "text"), html).toBeLessThanOrEqual(htmlToText(html).length);
          expect(outputAtLeast(html, "markdown"), html).toBeLessThanOrEqual(htmlToMd(html).length);
        }),
        // A fixed seed: CI runs the same pages every time (other seeds were run while writing it).
        { numRuns: 2000, seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("htmlToText with maxChars (ai_detector's url mode) converts only what it keeps", () => {
  const prose = (n: number) =>
    Array.from({ length: n }, (_, i) => `<p>Sentence ${i} is here, <b>bold</b> &amp; plain.</p>`).join("\n");
  // Past the nesting bound: a prepass that read it would refuse the page (422).
  const tooDeep = "<i>".repeat(MAX_HTML_DEPTH + 10);

  it(
    "stops reading once it has the characters: what follows is never parsed",
    () => {
      const page = `<html><head><title>t</title><style>${"p{}".repeat(1000)}</style></head><body>${prose(400)}`;
      expect(() => htmlToText(page + tooDeep)).toThrow(/nested deeper/);
      const text = htmlToText(page + tooDeep, ["url"], 8000);
      expect(text).toHaveLength(8000);
      // The same first 8,000 characters as the whole page's text.
      expect(text).toBe(htmlToText(page).slice(0, 8000));
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the reviewer's 2 MiB page (150 quotes around 260,000 paragraphs) gives its first 8,000 characters",
    () => {
      const bomb = `<html><body>${"<blockquote>".repeat(150)}${"<p>x</p>".repeat(260_000)}`.slice(
        0,
        2 * 1024 * 1024,
      );
      const text = htmlToText(bomb + tooDeep, ["url"], 8000);
      expect(text).toHaveLength(8000);
      expect(text.startsWith(`${"> ".repeat(MAX_PREFIX_NESTING)}x`)).toBe(true);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "reads at most 400,000 characters of markup outside skipped elements when the text stays short",
    () => {
      // A big inline script first does not count: the text after it is still read.
      const page = `<script>${"x".repeat(600_000)}</script><p>After the script.</p>${"<div></div>".repeat(50_000)}`;
      expect(htmlToText(page + tooDeep, ["url"], 8000)).toBe("After the script.");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "markup inside skipped elements never ends the read: a <head> of inline CSS, an SVG sprite, a <noscript>",
    () => {
      const article = `<p>${"The article's own prose, which the detector should read. ".repeat(20)}</p>`;
      for (const [what, page] of [
        [
          "head",
          `<html><head><style>${".a{color:red}\n".repeat(30_000)}</style><link rel="icon" href="/f.ico"><title>t</title></head><body>${article}</body></html>`,
        ],
        ["svg", `<body><svg>${'<path d="M0 0L1 1"/>'.repeat(25_000)}</svg>${article}`],
        ["noscript", `<body><noscript>${'<img src="/p.gif">'.repeat(25_000)}</noscript>${article}`],
      ] as const) {
        expect(page.length, what).toBeGreaterThan(400_000);
        const text = htmlToText(page, ["url"], 8000);
        expect(text, what).toBe(htmlToText(page).slice(0, 8000));
        expect(text.startsWith("The article's own prose"), what).toBe(true);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an ordered list the kept characters end in is read to its end, so its numbers read as on the whole page",
    () => {
      const items = (n: number) =>
        Array.from({ length: n }, (_, i) => `<li>item${i} ${"z".repeat(100)}</li>`).join("");
      for (const list of [`<ol>${items(12)}</ol>`, `<ol type="I" start="3995">${items(6)}</ol>`]) {
        const page = `<body><p>${"x".repeat(7_500)}</p>${list}<p>${"after ".repeat(100)}</p>`;
        expect(htmlToText(page, ["url"], 8000), list.slice(0, 30)).toBe(htmlToText(page).slice(0, 8000));
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a stop that falls in a list longer than the wait is made all the same: no refusal, no long read",
    () => {
      const quoted = `<ol><li>${"<blockquote>".repeat(31)}<pre>`;
      const pages = {
        // Its whole text would pass 8 MB (a million lines under 31 quotes): the page itself is refused.
        "one text node": `<html><body>${quoted}${"a\n".repeat(1_000_000)}</pre>`,
        "many nodes": `<html><body>${quoted}${"a\n<b></b>".repeat(230_000)}</pre>`,
        // A closing tag with a space or attributes before the long text: the parser's start is
        // inside that tag, which once read the text as an entity and took it whole (5 s).
        "after </b >": `<html><body>${"<blockquote>".repeat(31)}<pre><b>x</b >${"a\n".repeat(1_000_000)}</pre>`,
        "after </b &>": `<html><body>${"<blockquote>".repeat(31)}<pre><b>x</b &>${"a\n".repeat(1_000_000)}</pre>`,
        "after </p\n&x> in a list": `<html><body>${quoted}<p>x</p\n&x>${"a\n".repeat(1_000_000)}</pre>`,
        "after </p\n> in a list": `<html><body>${quoted}<p>x</p\n>${"a\n".repeat(1_000_000)}</pre>`,
        "a long node in a later item": `<html><body><ol><li>${"w ".repeat(8_100)}</li><li>${"<blockquote>".repeat(31)}<pre>${"a\n".repeat(1_000_000)}</pre></blockquote></li></ol>`,
      };
      for (const [what, page] of Object.entries(pages)) {
        // What is converted: the 8,000 characters' source and at most the wait after it.
        expect(sourceRead(page, 8000), what).toBeLessThan(8_000 * 3 + 20_000 + 100);
        const text = htmlToText(page, ["url"], 8000);
        expect(text, what).toHaveLength(8000);
      }
      expect(() => htmlToText(pages["one text node"])).toThrow();
      // A <ul> indents its other children once it has an item: one whose first item comes after the
      // stop is read to it too, within the wait (LIST_WAIT).
      const ul = `<html><body><ul><p>intro</p><p>${"y".repeat(8100)}</p><li>a</li></ul>`;
      expect(htmlToText(ul, ["url"], 8000)).toBe(htmlToText(ul).slice(0, 8000));
      // The cut never falls inside an entity, even one whose text ends like its source (";").
      const head = `<html><body><ol><li>${"<blockquote>".repeat(31)}<pre>${"a\n".repeat(300)}`;
      for (let pad = 19_630; pad < 19_650; pad++) {
        for (const entity of ["&semi;", "&#x3b;", "&amp;"]) {
          for (const before of ["", "<b>x</b >"]) {
            const page = `${head}${"b".repeat(pad)}${before}${entity}zz</pre>`;
            const read = page.slice(0, sourceRead(page, 8000));
            expect(/&[#\w]*$/.test(read), `${pad} ${before}${entity}`).toBe(false);
          }
        }
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "on random pages the early stop gives the whole page's first 8,000 characters",
    () => {
      const pieces = [
        "<p>",
        "</p>",
        "</p >",
        "</p\n>",
        '</div class="x">',
        "<b>",
        "</b >",
        "<ol>",
        "</ol>",
        "<ul>",
        "</ul>",
        "</b &>",
        "</b >&semi;",
        "<li>",
        "<br/>",
        "<!-- c -->",
        "<![CDATA[x]]>",
        "<?pi x?>",
        "&amp;",
        "&semi;",
        "&#59;",
        "&nbsp;",
        "😀",
        "word ",
        "<blockquote>",
        "</blockquote>",
      ];
      const texts = ["x".repeat(700), "a\n".repeat(300), "one two ".repeat(80)];
      const piece = fc.oneof(
        { arbitrary: fc.constantFrom(...pieces), weight: 3 },
        { arbitrary: fc.constantFrom(...texts), weight: 1 },
      );
      fc.assert(
        fc.property(fc.array(piece, { minLength: 60, maxLength: 160 }), (parts) => {
          const page = `<html><body>${parts.join("")}`;
          const whole = htmlToText(page);
          fc.pre(whole.length > 8000);
          expect(htmlToText(page, ["url"], 8000)).toBe(whole.slice(0, 8000));
        }),
        { numRuns: 150, seed: 42 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "stops at a token's edge: never inside a tag, an entity or a character",
    () => {
      for (const tail of [
        "&amp;&lt;tail",
        "😀😀 tail",
        `<a href="https://a.test/${"p".repeat(50)}">link</a> tail`,
      ]) {
        const page = `<body><p>${"a".repeat(7_998)}${tail}</p><p>${"b".repeat(100)}</p>`;
        expect(htmlToText(page, ["url"], 8000), tail).toBe(htmlToText(page).slice(0, 8000));
      }
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("html_clean's markdown keeps an element's first attributes only", () => {
  const attributes = (n: number) => Array.from({ length: n }, (_, i) => `a${i}=x`).join(" ");

  it(
    `attributes past the ${MAX_ATTRIBUTES}th are dropped before mdream (whose filter is quadratic in them)`,
    async () => {
      const md = async (html: string) => {
        const res = await postJson("/api/skills/html-clean", { html, mode: "markdown" });
        expect(res.status).toBe(200);
        return (await res.json<{ output: string }>()).output;
      };
      // The reviewer's page: 40,000 attributes on one element took 925 ms.
      expect(await md(`<div ${attributes(40_000)}>y</div>`)).toBe("y");
      // An href past the bound is gone; one within it stays.
      expect(await md(`<a ${attributes(MAX_ATTRIBUTES)} href="https://a.test/">link</a>`)).toBe("link");
      expect(await md(`<a ${attributes(MAX_ATTRIBUTES - 1)} href="https://a.test/">link</a>`)).toBe(
        "[link](https://a.test/)",
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("html_clean text mode within the nesting bound", () => {
  it(
    `${MAX_HTML_DEPTH - 2} nested hidden="until-found" spans are shown, not a stack overflow`,
    async () => {
      // Each level is walked through an own formatter (about twice a plain span's stack), so the
      // depth bound is what keeps this page within the isolate's stack.
      const depth = MAX_HTML_DEPTH - 2;
      const html = `${'<span hidden="until-found">'.repeat(depth)}a b${"</span>".repeat(depth)}`;
      const res = await postJson("/api/skills/html-clean", { html });
      expect(res.status).toBe(200);
      expect((await res.json<{ output: string }>()).output).toBe("a b");
    },
    SKILL_TEST_TIMEOUT,
  );
});
