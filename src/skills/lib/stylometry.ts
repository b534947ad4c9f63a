import { ENGLISH_STOPWORDS } from "./keywords";
import { sentencesOf, wordsOf } from "./text-stats";

/**
 * Stylometric estimate of machine-written English text. Each signal is mapped to a score in
 * [-1, 1] (positive = more machine-like), the scores are combined with fixed weights into z, and
 * ai = 0.5 + (sigmoid(5·z) − 0.5) · min(1, words / 150). The weights and thresholds are hand-set
 * heuristics, not a trained classifier; docs/ANALYTIC_SKILLS.md states the limits.
 */

export const SIGNAL_WEIGHTS = {
  burstiness: 0.3,
  sentence_length: 0.1,
  lexical_diversity: 0.1,
  repetition: 0.15,
  punctuation: 0.1,
  function_words: 0.25,
} as const;

const FIRST_PERSON = new Set(["i", "me", "my", "mine", "myself", "we", "us", "our", "ours"]);
// Discourse connectives that open sentences far more often in generated prose.
const CONNECTIVES = [
  "furthermore",
  "moreover",
  "additionally",
  "in addition",
  "in conclusion",
  "overall",
  "consequently",
  "however",
  "it is important to note",
  "notably",
  "ultimately",
  "in summary",
];
const FULL_LENGTH_WORDS = 150;
const MIN_WORDS_FOR_VERDICT = 40;

const clamp = (x: number) => Math.max(-1, Math.min(1, x));
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const per100 = (n: number, words: number) => (words === 0 ? 0 : (100 * n) / words);

/** Moving-average type-token ratio over windows of 50 words (plain TTR for shorter texts). */
function mattr(tokens: string[], window = 50) {
  if (tokens.length === 0) return 0;
  if (tokens.length <= window) return new Set(tokens).size / tokens.length;
  let sum = 0;
  const counts = new Map<string, number>();
  for (let i = 0; i < window; i++)
    counts.set(tokens[i] as string, (counts.get(tokens[i] as string) ?? 0) + 1);
  sum += counts.size / window;
  for (let i = window; i < tokens.length; i++) {
    const out = tokens[i - window] as string;
    const c = (counts.get(out) ?? 0) - 1;
    if (c === 0) counts.delete(out);
    else counts.set(out, c);
    counts.set(tokens[i] as string, (counts.get(tokens[i] as string) ?? 0) + 1);
    sum += counts.size / window;
  }
  return sum / (tokens.length - window + 1);
}

/**
 * `english`: the text is clearly English (lib/text-language.ts). The function-word, contraction,
 * first-person and connective signals are English words: other prose scored as machine-written
 * by their absence alone (a French or Japanese news paragraph read 0.72 "likely_ai"). Any other
 * text, mixed or too short to tell included, is measured but not judged: 0.5 and "uncertain".
 */
