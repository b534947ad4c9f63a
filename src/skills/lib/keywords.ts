import { eng } from "stopword";

const STOPWORDS = new Set<string>(eng);
const HAS_LETTER = /\p{L}/u;
// One segmenter per isolate: Intl.Segmenter implements Unicode word boundaries (UAX #29), CJK included.
let segmenter: Intl.Segmenter | undefined;

/** Counts meaningful terms: word-like segments, lowercased, minus stopwords, numbers and lone ASCII letters. */
export function extractKeywords(text: string, limit: number) {
  segmenter ??= new Intl.Segmenter("und", { granularity: "word" });
  const counts = new Map<string, number>();
  let tokens = 0;
  for (const seg of segmenter.segment(text)) {
    if (!seg.isWordLike) continue;
    tokens++;
    const term = seg.segment.toLowerCase().replaceAll("\u2019", "'");
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
