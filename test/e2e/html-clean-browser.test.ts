import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { DROPPED } from "../../src/skills/lib/html-prepass";
import { launch } from "./browser";
import { browserText, type Difference, differences, makePage, rng } from "./html-text-pages";

// mdream loads a native binding node cannot find here (the Worker loads its edge build); text mode
// does not use it.
vi.mock("mdream", () => ({
  htmlToMarkdown: () => {
    throw new Error("markdown mode is not under test here");
  },
}));

/**
 * html_clean's text mode against a real browser: for random pages (html-text-pages.ts), the words
 * and lines of Chromium's innerText (JavaScript off, what html_clean leaves out by design taken
 * out) are the words and lines of text mode's answer, up to its documented layout (differences()
 * says exactly what is compared). The browser is the oracle at test time: nothing is recorded.
 */
const PAGES = 1000;
const SEED = 37;

let browser: Browser;
let page: Page;
beforeAll(async () => {
  browser = await launch();
  page = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
});
afterAll(async () => {
  await browser?.close();
});

describe("html_clean text mode shows what a browser shows", () => {
  it(`the words and lines of ${PAGES} random pages are the browser's (fixed seed)`, async () => {
    const r = rng(SEED);
    const found: Partial<Record<Difference, { html: string; browser: string; ours: string }[]>> = {};
    for (let i = 0; i < PAGES; i++) {
      const html = makePage(r);
      // An explicit <body>: before one, Chromium moves a leading <noscript>'s text out of it.
      await page.setContent(`<!DOCTYPE html><body>${html}`);
      const { text: shown, items } = await page.evaluate(browserText, DROPPED);
      const ours = htmlToText(html);
      for (const kind of differences(shown, ours, items)) {
        found[kind] ??= [];
        found[kind].push({ html, browser: shown, ours });
      }
    }
    // Per kind: how many pages, and the shortest one, to read.
    const report = Object.fromEntries(
      Object.entries(found).map(([kind, pages]) => [
        kind,
        { pages: pages.length, shortest: pages.sort((a, b) => a.html.length - b.html.length)[0] },
      ]),
    );
    expect(report).toEqual({});
  });

  // The comparison itself: each kind of difference it is meant to find, it finds.
  it.each<[string, string, Difference[]]>([
    ["a b", "ab", ["glued words"]],
    ["ab", "a b", ["split word"]],
    ["a b c", "a c", ["lost word"]],
    ["a c", "a b c", ["extra word"]],
    ["a c", "a bc", ["changed words"]],
    ["a b", "b a", ["order"]],
    ["a\nb", "a b", ["line break lost"]],
    ["a b", "a\nb", ["line break added"]],
    ["t1c1w1\tt1c2w2\nt1c3w3", "t1c1w1   t1c3w3\nt1c2w2", []],
    ["t1c1w1 t1c1w2", "t1c1w1", ["cell words differ"]],
    ["t1c1w1 t1c1w2", "t1c1w2 t1c1w1", ["cell order"]],
    // A cell moved out of its table, after the next paragraph; a caption written after the rows.
    ["w1\nt1c1w2\tt1c2w3\nw4", "w1\nt1c1w2\nw4\nt1c2w3", ["table split"]],
    ["t1c0w1\nt1c1w2\tt1c2w3", "t1c1w2   t1c2w3\nt1c0w1", ["caption not first"]],
    // Cells set in another order (a taller cell beside a lower one) and the caption first pass.
    ["t1c0w1\nt1c1w2\tt1c2w3 t1c2w4", "t1c0w1\nt1c2w3   t1c1w2\nt1c2w4", []],
    // A whole table moved past the next paragraph.
    ["t1c1w1\nw2", "w2\nt1c1w1", ["order"]],
    ["a\nb\nc", " * a\n   1. b\n\n> c\n\n----------------------------------------", []],
  ])("differences(%j, %j)", (shown, ours, kinds) => {
    expect(differences(shown, ours)).toEqual(kinds);
  });

  it("counts list markers against the browser's visible items", () => {
    expect(differences("a\nc", " 1. a\n 2. \n 3. c", 2)).toEqual(["list markers"]);
    expect(differences("a\nc", " 1. a\n 2. c", 2)).toEqual([]);
    expect(differences("a", "> a\n>", 0)).toEqual([]);
  });
});
