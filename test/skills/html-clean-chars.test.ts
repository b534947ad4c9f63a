import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { htmlClean } from "../../src/skills/html-clean";
import { codePointLength } from "../../src/text-cut";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * html_clean's `chars` is the answer's length in code points. It was `[...output].length`: an
 * array of one string per code point, ~64 MB (node) for the 6.6 MB answer of 400 KB of `<p>中</p>`
 * inside 32 quotes. Now the code points are counted in place.
 */

afterEach(() => vi.restoreAllMocks());

describe("html_clean counts its answer's code points", () => {
  it(
    "astral characters are one each, combining marks one each, in both modes",
    async () => {
      const html = "<p>😀 𝒳 e\u0301 n\u0303\u0308 中文 👩‍👩‍👧</p>";
      for (const mode of ["text", "markdown"]) {
        const res = await postJson("/api/skills/html-clean", { html, mode });
        expect(res.status).toBe(200);
        const { chars, output } = await res.json<{ chars: number; output: string }>();
        expect(output).toContain("😀 𝒳 e\u0301 n\u0303\u0308 中文 👩‍👩‍👧");
        expect(chars).toBe(Array.from(output).length);
        expect(chars).toBeLessThan(output.length);
      }
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "the answer is not spread into an array of its code points",
    async () => {
      const html = `${"<blockquote>".repeat(32)}${"<p>中😀</p>".repeat(2000)}${"</blockquote>".repeat(32)}`;
      const iterate = vi.spyOn(String.prototype, Symbol.iterator);
      const out = (await htmlClean.run({ html, mode: "text" } as never, {} as never)) as {
        chars: number;
        output: string;
      };
      const answerIterated = iterate.mock.contexts.some((s) => String(s) === out.output);
      vi.restoreAllMocks();
      expect(answerIterated).toBe(false);
      expect(out.chars).toBe(Array.from(out.output).length);
    },
    SKILL_TEST_TIMEOUT,
  );

  it("codePointLength is the spread's length for any string, lone surrogates too", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        fc.string({ unit: fc.constantFrom("\ud83d", "\ude00", "a", "é") }),
        (a, b) => {
          for (const s of [a, b, a + b]) expect(codePointLength(s)).toBe([...s].length);
        },
      ),
    );
  });
});
