import * as commonmark from "commonmark";
import type { ChildNode } from "domhandler";
import fc from "fast-check";
import { DomUtils, parseDocument } from "htmlparser2";
import MarkdownIt from "markdown-it";
import { describe, expect, it } from "vitest";
import { htmlToMd, htmlToText } from "../../src/skills/lib/html-convert";
import { safeForMarkdown } from "../../src/skills/lib/html-for-markdown";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Fidelity: html_clean's Markdown, rendered by a CommonMark renderer, says what the page said (its
 * words, and where they split), and keeps its structure. commonmark.js is the reference; tables
 * are GFM, so pages with tables are rendered by markdown-it. (Safety is markdown-rendered.test.ts.)
 */
const cmReader = new commonmark.Parser();
const cmWriter = new commonmark.HtmlRenderer();
const commonMark = (md: string) => cmWriter.render(cmReader.parse(md));
// Raw HTML on, as buyers render: mdream writes a line break in a table cell as `<br>`.
const gfm = new MarkdownIt({ html: true });
const render = (md: string, tables: boolean) => (tables ? gfm.render(md) : commonMark(md));

/** Where a reader sees a word split: a block's edges and line breaks read as spaces. */
const BREAKS = new Set("p div h1 h2 h3 h4 h5 h6 li ul ol blockquote pre table tr td th br hr".split(" "));
function words(nodes: ChildNode[]): string {
  let out = "";
  for (const n of nodes) {
    if (n.type === "text") out += n.data;
    else if ("children" in n) {
      const split = "name" in n && BREAKS.has(n.name);
      out += `${split ? " " : ""}${words(n.children)}${split ? " " : ""}`;
    } else if ("name" in n && n.name === "br") out += " ";
  }
  return out;
}
/** The text a reader sees in a rendered (or source) HTML document, whitespace normalised. */
const shown = (html: string) => words(parseDocument(html).children).replace(/\s+/g, " ").trim();

const mdOf = (html: string) => htmlToMd(html);
const renderedMd = (html: string) => render(mdOf(html), html.includes("<table"));

// Text that looks like Markdown, entities, whitespace runs, and the inline elements between them.
const PIECES = [
  "*a*",
  "_a_",
  "# a",
  "1. a",
  "7) a",
  "- a",
  "+ a",
  "> a",
  "`a`",
  "[a](b)",
  "![x](y)",
  "[a]: /b",
  "&lt;a&gt;",
  "&lt;http://x.y&gt;",
  "&amp;amp;",
  "&amp;copy;",
  "\\",
  "\\*",
  "|",
  "  ",
  "\t",
  "   ",
  "===",
  "==",
  "--",
  "---",
  "**",
  "~~",
  "a",
  "b c",
  "&lt;",
  "#",
  "1.",
  "*",
  "_",
  "[",
  "]",
  "(",
  ")",
  "!",
  "=",
  "-",
  "&amp;",
  "'",
  '"',
  ":",
  "www.x.com",
  "a@b.co",
  "&nbsp;",
  "<em>x</em>",
  "<b>y</b>",
  "<b> y</b>",
  "<i>z </i>",
  "<i> </i>",
  "<code>k</code>",
  "<code>`</code>",
  '<a href="/u">l</a>',
  '<a href="/p(1) q">m</a>',
  "<br>",
  "<span>s</span>",
];
const IN_LINK = (t: string) => `<p><a href="/q">${t}</a></p>`;
const CONTEXTS: ((t: string) => string)[] = [
  (t) => `<p>${t}</p>`,
  (t) => `<h2>${t}</h2>`,
  (t) => `<ul><li>${t}</li></ul>`,
  (t) => `<ol start="3"><li>${t}</li></ol>`,
  (t) => `<blockquote><p>${t}</p></blockquote>`,
  (t) => `<p>x<br>${t}</p>`,
  (t) => `<p><em>${t}</em></p>`,
  IN_LINK,
  (t) => `<table><tr><th>h</th></tr><tr><td>${t}</td></tr></table>`,
];

