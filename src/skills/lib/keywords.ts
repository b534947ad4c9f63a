import { eng } from "stopword";

const STOPWORDS = new Set<string>(eng);
const HAS_LETTER = /\p{L}/u;
// One segmenter per isolate: Intl.Segmenter implements Unicode word boundaries (UAX #29), CJK included.
let segmenter: Intl.Segmenter | undefined;

/**
 * A word as its term: lowercased, with a typographic apostrophe as "'". "İ" (U+0130) lowercases
 * to "i" + U+0307 (its dot as a combining mark, the only letter whose lowercase is two), which made
 * "İstanbul" a term of its own beside "istanbul": it is read as "i". Other marks stay ("café" is
 * not "cafe").
 */
export const foldTerm = (word: string) =>
  word.replaceAll("\u0130", "i").toLowerCase().replaceAll("\u2019", "'");

/** Counts meaningful terms: word-like segments, lowercased, minus stopwords, numbers and lone ASCII letters. */
export function extractKeywords(text: string, limit: number) {
  segmenter ??= new Intl.Segmenter("und", { granularity: "word" });
  const counts = new Map<string, number>();
  let tokens = 0;
  for (const seg of segmenter.segment(text)) {
    if (!seg.isWordLike) continue;
    tokens++;
    const term = foldTerm(seg.segment);
    if (STOPWORDS.has(term) || !HAS_LETTER.test(term) || (term.length === 1 && term < "\u0080")) continue;
    counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    keywords: ranked.slice(0, limit).map(([term, count]) => ({ term, count })),
    unique_terms: counts.size,
    tokens,
  };
}
