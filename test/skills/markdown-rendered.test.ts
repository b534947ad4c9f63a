import * as commonmark from "commonmark";
import fc from "fast-check";
import { DomUtils, parseDocument } from "htmlparser2";
import MarkdownIt from "markdown-it";
import { marked } from "marked";
import { describe, expect, it } from "vitest";
import { htmlToMd } from "../../src/skills/lib/html-convert";
import { inertForRenderers } from "../../src/skills/lib/markdown-safety";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * html_clean promises that nothing script-capable reaches its Markdown. Buyers render it with
 * whatever they have, raw HTML on: so the output of hostile pages is rendered here by three real
 * renderers (commonmark.js, markdown-it with html on and its own link filter off, marked) and the
 * rendered HTML is searched for anything a browser would run.
 */
const reader = new commonmark.Parser();
const writer = new commonmark.HtmlRenderer();
const markdownIt = new MarkdownIt({ html: true });
// Its default filter drops javascript: links itself; what is tested is our output, not its rescue.
markdownIt.validateLink = () => true;
const RENDERERS: Record<string, (md: string) => string> = {
  "commonmark.js": (md) => writer.render(reader.parse(md)),
  "markdown-it": (md) => markdownIt.render(md),
  marked: (md) => marked.parse(md, { async: false }),
};

const RUNNING_ELEMENTS = new Set([
  "script",
  "iframe",
  "frame",
  "object",
  "embed",
  "applet",
  "svg",
  "math",
  "base",
  "meta",
  "link",
  "form",
  "style",
  "template",
]);
const URL_ATTRIBUTES = ["href", "src", "action", "formaction", "data", "poster", "xlink:href", "background"];
const scriptScheme = (url: string) =>
  /^(javascript|vbscript|data):/i.test(url.replace(/[\t\n\r]/g, "").replace(/^[\0-\x20]+/, ""));

/** What in this rendered HTML a browser would run: an element, a handler, a script URL. */
function live(html: string): string[] {
  const found: string[] = [];
  for (const el of DomUtils.findAll(() => true, parseDocument(html).children)) {
    if (RUNNING_ELEMENTS.has(el.name)) found.push(`<${el.name}>`);
    for (const [name, value] of Object.entries(el.attribs)) {
      if (/^on/i.test(name) || name === "srcdoc") found.push(`${el.name} ${name}`);
      if (URL_ATTRIBUTES.includes(name) && scriptScheme(value)) found.push(`${el.name} ${name}=${value}`);
    }
  }
  return found;
}

async function markdownOf(html: string): Promise<string> {
  const res = await postJson("/api/skills/html-clean", { html, mode: "markdown" });
  expect(res.status, html).toBe(200);
  return (await res.json<{ output: string }>()).output;
}

async function expectInert(html: string) {
  const md = await markdownOf(html);
  for (const [name, render] of Object.entries(RENDERERS)) {
    expect(live(render(md)), `${name} rendering ${JSON.stringify(md)} of ${JSON.stringify(html)}`).toEqual(
      [],
    );
  }
  return md;
}

const PAYLOADS = [
  "&lt;img src=x onerror=alert(1)&gt;",
  "&lt;svg onload=alert(1)&gt;",
  "&lt;javascript:alert(1)&gt;",
  "[r]: javascript:alert(1)\n\n[r]",
  '&lt;a href="https://a.test/" title="t\n\n&lt;img src=x onerror=alert(1)&gt;"&gt;a&lt;/a&gt;',
  '&lt;a href="x\n\n[r]: javascript:alert(1)\n\n[r]"&gt;a&lt;/a&gt;',
  "&lt;b&gt;&lt;pre&gt;&amp;lt;img src=x onerror=alert(1)&amp;gt;&lt;/pre&gt;&lt;/b&gt;",
];

