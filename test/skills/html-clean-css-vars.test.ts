import { describe, expect, it } from "vitest";
import { MAX_VAR_REFERENCES, MAX_VAR_WORK } from "../../src/skills/lib/css-vars";
import { htmlToMd, htmlToText } from "../../src/skills/lib/html-convert";

/**
 * A display or visibility read through a CSS custom property (css-vars.ts): each page here was
 * checked in Chromium (innerText, JavaScript off), which hides X in the first list and shows it in
 * the second. test/e2e/html-clean-browser.test.ts compares random pages using them with the browser.
 */
describe("html_clean reads var() in an inline display or visibility as Chromium does", () => {
  it.each([
    'a<span style="--d:none;display:var(--d)">X</span>b',
    'a<span style="display:var(--x, none)">X</span>b',
    'a<span style="--d:none"><span style="display:var(--d)">X</span></span>b',
    'a<span style="--a:var(--b);--b:var(--a);display:var(--a,none)">X</span>b',
    'a<span style="--d:none"><span style="--d:inherit;display:var(--d)">X</span></span>b',
    'a<span style="--d:none"><span style="--d:unset;display:var(--d)">X</span></span>b',
    'a<span style="--d:NONE !important;--d:inline;display:var(--d)">X</span>b',
    'a<span style="--d:  none  ;display:var( --d )">X</span>b',
    'a<span style="--v:hidden;visibility:var(--v)">X</span>b',
    'a<span style="visibility:hidden"><span style="visibility:var(--nope)">X</span></span>b',
    'a<span style="--d:;display:var(--d) none">X</span>b',
    'a<span style="--d:;display:var(--d,inline) none">X</span>b',
    'a<span style="display:VAR(--x,none)">X</span>b',
    'a<span style="--\\64:none;display:var(--d)">X</span>b',
    'a<span style="--a:var(--x,var(--y,none));display:var(--a)">X</span>b',
    'a<span style="display:var(--x,var(--y,var(--z,none)))">X</span>b',
    'a<span style="--d:none;display:var(--d)!important;display:inline">X</span>b',
    'a<span style="--d:none"><span style="display:var(--d, inline)">X</span></span>b',
    'a<span style="--d:initial;display:var(--d, none)">X</span>b',
    'a<span style="--d:none /* c */;display:var(--d)">X</span>b',
    'a<span style="--d:none;display:var(--d);display:bogus">X</span>b',
    'a<span style="--d:none;display:var(--d,)">X</span>b',
    'a<span style="--d:n\\one;display:var(--d)">X</span>b',
    'a<span style="display:var(--x,)none">X</span>b',
    // The function's name with its escapes read, in any ASCII case, is var().
    'a<span style="--d:none;display:v\\61r(--d)">X</span>b',
    'a<span style="--e:none;--d:v\\61r(--e);display:var(--d)">X</span>b',
    'a<span style="--d:none;display:\\56 AR(--d)">X</span>b',
    'a<span style="--e:none;display:var(--x, v\\61r(--e))">X</span>b',
    'a<span style="--v:hidden;visibility:v\\61r(--v)">X</span>b',
  ])("%s hides X", (html) => {
    expect(htmlToText(html)).toBe("ab");
    expect(htmlToMd(html)).toBe("ab");
  });

  it.each([
    ['a<span style="--a:var(--b);--b:var(--a);display:var(--a)">X</span>b', "aXb"],
    ['a<span style="--d:none"><span style="--d:initial;display:var(--d)">X</span></span>b', "aXb"],
    ['a<span style="--d:none"><span style="--d:var(--d);display:var(--d)">X</span></span>b', "aXb"],
    [
      'a<span style="--d:none"><span style="--e:var(--d);--d:inline;display:var(--e)">X</span></span>b',
      "aXb",
    ],
    ['a<span style="--d:none"><span style="--D:inline;display:var(--D)">X</span></span>b', "aXb"],
    ['a<span style="--d:no;display:var(--d)ne">X</span>b', "aXb"],
    ['a<span hidden style="display:var(--nope)">X</span>b', "aXb"],
    ['a<span hidden style="--d:revert-layer;display:var(--d)">X</span>b', "aXb"],
    ['a<span style="--d:revert-layer;display:var(--d)">X</span>b', "aXb"],
    ['a<span style="--d:inline;display:none;display:var(--d)">X</span>b', "aXb"],
    ['a<span style="--d:bogus;display:none;display:var(--d)">X</span>b', "aXb"],
    [
      'a<span style="--d:none"><span style="--d:inline">i</span><span style="display:var(--d)">X</span></span>b',
      "aib",
    ],
  ])("%s shows it: %j", (html, text) => {
    expect(htmlToText(html)).toBe(text);
    expect(htmlToMd(html)).toBe(text);
  });

  it("an ancestor's custom property reaches a descendant many levels down, in a list and a table too", () => {
    const deep = `${"<span>".repeat(40)}<span style="display:var(--d)">X</span>${"</span>".repeat(40)}`;
    expect(htmlToText(`a<span style="--d:none">${deep}</span>b`)).toBe("ab");
    expect(htmlToMd(`a<span style="--d:none">${deep}</span>b`)).toBe("ab");
    expect(htmlToText(`<ol style="--v:hidden"><li>a<li style="visibility:var(--v)">b<li>c</ol>`)).toBe(
      " 1. a\n 3. c",
    );
    expect(
      htmlToText(`<table style="--d:none"><tr><td>a</td><td style="display:var(--d)">b</td></tr></table>`),
    ).toBe("a");
  });

  it(`nesting past ${MAX_VAR_REFERENCES} var()s is taken as hiding; within it, resolved`, () => {
    const chain = (n: number) => {
      let value = "none";
      for (let i = n; i > 0; i--) value = `var(--x${i},${value})`;
      return `a<span style="display:${value}">X</span>b`;
    };
    expect(htmlToText(chain(MAX_VAR_REFERENCES))).toBe("ab");
    expect(htmlToText(chain(MAX_VAR_REFERENCES).replace(",none)", ",inline)"))).toBe("aXb");
    expect(htmlToText(chain(MAX_VAR_REFERENCES + 1).replace(",none)", ",inline)"))).toBe("ab");
  });

  it(`a page's resolutions share ${MAX_VAR_WORK.toLocaleString("en-US")} steps; what is left past them is taken as hidden`, () => {
    // 500 nested elements declaring a property each: every leaf's distinct name walks all 500.
    const open = Array.from({ length: 500 }, (_, k) => `<span style="--a${k}:1">`).join("");
    const leaves = Array.from(
      { length: 1200 },
      (_, i) => `<span style="display:var(--z${i}, inline)">w${i} </span>`,
    );
    const html = `${open}${leaves.join("")}${"</span>".repeat(500)}`;
    for (const out of [htmlToText(html), htmlToMd(html)]) {
      expect(out).toContain("w0 w1 w2");
      expect(out).not.toContain("w1199");
      // Each leaf took about 502 steps; no more were allowed after the budget ran out.
      const shown = out.split(" ").filter(Boolean).length;
      expect(Math.abs(shown - Math.floor(MAX_VAR_WORK / 502))).toBeLessThan(5);
    }
  });
});
