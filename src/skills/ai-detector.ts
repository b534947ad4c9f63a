import * as z from "zod";
import { cut, cutGraphemes, shorten } from "../text-cut";
import { cached } from "./lib/cache";
import { isHtml, loadPage, precheckUrl } from "./lib/page";
import { analyzeText, SIGNAL_WEIGHTS } from "./lib/stylometry";
import { cacheState, defineSkill, numberPerKey } from "./types";

/** The same bound as the `text` field: a page is judged on its first 8000 characters of text. */
const MAX_CHARS = 8000;
const PREVIEW_CHARS = 200;
const LIMITS =
  "Heuristic, not proof: hand-set weights over stylometric signals, not a trained model. English prose only: " +
  "text not clearly English (its language, named in language, read over all of it) is measured but not judged (0.5, uncertain); " +
  "unreliable under 150 words (pulled toward 0.5) and no verdict under 40; edited, translated, templated, " +
  "technical or non-native writing can read as machine-written, and prompted or paraphrased AI text as human.";

// Cut between characters as a reader sees them: at a code unit count a text of emoji previewed
// ending in half of one ("\ud83d…"), at a code point one flag of two (🇫) or a family cut short.
const preview = (text: string) => shorten(text.replace(/\s+/g, " ").trim(), PREVIEW_CHARS, cutGraphemes);

/**
 * The judged text (its first MAX_CHARS characters) and its language, read over all of it: English
 * signals judge it only when it is clearly English (lib/text-language.ts: the English stopword list
 * clearly covers most of its words, or franc reads stopword-poor text as English; an English menu
 * over a French page, or a French sentence over English prose, does not decide).
 * The detector loads on the first call of an isolate that judges a text (not on a cache hit).
 */
async function judge(text: string) {
  const body = cut(text, MAX_CHARS);
  const { textLanguage } = await import("./lib/text-language");
  const { language, clear } = textLanguage(body);
  return { text_preview: preview(body), language, ...analyzeText(body, language === "eng" && clear) };
}