describe("html_clean markdown: the rendered text is the page's text", () => {
  it(
    "random inline text that looks like Markdown renders back as that text (fixed seed)",
    () => {
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 6 }),
          fc.constantFrom(...CONTEXTS),
          (pieces, context) => {
            const html = context(pieces.join(""));
            // A link inside a link: htmlparser2 nests it, mdream (as browsers) closes the outer one.
            fc.pre(!(context === IN_LINK && html.includes("<a href", 3)));
            expect(shown(renderedMd(html)), `${html} -> ${JSON.stringify(mdOf(html))}`).toBe(shown(html));
          },
        ),
        { seed: 20261127, numRuns: 1500 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it("a link, a strikethrough or inline code gains no space before it", () => {
    expect(mdOf('<p>foo<a href="/u">bar</a>baz</p>')).toBe("foo[bar](/u)baz");
    expect(shown(renderedMd('<p>"<a href="/u">q</a>", <a href="/v">r</a></p>'))).toBe('"q", r');
    // "!" before a link stays text: the link does not become an image.
    expect(commonMark(mdOf('<p>Wow!<a href="/u">l</a></p>'))).toBe('<p>Wow!<a href="/u">l</a></p>\n');
    expect(commonMark(mdOf('<p>\\!<a href="/u">l</a></p>'))).toBe('<p>\\!<a href="/u">l</a></p>\n');
    expect(mdOf("<p>a<del>b</del>c</p>")).toBe("a~~b~~c");
  });

  it("whitespace and line breaks at the edges of emphasis move out of it", () => {
    expect(commonMark(mdOf("<p>a<b> bold</b>c</p>"))).toBe("<p>a <strong>bold</strong>c</p>\n");
    expect(commonMark(mdOf("<p>a<b>&nbsp;bold</b>c</p>"))).toBe("<p>a\u00a0<strong>bold</strong>c</p>\n");
    expect(commonMark(mdOf("<p>a<b><i> both</i></b></p>"))).toBe("<p>a <em><strong>both</strong></em></p>\n");
    expect(commonMark(mdOf("<p>a<i> </i>c</p>"))).toBe("<p>a c</p>\n");
    expect(commonMark(mdOf("<p><em>a<br></em>b</p>"))).toBe("<p><em>a</em><br />\nb</p>\n");
  });

  it("an inline element holding only whitespace keeps it; emphasis of one kind does not meet itself", () => {
    expect(commonMark(mdOf("<p>a<span> </span>b<small> </small>c<a> </a>d</p>"))).toBe("<p>a b c d</p>\n");
    expect(commonMark(mdOf("<p><b>a</b><strong>b</strong> <i>c</i><em>d</em></p>"))).toBe(
      "<p><strong>ab</strong> <em>cd</em></p>\n",
    );
    expect(commonMark(mdOf("<p><em><em>x</em>y</em></p>"))).toBe("<p><em>xy</em></p>\n");
    expect(commonMark(mdOf("<p><b>a</b><!-- --><b>b</b></p>"))).toBe("<p><strong>ab</strong></p>\n");
    // Through a block, emphasis of the outer's kind is written again: the outer's delimiters sit
    // around the block, where they render as nothing.
    expect(gfm.render(mdOf("<strong><table><tr><td><b>x</b> y</td></tr></table></strong>"))).toContain(
      "<strong>x</strong> y",
    );
    expect(gfm.render(mdOf("<del><h3><s>x</s></h3></del>"))).toContain("<s>x</s>");
    expect(gfm.render(mdOf("<i><ul><li><em>x</em> y</li></ul></i>"))).toContain("<em>x</em> y");
    // Not through a link: "**[**x**](/u)**" would read as neither.
    expect(commonMark(mdOf('<p><b><a href="/u"><b>x</b></a></b></p>'))).toBe(
      '<p><strong><a href="/u">x</a></strong></p>\n',
    );
    expect(mdOf("<p>say<q>hi</q></p>")).toBe('say"hi"');
  });

  it("text that opens a block where mdream missed it stays text", () => {
    // A no-break space before it: mdream decided on escapes, then trimmed the space.
    expect(commonMark(mdOf("<p>&nbsp;+ a</p>"))).toBe("<p>+ a</p>\n");
    // "- --" is a thematic break.
    expect(commonMark(mdOf("<ul><li>--</li></ul>"))).toBe("<ul>\n<li>--</li>\n</ul>\n");
    // After a line break in a list nested in a list, mdream escaped nothing.
    const nested = "<ul><li>a<ul><li>x<br>&gt; q<br>1. b<br>7. c<br># d<br>- e</li></ul></li></ul>";
    const inner = DomUtils.getElementsByTagName("li", parseDocument(commonMark(mdOf(nested))).children)[1];
    expect(inner && DomUtils.getInnerHTML(inner)).toBe("x<br>\n&gt; q<br>\n1. b<br>\n7. c<br>\n# d<br>\n- e");
  });

  it("adjacent inline code stays one code span of the same text", () => {
    expect(commonMark(mdOf("<p><code>a</code><code>b</code>c</p>"))).toBe("<p><code>ab</code>c</p>\n");
    expect(commonMark(mdOf("<p><code>a</code><!-- x --><code>`</code></p>"))).toBe(
      "<p><code>a`</code></p>\n",
    );
    // Also where hoisting made them adjacent: an empty element between them went, two <b> joined.
    expect(commonMark(mdOf("<p><code>a</code><span></span><code>b</code></p>"))).toBe(
      "<p><code>ab</code></p>\n",
    );
    expect(commonMark(mdOf("<p><b><code>a</code></b><b><code>b</code></b></p>"))).toBe(
      "<p><strong><code>ab</code></strong></p>\n",
    );
  });

  it("a line of = or -- after a line break is text, not a setext heading underline", () => {
    for (const line of ["=", "==", "--", "  ====  "]) {
      const html = `<p>title<br>${line}</p>`;
      expect(commonMark(mdOf(html)), html).toBe(`<p>title<br />\n${line.trim()}</p>\n`);
    }
    expect(commonMark(mdOf("<ul><li>a<br>==</li></ul>"))).toBe("<ul>\n<li>a<br />\n==</li>\n</ul>\n");
    // A code block keeps such lines as they are.
    expect(mdOf("<pre>a  \n==</pre>")).toBe("```\na  \n==\n```");
  });

  it("mdream's own blocks after a line break in an item or a quote stay blocks", () => {
    // Only the page's text after a <br> is escaped: a fence, a heading or a quote mdream writes
    // there is its own (escaped, the code came out as Markdown).
    expect(commonMark(mdOf("<ul><li>a<br><pre>x</pre></li></ul>"))).toBe(
      "<ul>\n<li>a\n<pre><code>x\n</code></pre>\n</li>\n</ul>\n",
    );
    expect(commonMark(mdOf("<ul><li>a<br><h3>h</h3></li></ul>"))).toBe(
      "<ul>\n<li>a\n<h3>h</h3>\n</li>\n</ul>\n",
    );
    expect(commonMark(mdOf("<blockquote>a<br><blockquote>b</blockquote></blockquote>"))).toBe(
      "<blockquote>\n<p>a</p>\n<blockquote>\n<p>b</p>\n</blockquote>\n</blockquote>\n",
    );
    // The page's own text there is still escaped, inside inline elements too.
    expect(commonMark(mdOf("<p>a<br><span> - x</span></p>"))).toBe("<p>a<br />\n- x</p>\n");
    expect(commonMark(mdOf("<blockquote><p>a<br>&gt; b</p></blockquote>"))).toBe(
      "<blockquote>\n<p>a<br />\n&gt; b</p>\n</blockquote>\n",
    );
  });

  it("a private-use character the page spells as an entity is the page's text, not a mark", () => {
    for (const c of ["&#xE000;", "&#xE001;", "&#57344;"]) {
      const html = `<p>&lt;${c}http://evil.example/&gt; <a href="/u">l</a></p>`;
      const out = commonMark(mdOf(html));
      expect(out, html).not.toContain("evil.example/</a>");
      expect(shown(out), html).toBe(shown(html));
    }
  });

  it("a <pre> keeps the indentation of the inline elements in it; a rule in an item stays a rule", () => {
    expect(mdOf('<pre><span class="k">  a</span>\n<span class="k">  b</span></pre>')).toBe(
      "```\n  a\n  b\n```",
    );
    expect(commonMark(mdOf("<ul><li><hr></li></ul>"))).toBe("<ul>\n<li>\n<hr />\n</li>\n</ul>\n");
  });
});