describe("html_clean markdown, rendered", () => {
  it("the sanity check itself sees a live handler and a script link", () => {
    for (const render of Object.values(RENDERERS)) {
      expect(live(render("a <img src=x onerror=alert(1)>"))).toEqual(["img onerror"]);
      expect(live(render("[a](javascript:alert(1))"))).toEqual(["a href=javascript:alert(1)"]);
    }
  });

  it(
    "a '<' that ends one text node and the text after it do not make a tag or an autolink",
    async () => {
      for (const html of [
        "<p>a &lt;<span>img src=x onerror=alert(1)&gt;</span></p>",
        "<p>&lt;<i></i>svg onload=alert(1)&gt;</p>",
        "<p>&lt;<b></b>javascript:alert(1)&gt;</p>",
        "<p>&lt;<span>javascript:alert(1)</span>&gt;</p>",
        '<div>&lt;<span></span>iframe srcdoc="&amp;lt;script&amp;gt;alert(1)&amp;lt;/script&amp;gt;"&gt;</div>',
      ])
        await expectInert(html);
      // The '<' is still there for a reader, as a character reference where a tag could start.
      expect(await markdownOf("<p>a &lt;<span>img</span></p>")).toBe("a &lt;img");
      expect(await markdownOf("<p>&lt;<code>div</code>&gt;</p>")).toBe("<`div`>");
      expect(await markdownOf("<p>\ue000 &lt;<span>img</span></p>")).toBe("\ue000 &lt;img");
      // Inside a text node mdream escapes it itself; that stays as it was.
      expect(await markdownOf("<p>a &lt;b and c</p>")).toBe("a \\<b and c");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "elements whose text HTML writes back unescaped do not carry entity-spelled HTML past the safety pass",
    async () => {
      for (const tag of [
        "noscript",
        "iframe",
        "noembed",
        "noframes",
        "plaintext",
        "style/",
        "xmp/",
        "script/",
      ]) {
        const close = tag.endsWith("/") ? tag.slice(0, -1) : tag;
        for (const payload of PAYLOADS) {
          const md = await expectInert(`<p>a</p><${tag}>&lt;/${close}&gt;${payload}</${close}><p>b</p>`);
          expect(md, tag).toMatch(/^a/);
        }
      }
    },
    SKILL_TEST_TIMEOUT * 4,
  );

  it(
    "a <pre> in an element mdream writes as raw HTML or as emphasis becomes inline code",
    async () => {
      for (const [open, close] of [
        ["<address>", "</address>"],
        ["<dl><dt>", "</dt></dl>"],
        ["<dl><dd>", "</dd></dl>"],
        ["<figure><figcaption>", "</figcaption></figure>"],
        ["<details><summary>", "</summary></details>"],
        ["<details>", "</details>"],
        ["<table><tr><td>", "</td></tr></table>"],
        ["<table><caption>", "</caption></table>"],
        ["<ul><li>", "</li></ul>"],
        ["<blockquote>", "</blockquote>"],
        ["<center>", "</center>"],
        ["<fieldset>", "</fieldset>"],
        ["<hgroup>", "</hgroup>"],
      ]) {
        for (const payload of PAYLOADS) await expectInert(`${open}<pre>a\n\n${payload}</pre>${close}`);
      }
    },
    SKILL_TEST_TIMEOUT * 4,
  );

  it(
    "elements mdream writes as raw HTML (where a backslash escapes nothing) are written as Markdown text",
    async () => {
      for (const html of [
        "<address>a</address>&lt;img src=x onerror=alert(1)&gt;",
        "<dl><dt>a</dt></dl>&lt;img src=x onerror=alert(1)&gt;",
        '<dl><dt><img src="u" alt="&lt;img src=x onerror=alert(1)&gt;"></dt></dl>',
        "<p><sup><br>&lt;img src=x onerror=alert(1)&gt;</sup></p>",
        "<p><u><br>&lt;img src=x onerror=alert(1)&gt;</u></p>",
        "<ul><li><mark><br>&lt;img src=x onerror=alert(1)&gt;</mark></li></ul>",
        "<td><ul><li>&lt;img src=x onerror=alert(1)&gt;</li></ul></td>",
        "<td><h1>&lt;img src=x onerror=alert(1)&gt;</h1></td>",
        "<th><table><p><p>&lt;img src=x onerror=alert(1)&gt;</p></p></table></th>",
        "<p><kbd><code>&lt;img src=x onerror=alert(1)&gt;</code>a</kbd></p>",
        "<p><kbd>a<code>&lt;img src=x onerror=alert(1)&gt;</code></kbd></p>",
        "<p><kbd><pre>&lt;img src=x onerror=alert(1)&gt;</pre>a</kbd></p>",
        "<p><code>``</code><code>&lt;img src=x onerror=alert(1)&gt;</code></p>",
        // A carriage return in a <pre> is a line end to a renderer: "\r```\r" ended mdream's fence.
        "<pre>| x\r```\r\r&lt;br&gt;\r\\&lt;img src=x onerror=alert(1)&gt;</pre>",
        "<pre>| x&#13;```&#13;&#13;&lt;br&gt;&#13;\\&lt;img src=x onerror=alert(1)&gt;</pre>",
        // A <pre> inside a kept <pre> is inline code: a second fence would end the first early.
        "<pre><pre>x</pre>\n| h | h2 |\n| --- | --- |\n| `a\\\\|&lt;img src=x onerror=alert(1)&gt;` | b |\n</pre>",
        "<pre><code>x<pre>y</pre>\na | b\n--- | ---\n`c\\\\|&lt;img src=x onerror=alert(1)&gt;`\n</code></pre>",
        // marked splits a table cell at a pipe after an even run of backslashes, even in code.
        "<table><tr><th>h</th><th>h2</th></tr><tr><td><code>a\\|&lt;img src=x onerror=alert(1)&gt;</code></td><td>b</td></tr></table>",
        "<p>a | b<br>--- | ---<br><code>c\\\\|&lt;img src=x onerror=alert(1)&gt;</code></p>",
      ])
        await expectInert(html);
      // A code block holding a <pre> stays one block.
      expect(
        await markdownOf("<pre><pre>$ make</pre>\n#include &lt;stdio.h&gt;\nint *p = *q;\n</pre>"),
      ).toMatch(/^```\n[^`]*#include <stdio.h>\nint \*p = \*q;\n+```$/);
      // What they held is still there to read; a table's own line breaks stay.
      expect(await markdownOf("<dl><dt>Term</dt><dd>Meaning</dd></dl>")).toMatch(/Term\s+Meaning/);
      expect(await markdownOf("<p>H<sub>2</sub>O</p>")).toBe("H2O");
      const table = await markdownOf(
        "<table><tr><th>a</th></tr><tr><td>x<br>y<ul><li>one</li><li>two</li></ul></td></tr></table>",
      );
      expect(table).toContain("x<br>y");
      expect(table).toMatch(/one\s+two/);
      expect(table).not.toMatch(/<(ul|li)>/);
    },
    SKILL_TEST_TIMEOUT,
  );

  it("the last check makes anything a renderer would run inert, and leaves the rest as it was", () => {
    for (const md of [
      "<dl><dt>a</dt>\n</dl>\\<img src=x onerror=alert(1)>",
      "``<img src=x onerror=alert(1)>`a`",
      "<p>\n[x](javascript:alert(1))",
      "a <javascript:alert(1)>",
      "[x](&#106;avascript:alert(1)) <b>",
      // A <br> alone on a line opens an HTML block, where the backslash escapes nothing.
      "| a |\n| --- |\n| x<br>y |\n\n<br>\n\\<img src=x onerror=alert(1)>",
      "<BR/>\n\\<img src=x onerror=alert(1)>",
      // A bare carriage return ends a line for every renderer.
      "| a |\r\r<br>\r\\<img src=x onerror=alert(1)>",
      // An escaped backslash before it: the "<" itself is not escaped.
      "a \\\\<img src=x onerror=alert(1)>",
    ]) {
      const out = inertForRenderers(md);
      for (const [name, render] of Object.entries(RENDERERS))
        expect(live(render(out)), `${name} ${out}`).toEqual([]);
      expect(out).not.toContain("<");
    }
    for (const md of [
      "a \\<b and `<c>`",
      "| a |\n| --- |\n| x<br>y |",
      "```\n<div>\n```",
      "[w](https://a.test/)",
    ])
      expect(inertForRenderers(md)).toBe(md);
  });

  it(
    "what earlier reviews found stays inert when rendered",
    async () => {
      for (const html of [
        "<p>x</p><xmp><img src=x onerror=alert(document.domain)></xmp><p>y</p>",
        "<p>x</p><title><img src=x onerror=alert(1)></title><p>y</p>",
        "<div><plaintext><svg onload=alert(1)>",
        '<a href="javascript&colon;alert(1)">t</a>',
        '<a href="&#106;avascript:alert(1)">t</a>',
        '<a href="java&#x09;script:alert(1)">t</a>',
        '<a href="javascript:&#160;window.PWN=1">x</a>',
        '<a href="https://a.test/" title="t&#10;&#10;<javascript:alert(1)>">a</a>',
        '<a href="x&#10;&#10;[r]: javascript:alert(1)&#10;&#10;[r]">a</a>',
        '<img src="y" alt="x&#10;&#10;<img src=x onerror=alert(1)>">',
        '<p><!-- --!> <a href="https://a.test/" title="t&#10;&#10;<img src=x onerror=alert(1)>">c</a> --></p>',
        '<a href="img src=x onerror=alert(1)"><h1>a</h1></a>',
        "<b><pre>&lt;img src=x onerror=alert(1)&gt;</pre></b>",
        "<h2><pre>[x]: javascript:alert(1)\n\n[x]</pre></h2>",
        "<p><code>a<br><br>&lt;img src=x onerror=alert(1)&gt;</code></p>",
        "<code><table><tr><td>&lt;img src=x onerror=alert(1)&gt;</td></tr></table></code>",
      ])
        await expectInert(html);
    },
    SKILL_TEST_TIMEOUT,
  );
});

// Random pages built from hostile pieces (tags mdream treats specially, script targets, text that
// could open Markdown or HTML): no renderer may find anything live in the Markdown.
const TAGS = [
  "p",
  "div",
  "span",
  "b",
  "i",
  "em",
  "strong",
  "a",
  "img",
  "code",
  "pre",
  "kbd",
  "samp",
  "var",
  "tt",
  "sup",
  "sub",
  "u",
  "mark",
  "ins",
  "del",
  "s",
  "dl",
  "dt",
  "dd",
  "details",
  "summary",
  "address",
  "figure",
  "figcaption",
  "table",
  "tr",
  "td",
  "th",
  "caption",
  "ul",
  "ol",
  "li",
  "blockquote",
  "h1",
  "h2",
  "br",
  "hr",
  "q",
  "center",
  "section",
  "noscript",
  "title",
  "xmp",
  "textarea",
  "style",
  "script",
  "iframe",
  "svg",
  "template",
  "plaintext",
  "select",
];
const ATTR_VALUES = [
  "javascript:alert(1)",
  " javascript:alert(1)",
  "jav&#x09;ascript:alert(1)",
  "&#106;avascript:alert(1)",
  "javascript&colon;alert(1)",
  "data:text/html,<script>alert(1)</script>",
  "x\n\n[r]: javascript:alert(1)\n\n[r]",
  'x"><img src=x onerror=alert(1)>',
  "<img src=x onerror=alert(1)>",
  "](javascript:alert(1))",
  "a`b",
  "<javascript:alert(1)>",
  "x)\n[y](javascript:alert(1)",
  "\\",
  "a]b[c",
];
const TEXTS = [
  "&lt;",
  "&lt;img src=x onerror=alert(1)&gt;",
  "img src=x onerror=alert(1)>",
  "javascript:alert(1)",
  "javascript",
  ":alert(1)>",
  "](",
  "](javascript:alert(1))",
  "[r]: ",
  "[r]: javascript:alert(1)",
  "[r]",
  "`",
  "``",
  "```",
  "~~~",
  "\n",
  "\n\n",
  "&amp;",
  "&amp;lt;",
  "&#60;",
  "&lt;/",
  "!",
  "?",
  "[",
  "]",
  "(",
  ")",
  "*",
  "_",
  "\\",
  "#",
  "- ",
  "1.",
  "|",
  "~",
  "=",
  "a",
  "svg onload=alert(1)>",
  "&lt;svg/onload=alert(1)&gt;",
  "<!-- <img src=x onerror=alert(1)> -->",
  "<![CDATA[<img src=x onerror=alert(1)>]]>",
  "&lt;script&gt;alert(1)&lt;/script&gt;",
  "\t",
  "    ",
  "&nbsp;",
  "&",
  "&lt;&lt;",
  "\r",
  "&#13;",
  "&lt;br&gt;",
];
const attr = fc
  .tuple(fc.constantFrom("href", "src", "title", "alt"), fc.constantFrom(...ATTR_VALUES))
  .map(([n, v]) => ` ${n}="${v.replace(/"/g, "&quot;")}"`);
const hostileHtml = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...TEXTS),
    tie("el"),
    tie("el"),
  ),
  el: fc
    .tuple(
      fc.constantFrom(...TAGS),
      fc.array(attr, { maxLength: 2 }),
      fc.array(tie("node"), { maxLength: 4 }),
      fc.boolean(),
    )
    .map(
      ([t, as, kids, close]) => `<${t}${as.join("")}>${(kids as string[]).join("")}${close ? `</${t}>` : ""}`,
    ),
  doc: fc.array(tie("node"), { minLength: 1, maxLength: 6 }).map((a) => (a as string[]).join("")),
})).doc;

