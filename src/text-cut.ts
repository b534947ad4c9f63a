/**
 * Cuts of user and page text that answers quote. A cut at a UTF-16 unit count can fall inside a
 * surrogate pair (an emoji, an astral character): its high half alone is no character, JSON writes
 * it as "\ud83d", and strict decoders (serde_json, Swift's JSONDecoder) refuse the whole answer.
 * These never keep a high surrogate as their last unit.
 */

/** `text` cut to at most `max` UTF-16 units, a surrogate pair never split (it goes whole). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

let graphemes: Intl.Segmenter | undefined;

/**
 * `text` cut to at most `max` UTF-16 units at a grapheme cluster boundary (UAX #29): no flag left
 * as one regional indicator, no ZWJ family cut short, no letter without its marks. A first cluster
 * longer than `max` (a letter under thousands of marks) is cut as `cut` cuts.
 */
export function cutGraphemes(text: string, max: number): string {
  if (text.length <= max) return text;
  graphemes ??= new Intl.Segmenter("und", { granularity: "grapheme" });
  // The cluster holding the unit at `max` starts at the last boundary at or before it.
  const start = graphemes.segment(text).containing(max)?.index ?? max;
  return start > 0 ? text.slice(0, start) : cut(text, max);
}

/**
 * `text` as it is if it has at most `max` units, else cut to `max - 1` of them and "…", by `cutTo`
 * (`cut`: whole code points; `cutGraphemes`: whole characters as a reader sees them).
 */
export const shorten = (text: string, max: number, cutTo = cut): string =>
  text.length > max ? `${cutTo(text, max - 1)}…` : text;

/**
 * Code points in a string (a surrogate pair is one, a lone surrogate one), counted in place:
 * `[...s].length` made an array of one string per code point (html_clean's 6.6 MB answer: 64 MB).
 */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * `text`'s first `max` code points, where README's "characters" (pydantic's string lengths, the
 * 422's echo) are code points: `cut` at 256 units kept 128 emoji.
 */
export function cutCodePoints(text: string, max: number): string {
  let i = 0;
  for (let n = 0; n < max && i < text.length; n++) {
    const c = text.charCodeAt(i);
    const d = text.charCodeAt(i + 1);
    i += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, i);
}
