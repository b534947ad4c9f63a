import { francAll } from "franc";
import * as stopwordLists from "stopword";
import { countTerms, ENGLISH_STOPWORDS, foldTerm, rankTerms, type TermCounts } from "./keywords";

/**
 * A text's language and the stopwords to remove from it, decided over the whole text.
 *
 * First, stopword coverage: the terms keyword_extract counts in its one segmenter pass are looked
 * up in an index of every `stopword` list (term -> lists, built once per isolate on first use),
 * and the list that covers the most word tokens names the language, when it covers enough of
 * them, with at least three distinct stopwords, and clearly more than the runner-up (a French page
 * quoting an English menu, or the other way round, is the language most of its words are in; an
 * English list of goods repeating "fire" and "store", both in Danish's list, is not Danish). franc
 * decides only when no list does (Hebrew's prefixed words match no list; Portuguese and Galician
 * share most short words; a listicle of nouns has few stopwords; English and French paragraphs in
 * turn have no clear list): on windows of at most 512 characters, one per 512 of text up to four,
 * spread over it, the language it names clearly ahead of the next in more than half the windows
 * (3 of 4, 2 of 3, both of 2, the one of 1), "und" otherwise. So a text half in one language, half
 * in another is "und" only when the windows split evenly: 200,000 characters of French and English
 * paragraphs in turn, French first, are "fra" (3 windows to 1), English first "und" (2 to 2).
 *
 * franc's trigrams are not sure of stopword-poor text: of 20 English noun lists of 110-130
 * characters (test/fixtures/english-noun-lists.ts) it put 16 first as French, Danish, Norwegian,
 * Catalan, Romanian or Estonian, often clearly ahead. So a language franc names is reported, but
 * its stopwords are removed (with English's) only when its own list covers 15% of the tokens and
 * more than English's (a close call such as Portuguese beside Galician); otherwise English's alone,
 * as for "und", and keyword_extract says "und". So
 * keyword_extract and seo, which want the stopwords only, do not ask franc when no list covers 15%
 * (its answer could not change them) and say "und" (languageOf's forStopwords). And
 * `clear`, what ai_detector judges English by, is true for a coverage win, or for English franc
 * names clearly ahead in more than half of two or more windows, or first in every window while
 * no other list covers two of its tokens (a German listing of English loanwords, read as
 * English, has "mit", "und", "für"; a listicle of English nouns none).
 *
 * Measured against franc on the first 512 characters (scripts/bench/language-accuracy.ts, one node 22
 * process on a shared 2-core machine, medians of 9 rounds):
 *   test/fixtures/language-samples.ts's 14 paragraphs: both 14 right;
 *   their 201 windows of 64/128/256 characters: franc-512 187 right, 14 wrong; coverage 191 right,
 *   2 und, 8 wrong (Portuguese windows read as Galician by both, Russian as Bulgarian, a French
 *   64-character window as Esperanto, a Spanish one as French);
 *   15 English phrases of 20-50 characters: franc-512 10 eng, 5 wrong (cat, fra, afr, nld, fra);
 *   coverage 4 eng, 11 und, none wrong (9 eng before three distinct stopwords were asked for: "the",
 *   "and" alone no longer decide; und removes English's stopwords as eng does);
 *   the 20 noun lists: 3 eng and clear, 1 eng, 4 und, 12 another language not clear, none losing
 *   a word (every franc guess was clear before: 16 another language, 3 lost words);
 *   keyword_extract 1 KB English: 0.33 ms without detection, franc-512 1.01 ms, coverage 0.35 ms
 *   (stopword-rich text, where a list decides and franc is not asked).
 * Stopword-poor text is franc's (textLanguage alone, medians of 9 rounds of 50, same machine):
 * 1 KB ~1.3 ms (2 windows), 2 KB and over ~3.5 ms (4 windows, ~0.9 ms each); franc handed 2 KB
 * whole, as it was up to 2,048 characters, ~2.0 ms here (5.6 ms measured in review).
 * The index (~11,000 terms of 56 lists) is built once per isolate: ~30 ms in node.
 *
 * franc is asked only about the languages the `stopword` package has a list for, so a text is
 * never put in a language without one. franc-min (82 languages, 55 KB gzip) has no Catalan,
 * Danish, Finnish, Hebrew, Slovak or Norwegian profile. franc and the lists (~175 KB gzip) load
 * with this module on the first call that needs them, never at start-up. In the built Worker their
 * data (franc/data.js, every list but English's) is not JavaScript: workerd compiles every
 * JavaScript module at load, imported or not, so scripts/build-worker.mjs ships it as JSON Data
 * modules, parsed when this module is first imported (docs/PERFORMANCE.md, "Stop 38").
 */

