import { describe, expect, it } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { postJson } from "../helpers";

/**
 * html_clean's text mode trimmed its whole output, and with it the first line's own indent: a
 * page that opens with a list had its first marker flush left and the others indented
 * ("* A\n * B"). Only blank lines go from the start now (and whitespace from the end).
 */
describe("html_clean text mode keeps the first line's indent", () => {
  it.each([
    ["<ul><li>A</li><li>B</li></ul>", " * A\n * B"],
    ["<ol><li>A</li><li>B</li></ol>", " 1. A\n 2. B"],
    ["<br><br><ul><li>A</li><li>B</li></ul><p> </p>", " * A\n * B"],
    ["<pre>  code\n  more</pre>", "  code\n  more"],
    ["<p>Intro</p><ul><li>A</li><li>B</li></ul>", "Intro\n\n * A\n * B"],
    ["\n\n<p>  x </p>\n", "x"],
    ["<blockquote>q</blockquote>", "> q"],
  ])("%j", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });

  it("a list reads the same at the start of a page as after a paragraph", () => {
    for (const list of [
      "<ul><li>A</li><li>B<ul><li>C</li></ul></li></ul>",
      '<ol start="9"><li>A</li><li>B</li></ol>',
      '<ol type="I"><li>A</li><li>B</li><li>C</li></ol>',
    ]) {
      expect(`Intro\n\n${htmlToText(list)}`).toBe(htmlToText(`<p>Intro</p>${list}`));
    }
  });

  it("over HTTP, where chars counts the indent", async () => {
    const res = await postJson("/api/skills/html-clean", { html: "<ul><li>A</li><li>B</li></ul>" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ output: " * A\n * B", chars: 9 });
  });
});
