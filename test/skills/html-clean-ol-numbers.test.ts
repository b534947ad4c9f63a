import MarkdownIt from "markdown-it";
import { describe, expect, it } from "vitest";
import { htmlToMd, htmlToText } from "../../src/skills/lib/html-convert";
import { writeNumbers } from "../../src/skills/lib/markdown-numbers";

/**
 * The numbers text mode writes for an ordered list are the ones Chromium's markers show (read from
 * its accessibility tree's list markers, JavaScript off): `reversed` counts down from `start`, or
 * from the number of items that take a number; an item's `value` sets its number and the next go on
 * from it, up or down; `start` and `value` are read as HTML reads integers.
 */
describe("html_clean text mode numbers a list as a browser does", () => {
  it.each([
    ["<ol reversed><li>a<li>b<li>c</ol>", " 3. a\n 2. b\n 1. c"],
    ["<ol reversed start=10><li>a<li>b</ol>", " 10. a\n 9.  b"],
    ["<ol><li>a<li value=10>b<li>c</ol>", " 1.  a\n 10. b\n 11. c"],
    ["<ol reversed><li>a<li value=10>b<li>c</ol>", " 3.  a\n 10. b\n 9.  c"],
    // Items display: none or `hidden` leaves out take no number and are not counted; one hidden by
    // its visibility keeps its number (and its marker is not written).
    ['<ol reversed><li>a<li style="display:none">b<li>c</ol>', " 2. a\n 1. c"],
    ["<ol reversed><li>a<li hidden>b<li>c</ol>", " 2. a\n 1. c"],
    ['<ol reversed><li>a<li style="visibility:hidden">b<li>c</ol>', " 3. a\n 1. c"],
    ['<ol><li value=abc>a<li value=" 7x">b<li value=-3>c<li>d</ol>', " 1.  a\n 7.  b\n -3. c\n -2. d"],
    ['<ol><li>a<li value="3.7">b<li value="+4">c</ol>', " 1. a\n 3. b\n 4. c"],
    ["<ol reversed><li>a<li value=1>b<li>c</ol>", " 3. a\n 1. b\n 0. c"],
    // Only the list's own items count; a list inside one numbers itself.
    ["<ol reversed><li>a</li><li>b<ol><li>x<li>y</ol></li></ol>", " 2. a\n 1. b\n    1. x\n    2. y"],
    ["<ol type=i reversed><li>a<li>b<li>c</ol>", " iii. a\n ii.  b\n i.   c"],
    ["<ol reversed start=-1><li>a<li>b</ol>", " -1. a\n -2. b"],
    ["<ol reversed start=abc><li>a<li>b</ol>", " 2. a\n 1. b"],
    // Outside a 32-bit signed integer, the attribute is missing to Chromium; its bounds are kept.
    ["<ol><li>a<li value=99999999999>b<li>c</ol>", " 1. a\n 2. b\n 3. c"],
    ["<ol reversed start=-2147483649><li>a<li>b</ol>", " 2. a\n 1. b"],
    ["<ol reversed start=2147483648><li>a<li>b</ol>", " 2. a\n 1. b"],
    [
      "<ol><li>a<li value=-2147483648>b<li value=2147483647>c</ol>",
      " 1.           a\n -2147483648. b\n 2147483647.  c",
    ],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });
});

/**
 * Markdown writes the same numbers: renderers show a list's first number and count on from it
 * (CommonMark), so the first is the browser's, and the later ones are written as the browser shows
 * them for whoever reads the Markdown as text. A number Markdown cannot start an item with
 * (negative) is left as mdream numbers it.
 */
