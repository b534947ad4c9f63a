import { extractKeywords, foldTerm } from "./keywords";
import { cut, type Scan } from "./seo-scan";
import { wordsOf } from "./text-stats";

/** The keyword part of the SEO audit: which keywords, where each appears, and how dense it is. */

const DENSITY = [0.5, 3] as const;
const MAX_KEYWORDS = 20;

export interface KeywordReport {
  keyword: string;
  in_title: boolean;
  in_h1: boolean;
  in_description: boolean;
  body_count: number;
  density_percent: number;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
function occurrences(phrase: string, text: string) {
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRe(phrase)}(?![\\p{L}\\p{N}])`, "giu");
  return text.match(re)?.length ?? 0;
}

/**
 * The caller's keywords as checked: spaces collapsed, trimmed, folded as terms are, at most 100 characters,
 * deduplicated, the first 20. One pass that stops at 20: the list has no length bound, and an
 * `indexOf` per entry made 600k keywords (one 5 MiB body) a quadratic three minutes.
 */
export function givenKeywords(given: string[] | null): string[] {
  const seen = new Set<string>();
  for (const k of given ?? []) {
    // Cut before the fold too: a keyword may be megabytes long, and only its first 100 count.
    const cleaned = cut(foldTerm(cut(k.replace(/\s+/g, " ").trim(), 400)), 100);
    if (cleaned !== "") seen.add(cleaned);
    if (seen.size === MAX_KEYWORDS) break;
  }
  return [...seen];
}

/**
 * Characters of text the word count and the keyword checks read (keyword_extract's own field
 * bound): Intl.Segmenter and the keyword searches over the whole of a 2 MiB page took 1.4 s, and
 * 2.9 s with 20 keywords.
 */
export const MAX_COUNTED_CHARS = 200_000;

/** The body text the keyword checks read, its words (densities are shares of them), and the page's. */
interface CountedBody {
  text: string;
  words: number;
  /** The page's words: `words` itself, or past MAX_COUNTED_CHARS those scaled to the text's length. */
  estimate: number;
}

let wordSeg: Intl.Segmenter | undefined;

/** The page's first MAX_COUNTED_CHARS characters of text, counted in words as text-stats' wordsOf counts. */
export function countBody(text: string): CountedBody {
  const counted = cut(text, MAX_COUNTED_CHARS);
  wordSeg ??= new Intl.Segmenter("en", { granularity: "word" });
  let words = 0;
  for (const seg of wordSeg.segment(counted)) if (seg.isWordLike) words++;
  const estimate =
    counted.length === text.length ? words : Math.round((words * text.length) / counted.length);
  return { text: counted, words, estimate };
}

/**
 * keyword_extract's ranking in the language of the text (lib/text-language.ts's keywordsInLanguage):
 * seo.ts loads it only when the audit extracts keywords, so a call with the caller's keywords or
 * answered from cache never loads the detector. Without it, English stopwords alone are removed.
 */
export type KeywordsOf = (text: string, limit: number) => { keywords: { term: string }[] };

/**
 * The caller's keywords (givenKeywords), or the top five of the title and counted body when none,
 * without the stopwords of the language most of that text is in. The text is asked, not
 * <html lang>: templates ship lang="en" on pages of any language, and the text is what the
 * keywords come from.
 */
function chooseKeywords(
  title: string,
  body: CountedBody,
  given: string[] | null,
  keywordsOf: KeywordsOf = extractKeywords,
) {
  const cleaned = givenKeywords(given);
  if (cleaned.length > 0) return { keywords: cleaned, extracted: false };
  const keywords = keywordsOf(`${title} ${body.text}`, 5).keywords.map((k) => k.term);
  return { keywords, extracted: true };
}

/** Lower-cased places a keyword is looked for. */
interface Places {
  title: string;
  h1: string;
  description: string;
  body: string;
}

function reportKeyword(keyword: string, lower: Places, words: number): KeywordReport {
  const count = occurrences(keyword, lower.body);
  const span = Math.max(1, wordsOf(keyword).length);
  return {
    keyword,
    in_title: occurrences(keyword, lower.title) > 0,
    in_h1: occurrences(keyword, lower.h1) > 0,
    in_description: occurrences(keyword, lower.description) > 0,
    body_count: count,
    density_percent: words === 0 ? 0 : Math.round(((count * span) / words) * 10000) / 100,
  };
}

/** Up to 10 points for one keyword (title 3, h1 3, description 2, density in range 2), and advice. */
function scoreKeyword(r: KeywordReport, recs: string[]) {
  const inRange = r.density_percent >= DENSITY[0] && r.density_percent <= DENSITY[1];
  const missing = [
    !r.in_title && "the title",
    !r.in_h1 && "the <h1>",
    !r.in_description && "the meta description",
  ]
    .filter(Boolean)
    .join(", ");
  if (missing) recs.push(`Use the keyword "${r.keyword}" in ${missing}.`);
  if (r.body_count === 0) recs.push(`The keyword "${r.keyword}" does not occur in the body text; cover it.`);
  // Stuffing needs repetition: one or two mentions on a short page are not over-optimisation.
  else if (r.density_percent > DENSITY[1] && r.body_count >= 3)
    recs.push(
      `The keyword "${r.keyword}" makes up ${r.density_percent}% of the text; reduce repetition below ${DENSITY[1]}%.`,
    );
  else if (r.density_percent < DENSITY[0])
    recs.push(
      `The keyword "${r.keyword}" is ${r.density_percent}% of the text; mention it a little more (${DENSITY[0]}-${DENSITY[1]}%).`,
    );
  return (r.in_title ? 3 : 0) + (r.in_h1 ? 3 : 0) + (r.in_description ? 2 : 0) + (inRange ? 2 : 0);
}

/**
 * The keyword check: its points (the mean over keywords, out of 10), reports and advice. Every
 * place is read up to MAX_COUNTED_CHARS (a title, a description or the h1s can each be as long
 * as the page).
 */
export function checkKeywords(
  s: Scan,
  h1Text: string,
  body: CountedBody,
  given: string[] | null,
  recs: string[],
  keywordsOf?: KeywordsOf,
) {
  const title = cut(s.title ?? "", MAX_COUNTED_CHARS);
  const { keywords, extracted } = chooseKeywords(title, body, given, keywordsOf);
  // Folded as the extracted terms are (keywords.ts): "İstanbul" on the page is the term "istanbul".
  const lower: Places = {
    title: foldTerm(title),
    h1: foldTerm(cut(h1Text, MAX_COUNTED_CHARS)),
    description: foldTerm(cut(s.description ?? "", MAX_COUNTED_CHARS)),
    body: foldTerm(body.text),
  };
  const reports = keywords.map((k) => reportKeyword(k, lower, body.words));
  let total = 0;
  for (const r of reports) total += scoreKeyword(r, recs);
  const points = reports.length === 0 ? 0 : Math.round((total / reports.length) * 10) / 10;
  return { keywords, extracted, reports, points };
}
