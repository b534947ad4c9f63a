import { describe, expect, it, vi } from "vitest";
import { htmlClean } from "../../src/skills/html-clean";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { MAX_PREFIX_NESTING } from "../../src/skills/lib/html-prepass";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * html_clean's text mode compiles html-to-text's options once per isolate (one converter per table
 * layout) instead of on every call: `convert` merged its defaults and built the selectors' decision
 * tree each time, ~4 times what the rest of a 1 KB call cost (the bench's 1 KB row; the speed is
 * the bench's to show, docs/PERFORMANCE.md). What these tests hold: a converter shared by every call
 * answers each as a fresh one would.
 */

describe("html_clean's text converter is compiled once", () => {
  it(
    "each call answers as the first: a call that throws inside the quotes leaves no level counted",
    async () => {
      // Quotes one level short of the bound and a list inside: written as quotes and a list.
      const deep = `${"<blockquote>".repeat(MAX_PREFIX_NESTING - 1)}<ul><li>x</li></ul><p>y</p>`;
      const first = htmlToText(deep);
      expect(first).toContain("* x");
      // A formatter that throws mid-walk (an ordered list three quotes down, here) must not leave
      // the shared converter's count of open levels up for the next call.
      const poisoned = `${"<blockquote>".repeat(3)}<ol type="poison"><li>z</li></ol>`;
      const get = Map.prototype.get;
      let thrown = false;
      const spy = vi.spyOn(Map.prototype, "get").mockImplementation(function (
        this: Map<unknown, unknown>,
        key,
      ) {
        if (key === "poison") {
          thrown = true;
          throw new Error("mid-walk");
        }
        return get.call(this, key);
      });
      try {
        expect(() => htmlToText(poisoned)).toThrow("mid-walk");
      } finally {
        spy.mockRestore();
      }
      expect(thrown).toBe(true);
      expect(htmlToText(deep)).toBe(first);
      const res = (await htmlClean.run({ html: deep, mode: "text" } as never, {} as never)) as {
        output: string;
      };
      expect(res.output).toBe(first);
    },
    SKILL_TEST_TIMEOUT,
  );
});

describe("the kept converters answer as fresh ones", () => {
  it(
    "generated pages (quotes and lists past the bound, numbered lists, grid and block tables) convert the same in any order",
    () => {
      let seed = 7;
      const rnd = (n: number) => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed % n;
      };
      const piece = (depth: number): string => {
        if (depth > 40) return "<p>w</p>";
        switch (rnd(7)) {
          case 0:
            return `<blockquote>${piece(depth + 1 + rnd(8))}</blockquote>`;
          case 1:
            return `<ul><li>a${piece(depth + 1)}</li><li>b</li></ul>`;
          case 2:
            return `<ol type="${["i", "A", "a", "1"][rnd(4)]}" start="${rnd(4000)}"><li>x</li><li>${piece(depth + 1)}</li></ol>`;
          case 3:
            return `<table><caption>c</caption><tr><td colspan="${1 + rnd(3)}">t</td><td>${piece(depth + 1)}</td></tr></table>`;
          case 4:
            return `<table>${"<tr><td>g</td></tr>".repeat(rnd(3) === 0 ? 2001 : 2)}</table>`;
          case 5:
            return `<dl><dt>k</dt><dd>v &amp; ${piece(depth + 1)}</dd></dl>`;
          default:
            return `<p>p ${rnd(100)}</p><pre>  ${rnd(9)}\n x</pre>`;
        }
      };
      const pages = Array.from({ length: 60 }, () =>
        Array.from({ length: 1 + rnd(4) }, () => piece(rnd(3) === 0 ? 30 : 0)).join(""),
      );
      const forward = pages.map((page) => htmlToText(page));
      const backward = [...pages].reverse().map((page) => htmlToText(page));
      expect(backward.reverse()).toEqual(forward);
      expect(new Set(forward).size).toBeGreaterThan(50);
    },
    SKILL_TEST_TIMEOUT,
  );
});
