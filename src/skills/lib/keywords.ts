import { eng } from "stopword/src/stopwords_eng.js";

export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set(eng);
const HAS_LETTER = /\p{L}/u;
// One segmenter per isolate: Intl.Segmenter implements Unicode word boundaries (UAX #29), CJK included.
let segmenter: Intl.Segmenter | undefined;

/**
 * Invisible format characters (\p{Cf}): bidi controls, LRM/RLM, ZWJ, ZWNJ, the word joiner, the
 * soft hyphen, a BOM. Word segmentation keeps them inside a word, so "price", "\u202aprice\u202c"
 * and "pri\u00adce" were three terms. U+200B (zero width space) is the one Cf that separates words
 * (UAX #29): it is kept, since seo folds whole texts and dropping it would join two words there.
 */
const FORMAT_CHARACTERS = /(?!\u200b)\p{Cf}/gu;
const NON_ASCII = /[\u0080-\uffff]/;
/**
 * Runs of more than 30 marks are cut to 30 before NFC (UAX #15's stream-safe bound): the runtime's
 * canonical reordering is insertion-sorted, quadratic in a run of alternating combining classes
 * ("a" + "\u0301\u0316" × 50,000: 21 s in workerd for one keyword_extract call). No text of a
 * real script stacks more than a few marks on a letter.
 */
const LONG_MARK_RUN = /(\p{M}{30})\p{M}+/gu;

/**
 * A word as its term: format characters dropped, composed (NFC: "Cafe\u0301" and "café" are one
 * term), lowercased, with a typographic apostrophe as "'". "İ" (U+0130) lowercases to "i" + U+0307
 * (its dot as a combining mark, the only letter whose lowercase is two), which made "İstanbul" a
 * term of its own beside "istanbul": it is read as "i" (after NFC, so "I\u0307" is too). Other
 * marks stay ("café" is not "cafe"), and compatibility forms are not folded ("ｐｒｉｃｅ", "ﬁle").
 */
export const foldTerm = (word: string) =>
  // An ASCII word has nothing to drop, compose or replace: the other steps doubled the fold's time
  // (38,000 words of a 200,000-character text: ~7 to ~15 ms in node), and most words are ASCII.
  NON_ASCII.test(word)
    ? word
        .replace(FORMAT_CHARACTERS, "")
        .replace(LONG_MARK_RUN, "$1")
        .normalize("NFC")
        .replaceAll("\u0130", "i")
        .toLowerCase()
        .replaceAll("\u2019", "'")
    : word.toLowerCase();

/** Every word token of a text as its folded term, with its count; `tokens` counts them all. */
export interface TermCounts {
  counts: ReadonlyMap<string, number>;
  tokens: number;
}

/**
 * The one segmenter pass of a text: keyword_extract ranks these counts and lib/text-language.ts
 * reads the text's language from the same ones (which stopword list covers most tokens).
 */
export function countTerms(text: string): TermCounts {
  segmenter ??= new Intl.Segmenter("und", { granularity: "word" });
  // Words are counted as written, then each distinct one folded once: folding a non-ASCII word
  // costs ~1-2 µs, and 200,000 characters of CJK are ~200,000 words (~0.4 s of folds in node,
  // for ~20,000 distinct words at most). Terms enter `counts` in the order they first occur.
  const written = new Map<string, number>();
  let tokens = 0;
  for (const seg of segmenter.segment(text)) {
    if (!seg.isWordLike) continue;
    tokens++;
    written.set(seg.segment, (written.get(seg.segment) ?? 0) + 1);
  }
  const counts = new Map<string, number>();
  for (const [word, n] of written) {
    const term = foldTerm(word);
    counts.set(term, (counts.get(term) ?? 0) + n);
  }
  return { counts, tokens };
}

/**
 * Meaningful terms ranked by count, then term: stopwords (English's unless the caller passes its
 * language's, lib/text-language.ts), numbers and lone ASCII letters left out.
 */
export function rankTerms({ counts, tokens }: TermCounts, limit: number, stopwords = ENGLISH_STOPWORDS) {
  const kept = [...counts].filter(
    ([term]) => !stopwords.has(term) && HAS_LETTER.test(term) && !(term.length === 1 && term < "\u0080"),
  );
  const ranked = kept.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    keywords: ranked.slice(0, limit).map(([term, count]) => ({ term, count })),
    unique_terms: kept.length,
    tokens,
  };
}

/** English stopwords only: research's query terms, and seo's when no detector is passed. */
export const extractKeywords = (text: string, limit: number) => rankTerms(countTerms(text), limit);
