/**
 * Counting tokens over a binary rank table (bpe-table.ts) with gpt-tokenizer's own pre-tokenizer
 * regex: the library's count, without its tables' per-token objects or its per-call work.
 *
 * Why: building the library's encoding from JSON (a parse of ~200k strings, then a Map of them)
 * was most of a first o200k call, and at 1 KB its `countTokens` spent half its time outside the
 * count (special-token options, the merge cache's LRU refresh, token arrays built to be measured).
 * Here a piece that is one of the table's strings counts 1, any other is merged by its UTF-8 bytes
 * (bpe-merge.ts: lowest rank, leftmost on ties, the library's choice), and a short piece's count
 * is remembered (a bounded map, cleared when full). Special-token text is plain text, as
 * token_count counts it: the library with no allowed special tokens encodes it the same way.
 * test/skills/token-tables.test.ts compares the counts with the library's on random text.
 */

import { countShortPiece, mergePiece, type RankOf, SHORT_PIECE } from "./bpe-merge";
import type { BpeTable } from "./bpe-table";

/**
 * Pieces whose counts are remembered: a language's common words and tokens, ~2 MB at most
 * (16,384 × 64 characters), what the library's merge cache and our map of 8,192 each held before.
 */
const REMEMBERED = 16_384;
const REMEMBERED_LENGTH = 64;

/**
 * A piece as a string of its own. The regex's matches of 13 characters or more are V8 slices that
 * keep the whole request text alive: kept as map keys, 150 requests of 400k characters held
 * 120 MB. Concatenating, then slicing, makes a flat copy of just the piece.
 */
const ownCopy = (piece: string) => ` ${piece}`.slice(1);

/** A token counter over one table, splitting text with the encoding's pre-tokenizer regex. */
export function pieceCounter(table: BpeTable, split: RegExp): (text: string) => number {
  if (!split.global) throw new Error("the pre-tokenizer regex must be global (matchAll)");
  const rankOf: RankOf = (b, start, end) => table.rankOf(b, start, end);
  const counts = new Map<string, number>();
  const utf8 = new TextEncoder();
  // The piece's UTF-8, as TextEncoder writes it (a lone surrogate as U+FFFD), in a reused buffer.
  let buf = new Uint8Array(256);
  /** Encodes the piece into buf; its length, negative if the piece holds a lone surrogate. */
  const encode = (piece: string) => {
    if (buf.length < piece.length * 3) buf = new Uint8Array(piece.length * 3); // ≤ 3 × SHORT_PIECE
    let n = 0;
    let lone = false;
    for (let i = 0; i < piece.length; i++) {
      let c = piece.charCodeAt(i);
      if (c < 0x80) buf[n++] = c;
      else if (c < 0x800) {
        buf[n++] = 0xc0 | (c >> 6);
        buf[n++] = 0x80 | (c & 0x3f);
      } else {
        if (c >= 0xd800 && c <= 0xdfff) {
          const d = i + 1 < piece.length ? piece.charCodeAt(i + 1) : 0;
          if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
            c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
            i++;
            buf[n++] = 0xf0 | (c >> 18);
            buf[n++] = 0x80 | ((c >> 12) & 0x3f);
            buf[n++] = 0x80 | ((c >> 6) & 0x3f);
            buf[n++] = 0x80 | (c & 0x3f);
            continue;
          }
          lone = true;
          c = 0xfffd;
        }
        buf[n++] = 0xe0 | (c >> 12);
        buf[n++] = 0x80 | ((c >> 6) & 0x3f);
        buf[n++] = 0x80 | (c & 0x3f);
      }
    }
    return lone ? -n : n;
  };
  return (text) => {
    let n = 0;
    for (const [piece] of text.matchAll(split)) {
      let k = counts.get(piece);
      if (k === undefined && piece.length > SHORT_PIECE) {
        // Over SHORT_PIECE bytes whatever it holds: no token is that long (the generator checks),
        // and the native encoder writes a lone surrogate as U+FFFD too. Not remembered.
        k = mergePiece(utf8.encode(piece), rankOf).length;
      } else if (k === undefined) {
        const len = encode(piece);
        // The library asks its string Map for the piece itself: a piece with a lone surrogate,
        // which no entry holds, is merged even where its U+FFFD bytes are a token (on these two
        // tables such a merge ends in that token too; the count does not rest on it).
        const bytes = Math.abs(len);
        k =
          len > 0 && table.stringRank(buf, 0, len) !== undefined
            ? 1
            : bytes <= SHORT_PIECE
              ? countShortPiece(buf, bytes, rankOf)
              : mergePiece(buf.subarray(0, bytes), rankOf).length;
        if (piece.length <= REMEMBERED_LENGTH) {
          if (counts.size >= REMEMBERED) counts.clear();
          counts.set(ownCopy(piece), k);
        }
      }
      n += k;
    }
    return n;
  };
}
