#!/usr/bin/env node
// Writes gpt-tokenizer's BPE rank tables as binary hash tables (static/assets/bpe/*.bin) that
// token_count reads through the ASSETS binding on first use and looks pieces up in by their UTF-8
// bytes (src/skills/lib/bpe-table.ts reads the layout below), and as JSON arrays
// (static/assets/bpe/*.json), which the README publishes and nothing here reads any more. As JavaScript array literals the
// tables made up 60% of the bundle V8 parsed before the first request; as JSON assets their parse
// and the library's Map of ~200k strings were most of the first call (docs/PERFORMANCE.md, stops
// 32 and 33). Run again after upgrading gpt-tokenizer; `--check` fails if they differ.
//
// Layout, little-endian: four u32 (magic "BPE1", entry count, slot count (a power of two), byte
// count), then the slots (i32: -1 empty, else rank | FROM_BYTES when the library holds the entry
// as a byte array rather than a string), the offsets (u32, entry count + 1: rank r's bytes are
// bytes[offsets[r], offsets[r + 1])), the bytes. Slots are probed linearly from the hash below,
// which must stay bpe-table.ts's (the tests look every token of both tables up through it).
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
const MAGIC = 0x31455042;
const FROM_BYTES = 1 << 24;

/** FNV-1a over bytes, then folded: bpe-table.ts's `hash`. */
function hash(b) {
  let h = 0x811c9dc5;
  for (const x of b) h = Math.imul(h ^ x, 0x01000193);
  return h ^ (h >>> 16);
}

/**
 * The table's entries as bytes, with what the library's lookups assume of them checked: the
 * runtime reproduces `getBpeRankFromBytes` (a valid UTF-8 key is decoded, BOM dropped, and asked of
 * the string Map; any other key is searched among the byte-array entries) only under these.
 */
function entries(ranks) {
  const enc = new TextEncoder();
  const fatal = new TextDecoder("utf8", { fatal: true, ignoreBOM: true });
  const out = [];
  const seen = new Set();
  ranks.forEach((v, rank) => {
    let bytes;
    if (typeof v === "string") {
      if (/\p{Surrogate}/u.test(v) || v.startsWith("\ufeff"))
        throw new Error(`rank ${rank}: string not kept by UTF-8`);
      bytes = enc.encode(v);
    } else {
      bytes = Uint8Array.from(v);
      let valid = true;
      try {
        fatal.decode(bytes);
      } catch {
        valid = false;
      }
      // A valid byte-array entry is found by the library only through its BOM-less string.
      if (valid && !(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf))
        throw new Error(`rank ${rank}: a valid UTF-8 byte-array entry without a BOM`);
    }
    // token_count merges a piece of more than 256 UTF-16 units without asking if it is a token.
    if (bytes.length > 256) throw new Error(`rank ${rank}: ${bytes.length} bytes`);
    const key = Buffer.from(bytes).toString("latin1");
    if (seen.has(key)) throw new Error(`rank ${rank}: bytes of an earlier entry`);
    seen.add(key);
    out.push({ rank, bytes, fromBytes: typeof v !== "string" });
  });
  if (out.length !== ranks.length || out.some((e, i) => e.rank !== i)) throw new Error("the table has holes");
  for (let c = 0; c < 128; c++) {
    if (typeof ranks[out.findIndex((e) => e.bytes.length === 1 && e.bytes[0] === c)] !== "string")
      throw new Error(`ASCII ${c} is not a string entry (the library's one-character path would throw)`);
  }
  return out;
}

function binary(ranks) {
  const list = entries(ranks);
  let slots = 1;
  while (slots < list.length * 2.5) slots *= 2;
  const size = list.reduce((n, e) => n + e.bytes.length, 0);
  const buf = new ArrayBuffer(16 + 4 * slots + 4 * (list.length + 1) + size);
  new Uint32Array(buf, 0, 4).set([MAGIC, list.length, slots, size]);
  const table = new Int32Array(buf, 16, slots).fill(-1);
  const offsets = new Uint32Array(buf, 16 + 4 * slots, list.length + 1);
  const bytes = new Uint8Array(buf, 16 + 4 * (slots + list.length + 1), size);
  let at = 0;
  for (const e of list) {
    offsets[e.rank] = at;
    bytes.set(e.bytes, at);
    at += e.bytes.length;
    let s = hash(e.bytes) & (slots - 1);
    while (table[s] !== -1) s = (s + 1) & (slots - 1);
    table[s] = e.rank | (e.fromBytes ? FROM_BYTES : 0);
  }
  offsets[list.length] = at;
  return Buffer.from(buf);
}

let stale = false;
for (const name of ["cl100k_base", "o200k_base"]) {
  const { default: ranks } = await import(`gpt-tokenizer/bpeRanks/${name}`);
  for (const [ext, data] of [
    ["bin", binary(ranks)],
    ["json", Buffer.from(JSON.stringify(ranks))],
  ]) {
    const file = path.join(root, "static/assets/bpe", `${name}.${ext}`);
    if (check) {
      let old;
      try {
        old = readFileSync(file);
      } catch {}
      if (!old?.equals(data)) {
        console.error(`${file} differs from gpt-tokenizer's ${name}; run node scripts/gen-bpe-tables.mjs`);
        stale = true;
      }
    } else writeFileSync(file, data);
  }
}
process.exit(stale ? 1 : 0);
