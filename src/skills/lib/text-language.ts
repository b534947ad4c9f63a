import { franc } from "franc";
import * as stopwordLists from "stopword";
import { ENGLISH_STOPWORDS, foldTerm } from "./keywords";

/**
 * A text's language and the stopwords to remove from it. franc (trigram profiles of 187
 * languages, script detection first) reads the text's first SAMPLE_CHARS characters. It is asked
 * only about the 56 languages the `stopword` package has a list for, so a text is never put in a
 * language whose stopwords could not be removed anyway. franc-min (82 languages, 55 KB gzip) has
 * no Catalan, Danish, Finnish, Hebrew, Slovak or Norwegian profile; eld and tinyld were faster
 * per call but 460 KB / 257 KB gzip. franc and the lists (~175 KB gzip) load with this module on
 * the first call that needs them, never at start-up (keyword_extract, seo's keyword check and
 * ai_detector import it).
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
/** Lists with no franc language: Breton, Basque, Irish, Latin (franc has no profile for them) and
 * the variants a detector cannot tell apart (porBr, lggNd); also the package's digits (_123). */
const NOT_DETECTED = new Set(["bre", "eus", "gle", "lat", "lgg", "lggNd", "porBr", "_123"]);
const CANDIDATES = Object.keys(lists)
  .filter((k) => Array.isArray(lists[k]) && !NOT_DETECTED.has(k))
  .map((k) => Object.entries(LIST_OF).find(([, list]) => list === k)?.[0] ?? k);

/**
 * Shorter text is "und" (English stopwords only): franc's own floor, 10 characters, read
 * "Hola, ¿cómo estás?" as Esperanto and "Guten Morgen" as Norwegian.
 */
const MIN_CHARS = 20;
/**
 * franc compares every distinct trigram of what it reads with every candidate's profile: its own
 * 2,048 characters cost ~2 ms a call (node, mixed Latin text, ~900 trigrams), 35 times
 * keyword_extract's own 0.057 ms on 1 KB; 512 cost ~0.7 ms and named each sample paragraph's
 * language as 2,048 did (test/fixtures/language-samples.ts, cut to 256 and 512 characters).
 */
const SAMPLE_CHARS = 512;
const byLanguage = new Map<string, ReadonlySet<string>>([["eng", ENGLISH_STOPWORDS]]);

export interface TextLanguage {
  /** ISO 639-3 code of the stopword list used ("zho", "ara"), or "und" when not detected. */
  language: string;
  /**
   * That language's stopwords and English's: a French page quoting "the" and "and" has them
   * removed too. Undetected text (too short) gets English's alone, as before detection existed.
   */
  stopwords: ReadonlySet<string>;
}

export function textLanguage(text: string): TextLanguage {
  const code = franc(text.slice(0, SAMPLE_CHARS), { only: CANDIDATES, minLength: MIN_CHARS });
  if (code === "und") return { language: "und", stopwords: ENGLISH_STOPWORDS };
  const language = LIST_OF[code] ?? code;
  let stopwords = byLanguage.get(language);
  if (stopwords === undefined) {
    // Folded as the terms they are compared with are (a list may hold "Aber" or a decomposed letter).
    stopwords = new Set([...ENGLISH_STOPWORDS, ...(lists[language] ?? []).map(foldTerm)]);
    byLanguage.set(language, stopwords);
  }
  return { language, stopwords };
}
