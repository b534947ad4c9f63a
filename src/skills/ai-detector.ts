import { z } from "zod";
import { AI_DETECTOR_EXAMPLE } from "./analytic-examples";
import { cached } from "./cache";
import { htmlToText } from "./html-clean";
import { isHtml, loadPage, precheckUrl } from "./page";
import { analyzeText } from "./stylometry";
import { defineSkill } from "./types";

/** The same bound as the `text` field: a page is judged on its first 8000 characters of text. */
const MAX_CHARS = 8000;
const PREVIEW_CHARS = 200;
const LIMITS =
  "Heuristic, not proof: hand-set weights over stylometric signals, not a trained model. English prose only; " +
  "unreliable under 150 words (pulled toward 0.5) and no verdict under 40; edited, translated, templated, " +
  "technical or non-native writing can read as machine-written, and prompted or paraphrased AI text as human.";

const preview = (text: string) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
};

function judge(text: string) {
  const body = text.slice(0, MAX_CHARS);
  return { text_preview: preview(body), ...analyzeText(body) };
}

export const aiDetector = defineSkill({
  id: "ai_detector",
  name: "AI text detector",
  category: "ai_detection",
  price_usd: 0.01,
  kind: "analytic",
  description:
    "Estimate whether a text (or the readable text of a URL) was machine-written from stylometric signals: sentence-length mean and burstiness, type-token ratio, repetition, punctuation and function-word profile, combined by a documented formula. Returns likelihoods that sum to 1 and a verdict. A heuristic, not proof: read the documented limits.",
  input: z
    .object({
      url: z
        .string()
        .max(8000)
        .nullable()
        .default(null)
        .meta({ description: "Page to read the text from (used when text is absent)." }),
      text: z.string().max(8000).nullable().default(null).meta({ description: "Text to analyse." }),
    })
    .refine((v) => Boolean(v.text) || Boolean(v.url), {
      message: "either text or url is required",
      path: [],
    }),
  example_request: { text: "The quick brown fox jumps over the lazy dog. It was not amused." },
  example_response: AI_DETECTOR_EXAMPLE,
  async run({ url, text }, { env }) {
    const supported = ["text", "url"];
    if (text) {
      const r = judge(text);
      return { url, ...r, supported, source: "text", limits: LIMITS };
    }
    const target = precheckUrl(env, url as string);
    const { value, cache } = await cached(env, "ai_detector", target.href, async () => {
      const doc = await loadPage(
        env,
        target.href,
        /^(text\/html|application\/xhtml\+xml|text\/plain)$/,
        "HTML or text",
      );
      return { final_url: doc.url, ...judge(isHtml(doc) ? htmlToText(doc.text) : doc.text) };
    });
    const { final_url, ...r } = value;
    return { url, ...r, supported, source: "url", final_url, limits: LIMITS, cache };
  },
});
