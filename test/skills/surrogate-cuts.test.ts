import { afterEach, describe, expect, it, vi } from "vitest";
import { htmlToText } from "../../src/skills/lib/html-convert";
import { cut, cutGraphemes, shorten } from "../../src/text-cut";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * Answers cut user and page text at a number of UTF-16 units; a cut inside a surrogate pair left
 * its high half alone ("\ud83d…" in the JSON), which strict decoders (serde_json, Swift) refuse,
 * answer and all.
 */

const EMOJI = "😀";
/** A lone surrogate, as JSON.stringify writes one ("\ud83d"), anywhere in an answer's text. */
const LONE = /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i;

async function answer(path: string, body: unknown) {
  const res = await postJson(path, body);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).not.toMatch(LONE);
  return JSON.parse(text);
}

describe("cut and shorten", () => {
  it("never end in a high surrogate", () => {
    for (let max = 1; max <= 12; max++) {
      for (const text of [EMOJI.repeat(8), `a${EMOJI.repeat(8)}`, `ab${"é".repeat(3)}${EMOJI.repeat(4)}`]) {
        for (const out of [cut(text, max), shorten(text, max)]) {
          expect(out.isWellFormed()).toBe(true);
          expect(out.length).toBeLessThanOrEqual(max);
        }
        // As long as it can be: at most one unit short of the bound.
        expect(cut(text, max).length).toBeGreaterThanOrEqual(Math.min(text.length, max - 1));
      }
    }
    expect(cut("abc", 3)).toBe("abc");
    expect(shorten("abcd", 3)).toBe("ab…");
    expect(shorten(`a${EMOJI}b`, 3)).toBe("a…");
  });

  it("cutGraphemes cuts between characters as a reader sees them", () => {
    const family = "\u{1F468}\u200d\u{1F469}\u200d\u{1F467}\u200d\u{1F466}"; // 11 units, one character
    const flags = "\u{1F1EB}\u{1F1F7}\u{1F1E9}\u{1F1EA}"; // 🇫🇷🇩🇪: 8 units, two characters
    expect(cutGraphemes(`ab${flags}`, 7)).toBe(`ab\u{1F1EB}\u{1F1F7}`); // not 🇫🇷 and half of 🇩
    expect(cutGraphemes(`ab${flags}`, 5)).toBe("ab"); // not a lone 🇫
    expect(cutGraphemes(`a${family}b`, 11)).toBe("a");
    expect(cutGraphemes(`a${family}b`, 12)).toBe(`a${family}`);
    expect(cutGraphemes("ae\u0301\u0302x", 3)).toBe("a"); // é̂ keeps its marks or goes
    expect(cutGraphemes("abc", 3)).toBe("abc");
    // One cluster longer than the bound: cut at code points rather than answer nothing.
    const marked = `e${"\u0301".repeat(50)}`;
    expect(cutGraphemes(marked, 10)).toBe(marked.slice(0, 10));
    expect(shorten(`x${flags}`, 4, cutGraphemes)).toBe("x…");
  });

  it("ai_detector's page text is cut the same way (its first 8,000 characters)", () => {
    // (Checked well-formed first: a failure's message holding half a pair cannot reach the reporter.)
    const short = htmlToText(`<p>a${EMOJI}</p>`, ["url"], 2);
    expect(short.isWellFormed()).toBe(true);
    expect(short).toBe("a");
    expect(htmlToText(`<p>a${EMOJI}</p>`, ["url"], 3)).toBe(`a${EMOJI}`);
  });
});

describe("answers hold no half of a surrogate pair", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it(
    "ai_detector's text_preview",
    async () => {
      const text = `Hello there friend. ${EMOJI.repeat(200)}`;
      const body = await answer("/api/skills/ai-detector", { text });
      // 199 units at most before the "…": 20 of text, 89 emoji (the 90th does not fit whole).
      expect(body.text_preview).toBe(`Hello there friend. ${EMOJI.repeat(89)}…`);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "ai_detector's text_preview keeps a flag or a ZWJ family whole, or leaves it out",
    async () => {
      // The audit: 197 letters then 🇫🇷 previewed as 197 letters and a lone regional indicator 🇫.
      const flags = await answer("/api/skills/ai-detector", {
        text: `${"x".repeat(197)}\u{1F1EB}\u{1F1F7}\u{1F1E9}\u{1F1EA} more words here.`,
      });
      expect(flags.text_preview).toBe(`${"x".repeat(197)}…`);
      const family = "\u{1F468}\u200d\u{1F469}\u200d\u{1F467}\u200d\u{1F466}";
      const families = await answer("/api/skills/ai-detector", {
        text: `${"x".repeat(190)}${family.repeat(3)} tail text here.`,
      });
      expect(families.text_preview).toBe(`${"x".repeat(190)}…`);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "json_schema_validate's quoted key",
    async () => {
      const body = await answer("/api/skills/json-schema-validate", {
        instance: 1,
        schema: { properties: { [EMOJI.repeat(100)]: 5 } },
      });
      expect(body.errors[0].message).toContain(`#/properties/${EMOJI.repeat(31)}…: a schema must be`);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "seo's advice quoting headings, image sources and the canonical link",
    async () => {
      const path = `/pages/surrogates-${crypto.randomUUID()}.html`;
      const real = globalThis.fetch;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
        const req = new Request(input, init);
        if (req.url === `${FIXTURE}${path}`)
          return new Response(
            `<html><head><link rel="canonical" href="ftp://${EMOJI.repeat(40)}"></head><body>` +
              `<h3>${EMOJI.repeat(20)}</h3><h1>${EMOJI.repeat(20)}</h1><h1>b</h1><img src="${EMOJI.repeat(30)}"></body></html>`,
            { headers: { "content-type": "text/html; charset=utf-8" } },
          );
        return real(input, init);
      });
      const body = await answer("/api/skills/seo", { url: `${FIXTURE}${path}` });
      const advice = (body.recommendations as string[]).join("\n");
      // 29 units at most before the "…" for a heading, 39 for an image, 59 for the canonical link.
      expect(advice).toContain(`"${EMOJI.repeat(14)}…", "b"`);
      expect(advice).toContain(`<h3> "${EMOJI.repeat(14)}…", not <h1>`);
      expect(advice).toContain(`(${EMOJI.repeat(19)}…)`);
      expect(advice).toContain(`"ftp://${EMOJI.repeat(26)}…" is not a valid`);
    },
    SKILL_TEST_TIMEOUT,
  );
});
