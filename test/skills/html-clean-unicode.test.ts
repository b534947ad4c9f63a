import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The Unicode audit: a lone surrogate made markdown mode swallow the next character while text
// mode passed it through, and the two modes treated U+FEFF and U+200B oppositely.

const clean = async (html: string, mode: "text" | "markdown") => {
  const res = await postJson("/api/skills/html-clean", { html, mode });
  expect(res.status).toBe(200);
  const body = await res.json<{ output: string; chars: number }>();
  // First: a failure's message holding half a pair would break the test reporter's channel.
  expect(body.output.isWellFormed()).toBe(true);
  return body;
};

/**
 * Both modes' outputs for `html`, which these cases expect to be the same. One after the other: in
 * the test pool a skill's lazy import is fetched by the first request that needs it, and a second
 * request sent beside it waits on that request's I/O, which workerd refuses (the pair hung whenever
 * this file came after another file and before anything had loaded the converters).
 */
const both = async (html: string) => {
  const text = await clean(html, "text");
  const markdown = await clean(html, "markdown");
  return { text: text.output, markdown: markdown.output };
};

describe("html_clean's two modes agree on lone surrogates, BOMs and zero width spaces", () => {
  it(
    "a lone surrogate is U+FFFD in both modes, and the character after it stays",
    async () => {
      expect(await both("<p>x\ud83dyz and more</p>")).toEqual({
        text: "x\ufffdyz and more",
        markdown: "x\ufffdyz and more",
      });
      expect(await both("<p>a\udc00b</p><p>\ud800</p>")).toEqual({
        text: "a\ufffdb\n\n\ufffd",
        markdown: "a\ufffdb\n\n\ufffd",
      });
      const { output, chars } = await clean("<p>ok \ud83d</p><p>next para</p>", "markdown");
      expect(output).toBe("ok \ufffd\n\nnext para");
      expect(chars).toBe(output.length);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "U+FEFF is dropped wherever it stands, written or as an entity, in both modes",
    async () => {
      const expected = { text: "foo\u200bbar", markdown: "foo\u200bbar" };
      expect(await both("\ufeff<p>\ufefffoo\u200bbar</p>")).toEqual(expected);
      expect(await both("<p>foo&#xfeff;&#x200b;bar&#65279;</p>")).toEqual(expected);
      expect(await both("\ufeffhello")).toEqual({ text: "hello", markdown: "hello" });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "U+200B is a character in both modes, as in HTML: never a space, never trimmed away",
    async () => {
      expect(await both("<p>\u200bfoo</p><p>super\u200blong\u200bword</p>")).toEqual({
        text: "\u200bfoo\n\nsuper\u200blong\u200bword",
        markdown: "\u200bfoo\n\nsuper\u200blong\u200bword",
      });
    },
    SKILL_TEST_TIMEOUT,
  );
});