describe("html_clean markdown: structure survives rendering", () => {
  const doc = (html: string) => parseDocument(renderedMd(html));
  const all = (html: string, name: string) => DomUtils.getElementsByTagName(name, doc(html).children);

  it("headings keep their level", () => {
    const html = "<h1>a</h1><h2>b</h2><h3>c</h3><h4>d</h4><h5>e</h5><h6>f</h6>";
    for (const [i, name] of ["h1", "h2", "h3", "h4", "h5", "h6"].entries())
      expect(all(html, name).map((h) => DomUtils.textContent(h))).toEqual(["abcdef"[i]]);
  });

  it("links keep their target: absolute, relative, with spaces or parentheses", () => {
    const hrefs = [
      "https://x.com/a?b=1&c=2#d",
      "/rel/path",
      "../up",
      "/with space",
      "/p(1)",
      "/a)b",
      "mailto:a@b.co",
    ];
    const html = `<p>${hrefs.map((h, i) => `<a href="${h}">l${i}</a>`).join(" ")}</p>`;
    const got = all(html, "a").map((a) => decodeURI(a.attribs.href as string));
    expect(got).toEqual(hrefs);
  });

  it("emphasis and strong, inline code with backticks, code blocks with fences", () => {
    expect(all("<p><em>e</em> <strong>s</strong></p>", "em").map((e) => DomUtils.textContent(e))).toEqual([
      "e",
    ]);
    expect(all("<p><em>e</em> <strong>s</strong></p>", "strong").map((e) => DomUtils.textContent(e))).toEqual(
      ["s"],
    );
    expect(all("<p><code>a`b``c</code></p>", "code").map((e) => DomUtils.textContent(e))).toEqual(["a`b``c"]);
    const code = "x\n```\ny\n~~~\n````";
    const pre = all(`<pre><code>${code}</code></pre>`, "code").map((e) => DomUtils.textContent(e));
    expect(pre).toEqual([`${code}\n`]);
  });

  it("nested lists keep their nesting, ordered lists their start", () => {
    const html =
      '<ol start="4"><li>a<ol start="7"><li>b</li><li>c</li></ol></li><li>d</li></ol><ul><li>x<ul><li>y<ol><li>z</li></ol></li></ul></li></ul>';
    const lists = all(html, "ol").map((ol) => [
      ol.attribs.start ?? "1",
      ol.parent && "name" in ol.parent ? ol.parent.name : "",
    ]);
    expect(lists).toEqual(
      [
        ["4", "root"],
        ["7", "li"],
        ["1", "li"],
      ].map(([s, p]) => [s, p === "root" ? "" : p]),
    );
    expect(all(html, "li").map((li) => DomUtils.textContent(li).replace(/\s+/g, ""))).toEqual([
      "abc",
      "b",
      "c",
      "d",
      "xyz",
      "yz",
      "z",
    ]);
    const quoted = `<blockquote>${html}</blockquote>`;
    expect(all(quoted, "ol").map((ol) => ol.attribs.start ?? "1")).toEqual(["4", "7", "1"]);
  });

  it("only a page that numbers a list itself pays the renderer's read of the answer", () => {
    // The read (markdown-it over the whole answer) is what mends a nested list starting past 1;
    // a form's value= numbers nothing, and a page with a form and a list must not pay for it.
    const list = "<ol><li>a</li><li>b</li></ol>";
    for (const page of [
      list,
      `${list}<input value="q">`,
      `${list}<select><option value="1">x</option></select>`,
    ])
      expect(safeForMarkdown(page).numbered, page).toBe(false);
    for (const page of [
      '<ol start="3"><li>a</li></ol>',
      "<ol reversed><li>a</li></ol>",
      '<ol><li value="5">a</li></ol>',
    ])
      expect(safeForMarkdown(page).numbered, page).toBe(true);
  });

  it("tables keep their cells, pipes and backslashes in them included", () => {
    const html = "<table><tr><th>a|b</th><th>c</th></tr><tr><td>1\\|2</td><td>x<br>y</td></tr></table>";
    const cells = [...all(html, "th"), ...all(html, "td")].map((c) => DomUtils.textContent(c));
    expect(cells).toEqual(["a|b", "c", "1\\|2", "xy"]);
    expect(all(html, "br")).toHaveLength(1);
  });

  it("images keep their source and alt text; line breaks stay line breaks", () => {
    const imgs = all('<p><img src="/i.png" alt="alt text"> <img src="/j b.png"></p>', "img");
    expect(imgs.map((i) => [decodeURI(i.attribs.src as string), i.attribs.alt])).toEqual([
      ["/i.png", "alt text"],
      ["/j b.png", ""],
    ]);
    expect(all("<p>a<br>b<br>c</p>", "br")).toHaveLength(2);
  });
});