// A line break, then a block mdream writes itself, inside an item or a quote: the lines after the
// break are mdream's own (a fence, a heading, a quote), not page text to escape.
const BROKEN_INTO = [
  "<ul><li>",
  "<ol><li>",
  "<blockquote>",
  "<ul><li><ul><li>",
  "<blockquote><blockquote>",
  "<blockquote><ul><li>",
];
const BLOCKS_AFTER_BREAK = [
  (p: string) => `<pre>${p}</pre>`,
  (p: string) => `<h3>${p}</h3>`,
  (p: string) => `<blockquote>${p}</blockquote>`,
  (p: string) => `<blockquote><pre>${p}</pre></blockquote>`,
  (p: string) => `<ul><li>${p}</li></ul>`,
  (p: string) => `<pre>| h | h2 |\n| --- | --- |\n| \`a\\\\|${p}\` | b |</pre>`,
];
const brokenBlock = fc
  .tuple(
    fc.constantFrom(...BROKEN_INTO),
    fc.constantFrom("a<br>", "a<br><br>", "a <br> ", "<b>a<br></b>"),
    fc.constantFrom(...BLOCKS_AFTER_BREAK),
    fc.array(fc.constantFrom(...PAYLOADS, ...TEXTS), { minLength: 1, maxLength: 3 }),
  )
  .map(([open, lead, block, texts]) => `${open}${lead}${block(texts.join(""))}`);