describe("html_clean Markdown writes the numbers a browser shows", () => {
  it.each([
    ["<ol reversed><li>a<li>b<li>c</ol>", "3. a\n2. b\n1. c"],
    ["<ol reversed start=10><li>a<li>b</ol>", "10. a\n9. b"],
    ["<ol><li>a<li value=10>b<li>c</ol>", "1. a\n10. b\n11. c"],
    ["<ol reversed><li>a<li value=10>b<li>c</ol>", "3. a\n10. b\n9. c"],
    ['<ol reversed><li>a<li style="display:none">b<li>c</ol>', "2. a\n1. c"],
    ['<ol reversed><li>a<li style="visibility:hidden">b<li>c</ol>', "3. a\n1. c"],
    ["<ol reversed><li><p>a</p><li><p>b</p></ol>", "2. a\n1. b"],
    ['<ol><li value=abc>a<li value=" 7x">b<li value=-3>c<li>d</ol>', "1. a\n7. b\n3. c\n4. d"],
    ["<ol reversed start=99999999999><li>a<li>b</ol>", "2. a\n1. b"],
    ["<ol reversed><li>a<li value=99999999999>b<li>c</ol>", "3. a\n2. b\n1. c"],
    // An item's content moves with its marker's width: the nested list and paragraph stay in it.
    [
      "<ol reversed start=12><li>a<ol><li>x<li>y</ol><li>b<p>para</p><li>c</ol>",
      "12. a\n    1. x\n    2. y\n11. b\n\n    para\n10. c",
    ],
    ["<ol><li>a<li value=100>b<ul><li>x</ul><li>c</ol>", "1. a\n100. b\n     - x\n101. c"],
    // The number goes right after the marker when the item opens with an inline element, too.
    ['<ol><li>a</li><li value="5"><b>bold</b> text</li><li>c</ol>', "1. a\n5. **bold** text\n6. c"],
    ["<ol reversed><li>a<li><b>b</b> x<li><code>c</code> y</ol>", "3. a\n2. **b** x\n1. `c` y"],
    ["<ol reversed><li>a<li><b>bonly</b></ol>", "2. a\n1. **bonly**"],
    ["<ol reversed><li>a<li><div>d</div><li><p>p</p></ol>", "3. a\n2. d\n1. p"],
    // In a quote, and in a quote inside an item whose number widened.
    ["<blockquote><ol reversed><li>a<li>b<li>c</ol></blockquote>", "> 3. a\n> 2. b\n> 1. c"],
    [
      "<ol><li>a<li value=100>b<blockquote><ol reversed><li>p<li>q<p>r</p></ol></blockquote><li>c</ol>",
      "1. a\n100. b\n     > 2. p\n     > 1. q\n     >\n     >    r\n101. c",
    ],
    // An item opening with a heading or code: mdream writes it on the marker's line as a block of
    // its own, where no number can go before it; mdream's number stands, and no digit enters the text.
    ["<ol reversed><li>a<li><h2>head</h2>x<li>c</ol>", "3. a\n4. ## head x\n1. c"],
    ["<ol reversed><li>a<li><pre>code</pre></ol>", "2. a\n3. ```\n   code\n   ```"],
    // What mdream escapes at the start of an item's text stays escaped once the number is written.
    [
      "<ol reversed><li>a<li>- dash<li>1. num<li># head<li>> quote<li>x</ol>",
      "6. a\n5. \\- dash\n4. 1\\. num\n3. \\# head\n2. \\> quote\n1. x",
    ],
    ["<ol><li>a<li value=3>- dash<li value=9>1) num</ol>", "1. a\n3. \\- dash\n9. 1\\) num"],
  ])("%s", (html, md) => {
    expect(htmlToMd(html)).toBe(md);
  });

  it.each([
    ['<ol><li>a</li><li value="5"><b>bold</b> text</li><li>c</ol>', ["a", "<strong>bold</strong> text", "c"]],
    ["<ol reversed><li>a<li><b>bonly</b></ol>", ["a", "<strong>bonly</strong>"]],
    ["<blockquote><ol reversed><li>a<li>b<li>c</ol></blockquote>", ["a", "b", "c"]],
    [
      "<ol reversed><li>a<li>- dash<li>1. num<li># head<li>> quote<li>x</ol>",
      ["a", "- dash", "1. num", "# head", "&gt; quote", "x"],
    ],
    ["<ol><li>a<li value=3>- dash<li value=9>1) num</ol>", ["a", "- dash", "1) num"]],
  ])("%s renders its items' text as the page's, no number in it, no block opened", (html, items) => {
    const rendered = new MarkdownIt().render(htmlToMd(html));
    expect([...rendered.matchAll(/<li>(.*?)<\/li>/g)].map((m) => m[1])).toEqual(items);
  });

  it("an item opening with a heading or code keeps its text free of the number", () => {
    const h = new MarkdownIt().render(htmlToMd("<ol reversed><li>a<li><h2>head</h2>x<li>c</ol>"));
    expect(h).toContain("<h2>head x</h2>");
    const pre = new MarkdownIt().render(htmlToMd("<ol reversed><li>a<li><pre>code</pre></ol>"));
    expect(pre).toContain("<pre><code>code\n</code></pre>");
  });

  it("renders as one list from the browser's first number, items and nesting kept", () => {
    const md = htmlToMd("<ol reversed start=12><li>a<ol><li>x<li>y</ol><li>b<p>para</p><li>c</ol>");
    const html = new MarkdownIt().render(md);
    expect(html).toMatch(/^<ol start="12">/);
    expect(html.match(/<li>/g)).toHaveLength(5);
    expect(html).toContain("<ol>\n<li>x</li>\n<li>y</li>\n</ol>");
    expect(html).toContain("<p>para</p>");
  });
});

describe("writing the marked numbers in mdream's place", () => {
  const M = "\ue000";
  it("moves each item's lines by its own and its outer items' change of width, and ends an item where its lines end", () => {
    const md = [`9. ${M}10${M}a`, `   1. ${M}100${M}b`, "      c", "", "   d", "10. e", "    f"].join("\n");
    expect(writeNumbers(md, M)).toBe(
      ["10. a", "    100. b", "         c", "", "    d", "10. e", "    f"].join("\n"),
    );
  });

  it("a list in a table cell, written as inline text, gets no number and no mark", () => {
    expect(htmlToMd("<table><tr><td><ol reversed><li>a<li>b</ol></td></tr></table>")).toBe(
      "| a b |\n| --- |",
    );
  });
});
