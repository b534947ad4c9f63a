import { sha256Hex } from "../../digest";
import type { Bindings } from "../../env";
import { netConfig } from "../../net/config";
import { MAX_OUTPUT_BYTES } from "./output-size";

/**
 * KV cache of network-skill results, keyed by skill id and the SHA-256 of the normalized input.
 * Best effort: a KV failure never fails the call. Only what `compute` returns is cached: an error it
 * throws (a refusal, an upstream's 502/504) is not, nor a value whose answer is over the answer cap
 * (MAX_OUTPUT_BYTES): runSkill refuses that answer with a 422, and a cached copy would only have served
 * that 422 again from KV on every hit. The cap is checked on the answer runSkill sends (the skill's
 * `{skill, ...out}`), so the write waits for that check (`holdWrite`). runSkill hands `holdWrite` to
 * analytic skills only: a utility that called this would write before the check.
 */

// Bump when a skill's output for the same input changes, so old entries are not served (a changed
// output schema of a cached skill fails test/skills/cache-version.test.ts until it is bumped).
export const VERSION = "v10"; // v10: page text (ai_detector) leaves out what a display or visibility hides through a custom property (`var()`) and numbers reversed lists and items with a value as browsers do; v9: page text leaves out what an element's own style hides (display: none, visibility: hidden) and shows a `hidden` element whose style sets a display; v8: page text (ai_detector reads it through html_clean text mode) leaves out hidden elements, <title> and media fallback, and ends lines where a browser does; v7: ai_detector names the text's language and judges English only, seo's extracted keywords drop the page language's stopwords; v6: research's no-match summary quotes each caller (none cached), seo folds keywords composed (NFC) and without format characters, page text keeps U+200B and drops U+FEFF, ai_detector's preview ends on a grapheme boundary

export type CacheState = "hit" | "miss";

/**
 * Where a skill hands work that need not hold its answer (ExecutionContext.waitUntil, which keeps it
 * alive past the response); absent (no execution context), the work is awaited instead.
 */
export type AfterAnswer = (work: Promise<unknown>) => void;

async function cacheKey(skillId: string, normalized: unknown): Promise<string> {
  return `skill:${skillId}:${VERSION}:${await sha256Hex(JSON.stringify(normalized))}`;
}

/** A cache write not yet started; runSkill starts it once the answer passed the output cap. */
export type HeldWrite = () => Promise<unknown>;

export async function cached<T>(
  {
    env,
    waitUntil,
    holdWrite,
  }: { env: Bindings; waitUntil?: AfterAnswer; holdWrite?: (write: HeldWrite) => void },
  skillId: string,
  normalized: unknown,
  compute: () => Promise<T>,
): Promise<{ value: T; cache: CacheState }> {
  const ttl = netConfig(env).cacheTtlSeconds;
  const kv = (env as Partial<Bindings>).KV;
  if (ttl === 0 || !kv) return { value: await compute(), cache: "miss" };
  const key = await cacheKey(skillId, normalized);
  try {
    const hit = await kv.get<T>(key, "json");
    if (hit !== null) return { value: hit, cache: "hit" };
  } catch {
    // A cache that cannot be read is a miss.
  }
  const value = await compute();
  // Serialized now, before the skill goes on with `value`. A cache that cannot be written costs a
  // recomputation next time, nothing more.
  let serialized: string;
  try {
    serialized = JSON.stringify(value);
  } catch {
    return { value, cache: "miss" };
  }
  // Its answer is measured byte for byte by runSkill (the held write waits for it); here only what
  // is over the cap in UTF-16 units alone, hence in UTF-8 bytes too, is let go: no second walk.
  if (serialized.length > MAX_OUTPUT_BYTES) return { value, cache: "miss" };
  const write = () => kv.put(key, serialized, { expirationTtl: ttl });
  // The answer the skill builds from `value` (the query echoed, limits, `cache`) may still be over
  // the cap: runSkill starts the write only once that answer passed its size check.
  if (holdWrite) holdWrite(write);
  else await afterAnswer(write, waitUntil);
  return { value, cache: "miss" };
}

/**
 * Starts a cache write after the answer: a miss's write is the next caller's gain, not this one's,
 * so it goes to `waitUntil` (the answer waited for it before: a KV write on every miss); a
 * waitUntil that refuses it, or none, and it is awaited. A write that fails is let go.
 */
export async function afterAnswer(write: HeldWrite, waitUntil?: AfterAnswer): Promise<void> {
  let work: Promise<unknown>;
  try {
    work = write().catch(() => undefined);
  } catch {
    work = Promise.resolve();
  }
  if (waitUntil) {
    try {
      waitUntil(work);
      return;
    } catch {
      // A waitUntil that refuses the write: awaited, as without one.
    }
  }
  await work;
}

/** Whitespace-collapsed, trimmed, lowercased: the form of free text used in cache keys. */
export const normalizeText = (s: string) => s.normalize("NFC").replace(/\s+/g, " ").trim().toLowerCase();
