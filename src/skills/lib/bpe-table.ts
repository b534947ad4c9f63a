/**
 * A BPE rank table read straight from its binary asset (scripts/gen-bpe-tables.mjs writes the
 * layout): a hash table keyed by a token's UTF-8 bytes, looked up in place.
 *
 * Why: as JSON, the first call parsed ~200k strings and gpt-tokenizer built a Map of them, most
 * of a first o200k call (docs/PERFORMANCE.md, stops 32 and 33). Here the load is three typed-array
 * views on one ArrayBuffer; nothing per token is created.
 *
 * The lookups are gpt-tokenizer 4.0.0's, quirks included, so the counts stay the library's:
 * a whole piece is a token only if it is one of the table's strings (`isStringToken`, the
 * library's Map of strings), and a byte run's rank (`rankOf`, its `getBpeRankFromBytes`) is asked
 * of the strings when the run is valid UTF-8 (decoded by a TextDecoder that drops a leading BOM),
 * of the byte-array entries otherwise.
 */

const MAGIC = 0x31455042; // "BPE1"
const HEADER_BYTES = 16;
/** A slot's flag: the library holds this entry as a byte array, not a string. */
const FROM_BYTES = 1 << 24;
const RANK = FROM_BYTES - 1;

/** FNV-1a over bytes[start, end), folded: the generator's `hash`. */
function hash(b: Uint8Array, start: number, end: number) {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ (b[i] as number), 0x01000193);
  return h ^ (h >>> 16);
}

/** gpt-tokenizer's isValidUTF8 (utfUtil.ts) over bytes[start, end). */
function isValidUtf8(b: Uint8Array, start: number, end: number) {
  let i = start;
  while (i < end) {
    const b1 = b[i] as number;
    let size: number;
    let cp: number;
    if (b1 <= 0x7f) {
      i++;
      continue;
    }
    if ((b1 & 0xe0) === 0xc0) {
      if (b1 <= 0xc1) return false;
      size = 2;
      cp = b1 & 0x1f;
    } else if ((b1 & 0xf0) === 0xe0) {
      size = 3;
      cp = b1 & 0x0f;
    } else if ((b1 & 0xf8) === 0xf0) {
      if (b1 > 0xf4) return false;
      size = 4;
      cp = b1 & 0x07;
    } else return false;
    if (i + size > end) return false;
    for (let j = 1; j < size; j++) {
      const x = b[i + j] as number;
      if ((x & 0xc0) !== 0x80) return false;
      cp = (cp << 6) | (x & 0x3f);
    }
    if ((size === 3 && cp < 0x800) || (size === 4 && cp < 0x10000)) return false;
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return false;
    i += size;
  }
  return true;
}

/** Why a binary table is not usable; the caller's load fails with it. */
export class BadTable extends Error {}

export class BpeTable {
  private readonly mask: number;
  private constructor(
    private readonly slots: Int32Array,
    private readonly offsets: Uint32Array,
    private readonly bytes: Uint8Array,
  ) {
    this.mask = slots.length - 1;
  }

  /**
   * Views on the asset's bytes. Anything but a whole table of `entries` entries (a short or cut
   * file, the other encoding's, a JSON or HTML answer) throws BadTable.
   */
  static read(data: ArrayBuffer, entries: number): BpeTable {
    if (data.byteLength < HEADER_BYTES) throw new BadTable(`${data.byteLength} bytes, not a table`);
    const [magic, n, slots, size] = new Uint32Array(data, 0, 4) as unknown as [
      number,
      number,
      number,
      number,
    ];
    if (magic !== MAGIC) throw new BadTable("not a binary BPE table");
    if (n !== entries) throw new BadTable(`${n} entries, not ${entries}`);
    if (slots < n || (slots & (slots - 1)) !== 0) throw new BadTable(`${slots} slots`);
    const length = HEADER_BYTES + 4 * (slots + n + 1) + size;
    if (data.byteLength !== length)
      throw new BadTable(`${data.byteLength} bytes, not ${length} (cut short?)`);
    const offsets = new Uint32Array(data, HEADER_BYTES + 4 * slots, n + 1);
    if (offsets[n] !== size) throw new BadTable("offsets do not end at the bytes' end");
    return new BpeTable(
      new Int32Array(data, HEADER_BYTES, slots),
      offsets,
      new Uint8Array(data, HEADER_BYTES + 4 * (slots + n + 1), size),
    );
  }

  /**
   * The slot of exactly bytes[start, end) (rank and flag), or -1. A damaged table's slots are not
   * checked at load (a scan of them cost ~20 ms of a cold isolate): a slot naming no rank matches
   * nothing, and a table with no empty slot ends the probe after one lap; its counts then differ
   * from the library's, which the load's test count sees.
   */
  private find(b: Uint8Array, start: number, end: number): number {
    const { slots, offsets, bytes, mask } = this;
    const len = end - start;
    for (let s = hash(b, start, end) & mask, lap = 0; lap <= mask; s = (s + 1) & mask, lap++) {
      const v = slots[s] as number;
      if (v === -1) return -1;
      const at = offsets[v & RANK] as number;
      if ((offsets[(v & RANK) + 1] as number) - at !== len) continue;
      let j = 0;
      while (j < len && bytes[at + j] === b[start + j]) j++;
      if (j === len) return v;
    }
    return -1;
  }

  /** The rank of the piece whose UTF-8 is bytes[start, end) if the table holds it as a string. */
  stringRank(b: Uint8Array, start: number, end: number): number | undefined {
    const v = this.find(b, start, end);
    return v === -1 || v & FROM_BYTES ? undefined : v;
  }

  /** gpt-tokenizer's getBpeRankFromBytes of bytes[start, end). */
  rankOf(b: Uint8Array, start: number, end: number): number | undefined {
    // Only a run that starts with a BOM's bytes can be valid UTF-8 and read otherwise than as
    // itself: the library's decoder drops the BOM and asks for the rest (the generator checks the
    // table has no other valid byte-array entry and no string that starts with U+FEFF).
    if (end - start >= 3 && b[start] === 0xef && b[start + 1] === 0xbb && b[start + 2] === 0xbf) {
      if (isValidUtf8(b, start, end)) return this.stringRank(b, start + 3, end);
      const v = this.find(b, start, end);
      return v === -1 ? undefined : v & RANK;
    }
    const v = this.find(b, start, end);
    return v === -1 ? undefined : v & RANK;
  }
}