describe("html_clean text mode says what the page said", () => {
  it("entities are decoded once", () => {
    expect(htmlToText("<p>&amp;lt; &amp;amp; &#38;#65; &lt;b&gt;</p>")).toBe("&lt; &amp; &#65; <b>");
  });

  it("inline elements join words, blocks split them", () => {
    expect(htmlToText("a<b>b</b>c")).toBe("abc");
    expect(htmlToText("<span>a</span><span>b</span>")).toBe("ab");
    expect(htmlToText("<p>a<i> </i>c</p>")).toBe("a c");
    expect(htmlToText("<div>a</div><div>b</div>")).toBe("a\nb");
    expect(htmlToText("x<div>y</div>z")).toBe("x\ny\nz");
    expect(htmlToText("<p>a</p><p>b</p>")).toBe("a\n\nb");
    expect(htmlToText("a<br>b")).toBe("a\nb");
  });

  it(
    "whitespace collapses as a browser's innerText collapses it in ordinary blocks (fixed seed)",
    () => {
      const piece = fc.constantFrom(
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "a",
        "bc",
        "a&nbsp;b",
        "<b>x</b>",
        "<i> y </i>",
        "<span> </span>",
      );
      fc.assert(
        fc.property(fc.array(piece, { minLength: 1, maxLength: 8 }), (pieces) => {
          const html = `<p>${pieces.join("")}</p>`;
          const text = DomUtils.textContent(parseDocument(html));
          const expected = text.replace(/[ \t\n\r\f]+/g, " ").replace(/^ | $/g, "");
          expect(htmlToText(html), JSON.stringify(html)).toBe(expected);
        }),
        { seed: 7, numRuns: 500 },
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});
