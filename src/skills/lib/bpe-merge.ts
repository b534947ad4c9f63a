/**
 * Byte-pair merging in O(n log n), in place of gpt-tokenizer 4.0.0's O(n²) loop.
 *
 * Why: the library merges each pre-token ("piece") by rescanning every adjacent pair for the
 * lowest rank after each merge. Ordinary text splits into short pieces, but a run with no word
 * boundary is one piece: 400k letters "a" took 43 s, 200k emoji 128 s (a known problem of naive
 * BPE: openai/tiktoken#195, which tiktoken and jtokkit answer the same way, from ~500 characters).
 * Here the candidate pairs sit in a min-heap keyed by (rank, start offset) over a linked list of
 * parts, and only the two pairs next to a merge are re-ranked. Popping the lowest (rank, start)
 * is the library's choice exactly (lowest rank, leftmost on ties), so the tokens are identical
 * (test/skills/token-tables.test.ts compares them with the library's own). token_count merges
 * pieces over SHORT_PIECE bytes here, shorter ones in the library's own loop (countShortPiece).
 */

/** Offsets fit in 2^21 (a piece is at most 400k characters, 1.6 MB of UTF-8). */
const START_BITS = 2 ** 21;
/** Token ranks fit in 2^18 (o200k has ~200k): a pair of them is one exact number key. */
const TOKEN_SPACE = 2 ** 18;

/** The rank of bytes[start, end), undefined when the table has none (BpeTable.rankOf). */
export type RankOf = (bytes: Uint8Array, start: number, end: number) => number | undefined;

/** A binary min-heap of numbers (keys rank × 2^21 + start: rank order, then leftmost). */
class MinHeap {
  private items: number[] = [];
  get size() {
    return this.items.length;
  }
  push(v: number) {
    const a = this.items;
    let i = a.push(v) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((a[parent] as number) <= v) break;
      a[i] = a[parent] as number;
      i = parent;
    }
    a[i] = v;
  }
  pop(): number {
    const a = this.items;
    const top = a[0] as number;
    const last = a.pop() as number;
    if (a.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= a.length) break;
        const r = l + 1;
        const c = r < a.length && (a[r] as number) < (a[l] as number) ? r : l;
        if ((a[c] as number) >= last) break;
        a[i] = a[c] as number;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}

/** The ranks of a piece's tokens, as the library's bytePairMerge returns them. */
export function mergePiece(piece: Uint8Array, rankOf: RankOf): number[] {
  const n = piece.length;
  if (n >= START_BITS) throw new RangeError(`piece of ${n} bytes is beyond the merge's offsets`);
  // Part s spans [s, next[s]); a part that was merged into its left neighbour is dead. Every part
  // is a token of the table (a byte, or a merge the table ranks): token[s] is its rank.
  const next = new Int32Array(n + 1);
  const prev = new Int32Array(n + 1);
  const dead = new Uint8Array(n + 1);
  const token = new Int32Array(n + 1);
  // The rank of the pair that starts at part s (its part and the next), Infinity when none.
  const rankAt = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
  // A pair's rank depends only on its two tokens: looked up once per distinct pair (a hash of its
  // bytes), however often the pair recurs in a long piece.
  const pairs = new Map<number, number>();
  const byteToken = new Map<number, number>();
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    if (i < n) {
      const b = piece[i] as number;
      let t = byteToken.get(b);
      if (t === undefined) {
        t = rankOf(piece, i, i + 1);
        if (t === undefined) throw new Error(`The byte-pair encoding has no token for byte ${b}`);
        byteToken.set(b, t);
      }
      token[i] = t;
    }
  }
  const heap = new MinHeap();
  // A part's token names its bytes, except where the library's lookup dropped a leading BOM
  // (BpeTable.rankOf): pairs of parts that start with a BOM's bytes are looked up, not cached.
  const mayHoldBom = piece.indexOf(0xef) !== -1;
  const bomAt = (i: number) => piece[i] === 0xef && piece[i + 1] === 0xbb && piece[i + 2] === 0xbf;
  const rank = (s: number) => {
    const t = next[s] as number;
    if (t >= n) return Number.POSITIVE_INFINITY;
    if (mayHoldBom && (bomAt(s) || bomAt(t)))
      return rankOf(piece, s, next[t] as number) ?? Number.POSITIVE_INFINITY;
    const key = (token[s] as number) * TOKEN_SPACE + (token[t] as number);
    let r = pairs.get(key);
    if (r === undefined) {
      r = rankOf(piece, s, next[t] as number) ?? Number.POSITIVE_INFINITY;
      pairs.set(key, r);
    }
    return r;
  };
  const rerank = (s: number) => {
    const r = rank(s);
    rankAt[s] = r;
    if (r !== Number.POSITIVE_INFINITY) heap.push(r * START_BITS + s);
  };
  for (let s = 0; s < n - 1; s++) rerank(s);
  while (heap.size > 0) {
    const key = heap.pop();
    const s = key % START_BITS;
    const r = (key - s) / START_BITS;
    // Stale: the part was merged away, or its pair changed since this entry was pushed.
    if (dead[s] || rankAt[s] !== r) continue;
    const t = next[s] as number;
    const u = next[t] as number;
    dead[t] = 1;
    next[s] = u;
    if (u <= n) prev[u] = s;
    token[s] = r; // the merged part is the token the pair's rank names
    rerank(s);
    if (s > 0) rerank(prev[s] as number);
  }
  const out: number[] = [];
  for (let s = 0; s < n; s = next[s] as number) out.push(token[s] as number);
  return out;
}

/** Pieces up to this many bytes merge in the library's own loop, on scratch arrays. */
export const SHORT_PIECE = 256;
const starts = new Int32Array(SHORT_PIECE + 1);
const ranks = new Float64Array(SHORT_PIECE + 1);

/**
 * How many tokens gpt-tokenizer's bytePairMerge makes of piece[0, n) (n ≤ SHORT_PIECE): its loop
 * (rescan for the lowest rank, leftmost on ties; re-rank the merged part's two pairs), without
 * its arrays and splices. Most pieces are a few bytes: the heap merge's allocations made the
 * first count of 400k characters of prose (2,179 distinct pieces) several times slower.
 */
export function countShortPiece(piece: Uint8Array, n: number, rankOf: RankOf): number {
  if (n > SHORT_PIECE) throw new RangeError(`piece of ${n} bytes is not short`);
  let parts = n; // part i spans [starts[i], starts[i + 1]); ranks[i] is its pair's with part i + 1
  for (let i = 0; i <= n; i++) starts[i] = i;
  const pairRank = (i: number) =>
    i + 1 < parts
      ? (rankOf(piece, starts[i] as number, starts[i + 2] as number) ?? Number.POSITIVE_INFINITY)
      : Number.POSITIVE_INFINITY;
  for (let i = 0; i < n; i++) ranks[i] = pairRank(i);
  while (parts > 1) {
    let lowest = Number.POSITIVE_INFINITY;
    let at = -1;
    for (let i = 0; i < parts - 1; i++) {
      if ((ranks[i] as number) < lowest) {
        lowest = ranks[i] as number;
        at = i;
      }
    }
    if (at === -1) break;
    // Part at + 1 joins part at: drop its start and its pair, then re-rank both sides.
    starts.copyWithin(at + 1, at + 2, parts + 1);
    ranks.copyWithin(at + 1, at + 2, parts);
    parts--;
    ranks[at] = pairRank(at);
    if (at > 0) ranks[at - 1] = pairRank(at - 1);
  }
  return parts;
}
