import * as commonmark from "commonmark";
import { DomUtils, parseDocument } from "htmlparser2";
import MarkdownIt from "markdown-it";
import { marked } from "marked";
import { describe, expect, it } from "vitest";
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
