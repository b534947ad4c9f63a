import { describe, expect, it } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";

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
    // The next number stops at those bounds, as Chromium's ordinal saturates.
    ["<ol><li value=2147483647>a<li>b</ol>", " 2147483647. a\n 2147483647. b"],
    ["<ol reversed><li value=-2147483648>a<li>b</ol>", " -2147483648. a\n -2147483648. b"],
    ["<ol start=2147483647><li>a<li>b<li>c</ol>", " 2147483647. a\n 2147483647. b\n 2147483647. c"],
  ])("%s", (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });
});
