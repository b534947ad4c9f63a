import { sha256Hex } from "../../digest";
import type { Bindings } from "../../env";
import { netConfig } from "../../net/config";

/**
 * KV cache of network-skill results, keyed by skill id and the SHA-256 of the normalized input.
 * Best effort: a KV failure never fails the call, only errors are never cached.
 */

// Bump when a skill's output for the same input changes, so old entries are not served.
const VERSION = "v9"; // v9: page text leaves out what an element's own style hides (display: none, visibility: hidden) and shows a `hidden` element whose style sets a display; v8: page text (ai_detector reads it through html_clean text mode) leaves out hidden elements, <title> and media fallback, and ends lines where a browser does; v7: ai_detector names the text's language and judges English only, seo's extracted keywords drop the page language's stopwords; v6: research's no-match summary quotes each caller (none cached), seo folds keywords composed (NFC) and without format characters, page text keeps U+200B and drops U+FEFF, ai_detector's preview ends on a grapheme boundary

export type CacheState = "hit" | "miss";

async function cacheKey(skillId: string, normalized: unknown): Promise<string> {
  return `skill:${skillId}:${VERSION}:${await sha256Hex(JSON.stringify(normalized))}`;
}

export async function cached<T>(
  env: Bindings,
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
  try {
    await kv.put(key, JSON.stringify(value), { expirationTtl: ttl });
  } catch {
    // A cache that cannot be written costs a recomputation next time, nothing more.
  }
  return { value, cache: "miss" };
}

/** Whitespace-collapsed, trimmed, lowercased: the form of free text used in cache keys. */
export const normalizeText = (s: string) => s.normalize("NFC").replace(/\s+/g, " ").trim().toLowerCase();