export const aiDetector = defineSkill({
  id: "ai_detector",
  name: "AI text detector",
  category: "ai_detection",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Estimate whether a text (or the readable text of a URL) was machine-written from stylometric signals: sentence-length mean and burstiness, type-token ratio, repetition, punctuation and function-word profile, combined by a documented formula. English only: text in another language (or mixed, or too short to tell) answers 0.5, uncertain. Returns likelihoods that sum to 1 and a verdict. A heuristic, not proof: read the documented limits.",
  input: () =>
    z
      .object({
        url: z.string().max(8000).nullable().default(null).meta({
          description:
            "Page to read the text from (used when text is absent). Give text or url: one is required.",
        }),
        text: z
          .string()
          .max(8000)
          .nullable()
          .default(null)
          .meta({ description: "Text to analyse. Give text or url: one is required." }),
      })
      .refine((v) => Boolean(v.text) || Boolean(v.url), {
        message: "either text or url is required",
        path: [],
      })
      // The refinement, stated where clients read the schema: a non-empty text or url. `{}` is a
      // 422 before any payment, so an empty body is never bought.
      .meta({
        anyOf: [
          { required: ["text"], properties: { text: { type: "string", minLength: 1 } } },
          { required: ["url"], properties: { url: { type: "string", minLength: 1 } } },
        ],
      }),
  output: () =>
    z.object({
      url: z.string().nullable(),
      text_preview: z.string().meta({
        description: `The judged text's start, whitespace collapsed: at most ${PREVIEW_CHARS} UTF-16 units, cut between characters (grapheme clusters) and ended with "…" when cut.`,
      }),
      language: z.string().meta({
        description:
          'ISO 639-3 code of the judged text\'s language, read as keyword_extract reads it, but franc (up to four 512-character windows) is asked whenever no list decides and its language is named ("und" when not told). Judged only if clearly English: the English list covers 15% of the words, 3+ distinct stopwords, clearly most; or franc names English clearly ahead in most of 2+ windows, or first in every window with no other list covering 2 words. Else 0.5, uncertain.',
      }),
      verdict: z.enum(["likely_ai", "likely_human", "uncertain"]),
      ai_likelihood: z.number().min(0).max(1),
      human_likelihood: z.number().min(0).max(1),
      signals: z.object({
        avg_sentence_words: z.number(),
        repetition_detected: z.boolean(),
        words: z.int().min(0),
        sentences: z.int().min(0),
        sentence_length_stdev: z.number(),
        burstiness: z.number().nullable().meta({ description: "Null under three sentences." }),
        type_token_ratio: z.number(),
        repeated_trigram_ratio: z.number(),
        duplicate_sentences: z.int().min(0),
        punctuation_per_100_words: z.object({
          commas: z.number(),
          semicolons: z.number(),
          colons: z.number(),
          dashes: z.number(),
          exclamations: z.number(),
          questions: z.number(),
          parentheses: z.number(),
          ellipses: z.number(),
        }),
        function_word_ratio: z.number(),
        contractions_per_100_words: z.number(),
        first_person_per_100_words: z.number(),
        connective_openers_per_100_words: z.number(),
        scores: numberPerKey(SIGNAL_WEIGHTS).meta({ description: "Signal scores in -1..1 (AI-like > 0)." }),
        combined_z: z.number(),
        length_factor: z.number(),
      }),
      supported: z.array(z.enum(["text", "url"])),
      source: z.enum(["text", "url"]),
      final_url: z.string().optional().meta({ description: "For a url: the address after redirects." }),
      limits: z.string(),
      cache: cacheState.optional().meta({ description: "For a url: whether the KV cache answered." }),
    }),
  example_request: { text: "The quick brown fox jumps over the lazy dog. It was not amused." },
  // A real output of this code for example_request on the fixture upstreams of test/fixtures;
  // a test compares it with a fresh run, so it cannot drift.
  example_response: {
    skill: "ai_detector",
    url: null,
    text_preview: "The quick brown fox jumps over the lazy dog. It was not amused.",
    language: "eng",
    verdict: "uncertain",
    ai_likelihood: 0.491,
    human_likelihood: 0.509,
    signals: {
      avg_sentence_words: 6.5,
      repetition_detected: false,
      words: 13,
      sentences: 2,
      sentence_length_stdev: 2.5,
      burstiness: null,
      type_token_ratio: 0.923,
      repeated_trigram_ratio: 0,
      duplicate_sentences: 0,
      punctuation_per_100_words: {
        commas: 0,
        semicolons: 0,
        colons: 0,
        dashes: 0,
        exclamations: 0,
        questions: 0,
        parentheses: 0,
        ellipses: 0,
      },
      function_word_ratio: 0.385,
      contractions_per_100_words: 0,
      first_person_per_100_words: 0,
      connective_openers_per_100_words: 0,
      scores: {
        burstiness: 0,
        sentence_length: -0.35,
        lexical_diversity: 0,
        repetition: -0.333,
        punctuation: 0,
        function_words: 0,
      },
      combined_z: -0.085,
      length_factor: 0.087,
    },
    supported: ["text", "url"],
    source: "text",
    limits:
      "Heuristic, not proof: hand-set weights over stylometric signals, not a trained model. English prose only: text not clearly English (its language, named in language, read over all of it) is measured but not judged (0.5, uncertain); unreliable under 150 words (pulled toward 0.5) and no verdict under 40; edited, translated, templated, technical or non-native writing can read as machine-written, and prompted or paraphrased AI text as human.",
  },
  async run({ url, text }, ctx) {
    const { env } = ctx;
    const supported = ["text", "url"];
    if (text) {
      const r = await judge(text);
      return { url, ...r, supported, source: "text", limits: LIMITS };
    }
    const target = precheckUrl(env, url as string);
    const { value, cache } = await cached(ctx, "ai_detector", target.href, async () => {
      const doc = await loadPage(
        env,
        target.href,
        /^(text\/html|application\/xhtml\+xml|text\/plain)$/,
        "HTML or text",
      );
      if (!isHtml(doc)) return { final_url: doc.url, ...(await judge(doc.text)) };
      // The HTML converters load on first use, not at start-up. Only as much of the page is
      // converted as the first MAX_CHARS characters of its text need (a 2 MiB page was converted
      // whole, up to 157 million characters built, to keep 8,000).
      const { htmlToText } = await import("./lib/html-convert");
      return { final_url: doc.url, ...(await judge(htmlToText(doc.text, ["url"], MAX_CHARS))) };
    });
    const { final_url, ...r } = value;
    return { url, ...r, supported, source: "url", final_url, limits: LIMITS, cache };
  },
});