describe("html_clean markdown, random hostile pages", () => {
  it(
    "a block right after a line break in an item or a quote stays mdream's own block",
    async () => {
      for (const html of [
        "<ul><li>a<br><pre>x</pre></li></ul>",
        "<ul><li>a<br><h3>h</h3></li></ul>",
        "<blockquote>a<br><blockquote>b</blockquote></blockquote>",
        "<blockquote>a<br><blockquote><pre>[x]: javascript:alert(1)\n\n[x]</pre></blockquote></blockquote>",
        "<ul><li>a<br><pre>| h | h2 |\n| --- | --- |\n| `a\\|&lt;img src=x onerror=alert(1)&gt;` | b |</pre></li></ul>",
      ])
        await expectInert(html);
      fc.assert(
        fc.property(brokenBlock, (html) => {
          const md = htmlToMd(html);
          const found = Object.entries(RENDERERS).flatMap(([n, r]) => live(r(md)).map((l) => `${n}: ${l}`));
          if (found.length) throw new Error(`${found.join(", ")}\nmarkdown ${JSON.stringify(md)}`);
        }),
        { numRuns: 400, seed: 7 },
      );
    },
    SKILL_TEST_TIMEOUT * 2,
  );

  it("nothing live in any renderer", () => {
    fc.assert(
      fc.property(hostileHtml, (html) => {
        const md = htmlToMd(html);
        const found = Object.entries(RENDERERS).flatMap(([n, r]) => live(r(md)).map((l) => `${n}: ${l}`));
        if (found.length) throw new Error(`${found.join(", ")}\nmarkdown ${JSON.stringify(md)}`);
      }),
      // A fixed seed in the suite (a failure is reproducible, never flaky); MD_FUZZ_SEED and
      // MD_FUZZ_RUNS explore further.
      { numRuns: Number(process.env.MD_FUZZ_RUNS ?? 3000), seed: Number(process.env.MD_FUZZ_SEED ?? 42) },
    );
  }, 120_000);
});