/** franc's codes (ISO 639-3, individual languages) for the `stopword` lists named by a macrolanguage or script. */
const LIST_OF: Record<string, string> = {
  arb: "ara",
  cmn: "zho",
  ekk: "est",
  lvs: "lav",
  pes: "fas",
  zlm: "msa",
  swh: "swa",
  pan: "panGu",
  ckb: "kur",
};

const lists = stopwordLists as unknown as Record<string, readonly string[] | undefined>;
/**
 * Lists no language is named by: Breton, Basque, Irish, Latin (franc has no profile for them, and
 * Breton's list, holding "a", "da", "en", "la", "ha", read Catalan text as Breton), the variants no
 * count can tell apart (porBr, lggNd) and the package's digits (_123).
 */
const NOT_DETECTED = new Set(["bre", "eus", "gle", "lat", "lgg", "lggNd", "porBr", "_123"]);
const LISTS = Object.keys(lists).filter((k) => Array.isArray(lists[k]) && !NOT_DETECTED.has(k));
export const FRANC_CANDIDATES = LISTS.map(
  (k) => Object.entries(LIST_OF).find(([, list]) => list === k)?.[0] ?? k,
);

/**
 * The coverage decision: the best list covers at least MIN_COVERED tokens, MIN_SHARE of all
 * tokens and MIN_TERMS distinct terms, and the runner-up at most MAX_RUNNER_UP of what it covers.
 * The sample paragraphs: English 38 of 73 tokens (Finnish's list next, 19), French 37 of 79 (Catalan 25), Spanish 34 of 75
 * (Galician 27), Portuguese 32 of 75 with Galician 30, too close: franc decides. A short phrase
 * with one stopword, or as many of two lists', is "und" (franc alone read 7 of 15 English phrases
 * of 20-50 characters as Catalan, French, Sotho, Esperanto or Afrikaans).
 */
const MIN_COVERED = 2;
const MIN_TERMS = 3;
const MIN_SHARE = 0.15;
const MAX_RUNNER_UP = 0.85;
/**
 * franc's fallback: text under FRANC_MIN_CHARS characters is "und", and so is a guess whose
 * runner-up scores above FRANC_MAX_RUNNER_UP (francAll scores 1 for the best, less for others;
 * Portuguese's paragraph has Galician at 0.971, a 128-character window of it 0.995). A text over
 * FRANC_SAMPLES windows of at most FRANC_WINDOW characters (see byFranc for how they vote; franc
 * compares every distinct trigram it reads with every profile: ~0.9 ms a window of stopword-poor
 * text).
 */
const FRANC_MIN_CHARS = 60;
const FRANC_MAX_RUNNER_UP = 0.98;
const FRANC_WINDOW = 512;
const FRANC_SAMPLES = 4;

let index: Map<string, number[]> | undefined;
/** Every folded stopword -> the lists (indices into LISTS) holding it. */
function stopwordIndex() {
  if (index) return index;
  index = new Map();
  for (const [i, code] of LISTS.entries()) {
    // Folded as the terms they are compared with are (a list may hold "Aber" or a decomposed letter).
    for (const word of new Set((lists[code] ?? []).map(foldTerm))) {
      const holders = index.get(word);
      if (holders) holders.push(i);
      else index.set(word, [i]);
    }
  }
  return index;
}

const byLanguage = new Map<string, ReadonlySet<string>>([["eng", ENGLISH_STOPWORDS]]);

export interface TextLanguage {
  /** ISO 639-3 code of the language read ("zho", "ara"), or "und" when not told. */
  language: string;
  /**
   * True when a stopword list covered clearly more of the text's tokens than any other, or for
   * English franc named (see the module comment); false otherwise. ai_detector judges only English
   * that is clear.
   */
  clear: boolean;
  /**
   * That language's stopwords and English's: a French page quoting "the" and "and" has them
   * removed too. Undetected text, and a franc guess whose own list covers under 15% of the
   * tokens, gets English's alone.
   */
  stopwords: ReadonlySet<string>;
}

