/**
 * Counting tokens with gpt-tokenizer's own pre-tokenizer and merge, without its per-call work.
 *
 * Why: at 1 KB, `countTokens` spent half its time outside the count (measured in Node 22 on the
 * bench's 1 KB prose: 18 µs against 10 µs here): the special-token options and scan per call, and
 * for every piece that is not a token itself, the merge cache's LRU refresh (has, get, delete, set)
 * and a token array built only to be measured. Here a piece that is a token counts 1; any other
 * short piece's count is remembered once (a bounded map, cleared when full); the merge itself is
 * the library's (with the long-piece merge of bpe-merge.ts). Special-token text is plain text, as
 * token_count counts it: the library with no allowed special tokens encodes it the same way.
 * test/skills/token-tables.test.ts compares the counts with the library's on random text.
 */

import { LONG_PIECE } from "./bpe-merge";

/** What this module reads inside gpt-tokenizer's GptEncoding (private in its types). */
interface Core {
  tokenSplitRegex: RegExp;
  bytePairStringRankEncoder: Map<string, number>;
  bytePairEncode(input: string): number[];
}

/** Pieces whose counts are remembered: a language's common words, ~1 MB at most (8,192 × 64). */
const REMEMBERED = 8192;
const REMEMBERED_LENGTH = 64;

/**
 * A piece as a string of its own. The regex's matches of 13 characters or more are V8 slices that
 * keep the whole request text alive: kept as map keys (here, and in the library's merge cache,
 * which is keyed by what bytePairEncode is given), 150 requests of 400k characters held 120 MB.
 * Concatenating, then slicing, makes a flat copy of just the piece.
 */
const ownCopy = (piece: string) => ` ${piece}`.slice(1);

/** A token counter over one GptEncoding. Throws if the library's internals moved. */
export function pieceCounter(encoding: object): (text: string) => number {
  const core = (encoding as { bytePairEncodingCoreProcessor?: Partial<Core> }).bytePairEncodingCoreProcessor;
  if (
    !(core?.tokenSplitRegex instanceof RegExp) ||
    !core.tokenSplitRegex.global ||
    !(core.bytePairStringRankEncoder instanceof Map) ||
    typeof core.bytePairEncode !== "function"
  ) {
    throw new Error("gpt-tokenizer's internals changed: the token counter cannot be built");
  }
  const c = core as Core;
  const split = c.tokenSplitRegex;
  const ranks = c.bytePairStringRankEncoder;
  const counts = new Map<string, number>();
  return (text) => {
    let n = 0;
    for (const [piece] of text.matchAll(split)) {
      if (ranks.has(piece)) {
        n++;
        continue;
      }
      let k = counts.get(piece);
      if (k === undefined) {
        // A long piece bypasses the library's cache (bpe-merge.ts) and is not kept here either.
        const own = piece.length > LONG_PIECE ? piece : ownCopy(piece);
        k = c.bytePairEncode(own).length;
        if (own.length <= REMEMBERED_LENGTH) {
          if (counts.size >= REMEMBERED) counts.clear();
          counts.set(own, k);
        }
      }
      n += k;
    }
    return n;
  };
}