export function analyzeText(text: string, english = true) {
  const sentences = sentencesOf(text)
    .map((s) => ({ s, n: wordsOf(s).length }))
    .filter((x) => x.n > 0);
  const tokens = wordsOf(text).map((w) => w.toLowerCase().replaceAll("\u2019", "'"));
  const words = tokens.length;
  const lengths = sentences.map((x) => x.n);
  const mean = lengths.length ? lengths.reduce((a, b) => a + b, 0) / lengths.length : 0;
  const sd = lengths.length
    ? Math.sqrt(lengths.reduce((a, b) => a + (b - mean) ** 2, 0) / lengths.length)
    : 0;
  const burstiness = mean > 0 && lengths.length >= 3 ? sd / mean : null;

  const trigrams = tokens.slice(2).map((_, i) => `${tokens[i]} ${tokens[i + 1]} ${tokens[i + 2]}`);
  const repeatedTrigrams = trigrams.length ? (trigrams.length - new Set(trigrams).size) / trigrams.length : 0;
  const normalizedSentences = sentences.map((x) =>
    x.s
      .toLowerCase()
      .replace(/[^\p{L}\p{N} ]/gu, "")
      .trim(),
  );
  const duplicateSentences = normalizedSentences.length - new Set(normalizedSentences).size;

  const count = (re: RegExp) => text.match(re)?.length ?? 0;
  const punctuation = {
    commas: round(per100(count(/,/g), words), 2),
    semicolons: round(per100(count(/;/g), words), 2),
    colons: round(per100(count(/:(?!\/\/)/g), words), 2),
    dashes: round(per100(count(/[\u2013\u2014]|\s-\s/g), words), 2),
    exclamations: round(per100(count(/!/g), words), 2),
    questions: round(per100(count(/\?/g), words), 2),
    parentheses: round(per100(count(/\(/g), words), 2),
    ellipses: round(per100(count(/\u2026|\.\.\./g), words), 2),
  };
  const informal =
    punctuation.exclamations + punctuation.questions + punctuation.parentheses + punctuation.ellipses;

  const functionWordRatio = words ? tokens.filter((t) => ENGLISH_STOPWORDS.has(t)).length / words : 0;
  const contractions = per100(tokens.filter((t) => /\p{L}'\p{L}/u.test(t)).length, words);
  const firstPerson = per100(tokens.filter((t) => FIRST_PERSON.has(t)).length, words);
  const connectives = per100(
    sentences.filter((x) => CONNECTIVES.some((c) => x.s.toLowerCase().startsWith(c))).length,
    words,
  );
  const ttr = mattr(tokens);

  // Per-signal scores in [-1, 1]; positive leans machine-written.
  const scores = {
    burstiness: burstiness === null ? 0 : clamp((0.45 - burstiness) / 0.25),
    sentence_length: mean === 0 ? 0 : clamp(1 - Math.abs(mean - 20) / 10),
    lexical_diversity: words < 20 ? 0 : clamp((0.78 - ttr) / 0.1),
    repetition: clamp((repeatedTrigrams - 0.02) / 0.06 + Math.min(1, duplicateSentences)),
    punctuation: words < 20 ? 0 : clamp((0.5 - informal) / 0.5),
    function_words:
      words < 20 ? 0 : (clamp(1 - (contractions + firstPerson) / 1.5) + clamp((connectives - 0.5) / 1.5)) / 2,
  };
  let z = 0;
  for (const [k, w] of Object.entries(SIGNAL_WEIGHTS)) z += w * scores[k as keyof typeof scores];
  const raw = 1 / (1 + Math.exp(-5 * z));
  const lengthFactor = Math.min(1, words / FULL_LENGTH_WORDS);
  const aiMillis = english ? Math.round((0.5 + (raw - 0.5) * lengthFactor) * 1000) : 500;
  const ai = aiMillis / 1000;
  const human = (1000 - aiMillis) / 1000;
  const verdict =
    words < MIN_WORDS_FOR_VERDICT || !english
      ? "uncertain"
      : ai >= 0.65
        ? "likely_ai"
        : ai <= 0.35
          ? "likely_human"
          : "uncertain";

  return {
    verdict,
    ai_likelihood: ai,
    human_likelihood: human,
    signals: {
      avg_sentence_words: round(mean, 2),
      repetition_detected: repeatedTrigrams > 0.05 || duplicateSentences > 0,
      words,
      sentences: lengths.length,
      sentence_length_stdev: round(sd, 2),
      burstiness: burstiness === null ? null : round(burstiness),
      type_token_ratio: round(ttr),
      repeated_trigram_ratio: round(repeatedTrigrams),
      duplicate_sentences: duplicateSentences,
      punctuation_per_100_words: punctuation,
      function_word_ratio: round(functionWordRatio),
      contractions_per_100_words: round(contractions, 2),
      first_person_per_100_words: round(firstPerson, 2),
      connective_openers_per_100_words: round(connectives, 2),
      scores: Object.fromEntries(Object.entries(scores).map(([k, v]) => [k, round(v)])),
      combined_z: round(z),
      length_factor: round(lengthFactor),
    },
  };
}