function stopwordsOf(language: string): ReadonlySet<string> {
  let stopwords = byLanguage.get(language);
  if (stopwords === undefined) {
    stopwords = new Set([...ENGLISH_STOPWORDS, ...(lists[language] ?? []).map(foldTerm)]);
    byLanguage.set(language, stopwords);
  }
  return stopwords;
}

const ENGLISH_LIST = LISTS.indexOf("eng");

/** Whether list `i` covers clearly more of the text than English's does, counting only its own words. */
const beatsEnglish = (covered: Coverage, i: number) =>
  i === ENGLISH_LIST ||
  (covered.get(ENGLISH_LIST)?.tokens ?? 0) <= MAX_RUNNER_UP * (covered.get(i)?.own ?? 0);

/**
 * Tokens and distinct terms covered by each list (indices into LISTS) holding one of the text's
 * terms, and `own` / `ownTerms`: those English's list does not hold. A word both hold ("for",
 * "at", "under" are Danish too; "is", "in", "my", "was" Afrikaans and Dutch) counts for both, but a
 * list must beat English on its own words (beatsEnglish, byCoverage): counted for Danish alone, they carried
 * English lists of goods ("fire station store: ... ladders for the crew") to a Danish win that
 * removed "fire" and "store"; counted for English alone, they made Afrikaans English.
 */
function coverage({ counts }: TermCounts) {
  const idx = stopwordIndex();
  const covered = new Map<number, { tokens: number; terms: number; own: number; ownTerms: number }>();
  for (const [term, n] of counts) {
    const own = ENGLISH_STOPWORDS.has(term) ? 0 : n;
    for (const i of idx.get(term) ?? []) {
      const c = covered.get(i);
      const ownTerm = own > 0 ? 1 : 0;
      if (c)
        [c.tokens, c.terms, c.own, c.ownTerms] = [
          c.tokens + n,
          c.terms + 1,
          c.own + own,
          c.ownTerms + ownTerm,
        ];
      else covered.set(i, { tokens: n, terms: 1, own, ownTerms: ownTerm });
    }
  }
  return covered;
}
type Coverage = ReturnType<typeof coverage>;

/** The list covering most tokens, if it covers enough, with enough distinct terms, clearly more than the next. */
function byCoverage(covered: Coverage, tokens: number): string | undefined {
  let best: number | undefined;
  let top = 0;
  let next = 0;
  for (const [i, { tokens: n }] of covered) {
    if (n > top) [best, top, next] = [i, n, top];
    else if (n > next) next = n;
  }
  if (best === undefined || top < MIN_COVERED || top < MIN_SHARE * tokens || next > MAX_RUNNER_UP * top)
    return undefined;
  // Another list's distinct terms count without those English's holds: "for" and "at" gave
  // Danish its third beside "fire" and "store" ("Fire hoses, fire doors ... for the store").
  const won = covered.get(best);
  const distinct = best === ENGLISH_LIST ? won?.terms : won?.ownTerms;
  if ((distinct ?? 0) < MIN_TERMS || !beatsEnglish(covered, best)) return undefined;
  return LISTS[best];
}

/**
 * Windows of at most FRANC_WINDOW characters, as many as the text fills up to FRANC_SAMPLES,
 * spread from its start to its end, however short the text: franc handed anything up to 2,048
 * characters read it whole, so the answer changed at 2,049 characters, where windows began.
 */
function spreadSamples(text: string) {
  if (text.length <= FRANC_WINDOW) return [text];
  const count = Math.min(FRANC_SAMPLES, Math.ceil(text.length / FRANC_WINDOW));
  const step = (text.length - FRANC_WINDOW) / (count - 1);
  return Array.from({ length: count }, (_, i) => {
    const at = Math.round(i * step);
    return text.slice(at, at + FRANC_WINDOW);
  });
}

/** franc's best guess for a window, and whether it is clearly ahead of the next. */
function francGuess(sample: string): { guess: string; ahead: boolean } {
  const [best, next] = francAll(sample, { only: FRANC_CANDIDATES, minLength: FRANC_MIN_CHARS });
  if (best === undefined || best[0] === "und") return { guess: "und", ahead: false };
  return { guess: LIST_OF[best[0]] ?? best[0], ahead: next === undefined || next[1] <= FRANC_MAX_RUNNER_UP };
}

