import { cut } from "../text-cut";

/**
 * OpenAI's GPT Actions take at most 300 characters in an operation's `description` or `summary`
 * ("Production notes on GPT Actions", OpenAPI specification limits): a longer one is what the
 * importer refuses or cuts, so openapi.json keeps each under it.
 */
export const OPERATION_TEXT_MAX = 300;

/** A sentence ends at a full stop followed by a space and a capital (not "e.g. base"), or at the end. */
const SENTENCE_END = /\.(?=\s+[A-Z]|$)/g;

/**
 * The text's leading whole sentences that fit in `max` characters: the text itself when it fits.
 * A first sentence longer than `max` is cut at a word, with an ellipsis.
 */
export function leadingSentences(text: string, max = OPERATION_TEXT_MAX): string {
  if (text.length <= max) return text;
  let end = 0;
  for (const m of text.matchAll(SENTENCE_END)) {
    if (m.index + 1 > max) break;
    end = m.index + 1;
  }
  if (end > 0) return text.slice(0, end);
  // A word's end within the cap, never half a surrogate pair (text-cut.ts).
  const head = cut(text, max - 1);
  const space = head.lastIndexOf(" ");
  return `${space > 0 ? head.slice(0, space) : head}…`;
}
