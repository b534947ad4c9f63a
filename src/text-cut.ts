/**
 * Cuts of user and page text that answers quote. A cut at a UTF-16 unit count can fall inside a
 * surrogate pair (an emoji, an astral character): its high half alone is no character, JSON writes
 * it as "\ud83d", and strict decoders (serde_json, Swift's JSONDecoder) refuse the whole answer.
 * These never keep a high surrogate as their last unit.
 */

/** `text` cut to at most `max` UTF-16 units, a surrogate pair never split (it goes whole). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** `text` as it is if it has at most `max` units, else cut to `max - 1` of them (`cut`) and "…". */
export const shorten = (text: string, max: number): string =>
  text.length > max ? `${cut(text, max - 1)}…` : text;