/**
 * `majority`: the language franc names clearly ahead in more than half the windows (3 of 4, 2 of
 * 3, both of 2, the one of 1), "und" otherwise; `every`: the one it guesses first in every window,
 * however close the runner-up (stopword-poor English has French at 0.98).
 */
function byFranc(text: string): { majority: string; windows: number; every?: string } {
  if (text.length < FRANC_MIN_CHARS) return { majority: "und", windows: 0 };
  const guesses = spreadSamples(text).map(francGuess);
  const votes = new Map<string, number>();
  for (const { guess, ahead } of guesses) if (ahead) votes.set(guess, (votes.get(guess) ?? 0) + 1);
  const majority = [...votes].find(([, n]) => n * 2 > guesses.length)?.[0] ?? "und";
  const first = guesses[0]?.guess;
  const every = guesses.every(({ guess }) => guess === first) ? first : undefined;
  return { majority, windows: guesses.length, every };
}

/** The language and whether it is clear, its stopwords removed with English's. */
const answer = (language: string, clear: boolean, removeOwn = true): TextLanguage => ({
  language,
  clear,
  stopwords: language === "und" || !removeOwn ? ENGLISH_STOPWORDS : stopwordsOf(language),
});

/**
 * The language of a text whose terms were counted (countTerms): see the module comment.
 * `forStopwords`: the caller wants the stopwords only (keyword_extract, seo), so franc is not asked
 * when no list covers MIN_SHARE of the tokens: its answer could not change what is removed (a
 * franc-named list is used only at that share), and on stopword-poor Latin text (product lists,
 * identifiers, the bench's syllable prose) its windows cost ~1 ms each, 20 times the extraction.
 */
export function languageOf(terms: TermCounts, text: string, forStopwords = false): TextLanguage {
  const covered = coverage(terms);
  const listed = byCoverage(covered, terms.tokens);
  if (listed !== undefined) return answer(listed, true);
  if (forStopwords && ![...covered.values()].some((c) => c.tokens >= MIN_SHARE * terms.tokens))
    return answer("und", false);
  const { majority, windows, every } = byFranc(text);
  // ai_detector judges English franc names clearly ahead in more than half of two or more windows,
  // or first in every window while no other list covers MIN_COVERED tokens: franc puts
  // stopword-poor English first with French at 0.98, and a German listing of English loanwords
  // first as English, where the German list covers its "mit", "und", "für".
  if ((windows >= 2 && majority === "eng") || (every === "eng" && !otherListCovers(covered, "eng")))
    return answer("eng", true);
  if (majority === "und") return answer("und", false);
  // franc's trigrams name stopword-poor English Danish or French as often as not, so its guess has
  // its stopwords removed only when its own list covers MIN_SHARE of the tokens (Portuguese read
  // beside Galician), never English content words such as Danish's "fire" and "store".
  // Nor when it does not beat English on its own words (beatsEnglish): "Men's store: fire sale ...
  // for men", franc's Danish, has Danish's fire, store, men against English's on, and, for, at.
  const list = LISTS.indexOf(majority);
  const removed =
    (covered.get(list)?.tokens ?? 0) >= MIN_SHARE * terms.tokens && list >= 0 && beatsEnglish(covered, list);
  // keyword_extract names the language whose stopwords it removed: "und" when English's alone were.
  return forStopwords && !removed ? answer("und", false) : answer(majority, false, removed);
}

/** Whether a list other than `language`'s covers MIN_COVERED of the text's tokens. */
const otherListCovers = (covered: Coverage, language: string) =>
  [...covered].some(([i, c]) => LISTS[i] !== language && c.tokens >= MIN_COVERED);

export const textLanguage = (text: string): TextLanguage => languageOf(countTerms(text), text);

/** keyword_extract's terms in one segmenter pass: counted, the language read from them, ranked. */
export function keywordsInLanguage(text: string, limit: number) {
  const terms = countTerms(text);
  const { language, stopwords } = languageOf(terms, text, true);
  return { ...rankTerms(terms, limit, stopwords), language };
}
