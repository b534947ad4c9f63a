import { describe, expect, it } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { postJson } from "../helpers";

/**
 * Text mode shows what a browser shows (test/e2e/html-clean-browser.test.ts compares it with
 * Chromium's innerText on random pages); these pin each difference that comparison found, without
 * the browser.
 */
describe("html_clean text mode leaves out what a browser never shows", () => {
  it.each([
    // `hidden`: the word before and after met ("ab c" with the hidden "b" glued on).
    ["<p>a<span hidden>b</span> c</p><div hidden>d</div>e", "a c\n\ne"],
    // ...but not `hidden="until-found"`: shown inline, revealed to find-in-page on a block (as a
    // closed <details>' content, which text mode keeps).
    ['<p>a<b hidden="until-found">b</b> c</p>', "ab c"],
    ['<div hidden="until-found">x</div>y', "x\ny"],
    ['<p>a<b hidden="Until-Found">b</b> c</p>', "ab c"],
    // A hidden item takes no marker and no number; a list of hidden items or comments writes nothing.
    ["<ol><li>a</li><li hidden>b</li><li>c</li></ol>", " 1. a\n 2. c"],
    ["a<ul><li hidden>x</li></ul>b", "a\nb"],
    ["a<ul><!-- c --></ul>b", "a\nb"],
    // Hidden table parts, in the grid too (it reads rows and cells directly).
    ["<table><tr><td>a</td><td hidden>b</td><td>c</td></tr><tr hidden><td>d</td></tr></table>", "a   c"],
    [
      "<table><caption hidden>cap</caption><tbody hidden><tr><td>x</td></tr></tbody><tr><td>a</td></tr></table>",
      "a",
    ],
    // Hidden by every browser's stylesheet, and written glued to the next word before.
    ["<title>T</title>Hi", "Hi"],
    ["Pick<datalist><option>one</option><option>two</option></datalist> a colour", "Pick a colour"],
    ["a<noembed>ne</noembed><noframes>nf</noframes> b", "a b"],
    // A media element's content is for browsers without it.
    ["Watch<video src=v.mp4>Your browser does not support video</video> this", "Watch this"],
    ["Hear<audio><source src=a.mp3>No audio</audio> this", "Hear this"],
    // A <dialog> is shown once it is open.
    ["<p>a</p><dialog><p>Sure?</p></dialog><p>b</p>", "a\n\nb"],
    ["a<dialog open>shown</dialog>b", "a\nshown\nb"],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });
});

describe("html_clean text mode ends a line where a browser does", () => {
  it.each([
    // An empty table or list ends the line (the text either side ran together: "ab"), and adds
    // no blank line between the blocks around it.
    ["a<table></table>b", "a\nb"],
    ["a<table><tr><td><img src=x.png></td></tr></table>b", "a\nb"],
    ["a<ul></ul>b<ol> </ol>c", "a\nb\nc"],
    ["<div>a</div><table></table><div>b</div>", "a\nb"],
    ["<p>a</p><table></table><p>b</p>", "a\n\nb"],
    [
      "<p>a</p><table><tr><td><img></td></tr></table><table><tr><td><img></td></tr></table><p>b</p>",
      "a\n\nb",
    ],
    ["<div>a</div><ul></ul><div>b</div>", "a\nb"],
    // ...nor after inline text, before a block (Chromium: "a\nb", and no empty line in the item).
    ["a<table></table><div>b</div>", "a\nb"],
    ["a<ul></ul><div>b</div>", "a\nb"],
    ["a<table></table><p>b</p>", "a\n\nb"],
    ["<ul><li>a<ul></ul></li><li>c</li></ul>", " * a\n * c"],
    ["<ul><li>a<table></table></li><li>c</li></ul>", " * a\n * c"],
    // Inside <pre> the open line is the block's raw text, not the words html-to-text keeps apart.
    ["<pre>a<table></table>b</pre>", "a\nb"],
    ["<pre>a<ul></ul>b</pre>", "a\nb"],
    // <pre> by its older names keeps its lines, apart from the text around it.
    ["a<xmp>x <b>\n y</xmp>b", "a\n\nx <b>\n y\n\nb"],
    ["a<listing>l1\nl2</listing>b", "a\n\nl1\nl2\n\nb"],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });

  it("a table that writes something is laid out as before", () => {
    expect(htmlToText("<p>x</p><table><caption>c</caption><tr><td>a</td><td>b</td></tr></table>y")).toBe(
      "x\n\nc\na   b\n\ny",
    );
  });
});

describe("html_clean text mode around a nested <a> or <nobr>", () => {
  // htmlparser2 keeps a nested <a> (a <nobr> in a <nobr>) nested, where a browser's parser closes
  // the open one and opens its formatting elements again (a known difference: README). These are
  // the pages where both give the same text; each expected text is Chromium's innerText.
  it.each([
    ["<nobr>a<ins><span>b</span> c<nobr>d</nobr></ins></nobr>", "ab cd"],
    ['<nobr>a<b style="display:none">b<nobr>c</nobr>d</b>e</nobr>f', "aef"],
    [
      '<span style="visibility:hidden">h<a>x<b style="visibility:visible">y<a>z</a>w</b>v</a>u</span>t',
      "yzwt",
    ],
    [
      '<span style="visibility:hidden"><a>1<a style="display:none">2</a>3<b style="visibility:visible">4<span style="display:none">5<a>6</a>7</span>8</b></a></span>9',
      "489",
    ],
    // In a table cell the inner one opens nested in a browser too (a cell is a scope boundary).
    [
      '<nobr>a<span style="display:none"><table><tr><td><nobr>c</nobr></td></tr></table>d</span></nobr>e',
      "ae",
    ],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });
});

describe("html_clean text mode keeps a word whole", () => {
  it("a <wbr> earlier in a table cell no longer splits a later word where the cell wraps", () => {
    // The cell wraps at 60 columns; "ab" + "cd" is one word, "abcd", as a browser shows it.
    const html = `<table><tr><td>x<wbr> ${"y".repeat(55)} ab<b>cd</b></td><td>z</td></tr></table>`;
    const words = htmlToText(html).split(/\s+/);
    expect(words).toContain("abcd");
    expect(words).not.toContain("cd");
  });

  it("over HTTP too", async () => {
    const res = await postJson("/api/skills/html-clean", {
      html: "<title>T</title><p>Price<span hidden>old</span> $5</p>",
    });
    expect(res.status).toBe(200);
    expect((await res.json<{ output: string }>()).output).toBe("Price $5");
  });
});
