import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import * as z from "zod";
import { logOncePerValue } from "../http/log-once";
import { DeadlineError, SharedLoad, within } from "../http/shared-load";
import { UpstreamError } from "../net/fetcher";
import { pieceCounter } from "./lib/bpe-count";
import { BadTable, BpeTable } from "./lib/bpe-table";
import { defineSkill } from "./types";

// Special-token text in user input (<|endoftext|>) is data: counted as ordinary text, never refused.
type Counter = (text: string) => number;
const ENCODINGS = {
  cl100k: "cl100k_base",
  cl100k_base: "cl100k_base",
  o200k: "o200k_base",
  o200k_base: "o200k_base",
} as const;

// The BPE tables are megabytes (o200k ~1.9 MB gzip): they ship as Workers Static Assets
// (static/assets/bpe/*.bin, written by scripts/gen-bpe-tables.mjs), not in the script, and load
// through the ASSETS binding on the first call that needs them, once per isolate. In the script
// they made up two thirds of the gzip bundle, and as JavaScript array literals V8 also had to
// parse them at every start-up; as JSON, their parse and gpt-tokenizer's Map of ~200k strings
// were most of the first call. The binary table is read in place (lib/bpe-table.ts).
type Encoding = "cl100k_base" | "o200k_base";
const TABLE_URL = (name: Encoding) => `https://assets.invalid/assets/bpe/${name}.bin`;
/** Each table's entries (gpt-tokenizer's rank tables) and its pre-tokenizer, the library's own. */
const TABLES: Record<Encoding, { entries: number; split: RegExp }> = {
  cl100k_base: { entries: 100_256, split: CL100K_TOKEN_SPLIT_REGEX },
  o200k_base: { entries: 199_998, split: O200K_TOKEN_SPLIT_REGEX },
};
/**
 * A table read wrong counts wrong, and a loaded table is kept: every call would then fail or
 * miscount until the isolate went away. Besides its layout (BpeTable.read), each table must count
 * this text as the library does (the other encoding's table counts it otherwise); a table that
 * does not is a failed load, tried again by the next call.
 */
const CHECK_TEXT = "Table check: 123 words, punctuation! ÄÖÜ 日本 🚀";
const CHECK_TOKENS: Record<Encoding, number> = { cl100k_base: 17, o200k_base: 15 };

/** A table that could not be loaded: the asset is missing, failed or is not the table. */
class TableUnusable extends Error {}

async function load(name: Encoding, assets: Fetcher): Promise<Counter> {
  const res = await assets.fetch(TABLE_URL(name));
  // A deployment without the table files is broken: say which file, never count with no table.
  if (!res.ok) throw new TableUnusable(`ASSETS answered HTTP ${res.status}`);
  const data = await res.arrayBuffer();
  let table: BpeTable;
  try {
    table = BpeTable.read(data, TABLES[name].entries);
  } catch (e) {
    throw e instanceof BadTable ? new TableUnusable(`${e.message}, not the table of ${name}`) : e;
  }
  const count = pieceCounter(table, TABLES[name].split);
  const checked = count(CHECK_TEXT);
  if (checked !== CHECK_TOKENS[name])
    throw new TableUnusable(`counts ${checked} tokens where ${name} counts ${CHECK_TOKENS[name]}`);
  return count;
}
/**
 * How long a call waits for its table, and how long a read is joined before the next call starts
 * another: a read whose request was cancelled never settles (http/shared-load.ts). Far above a
 * normal load (an asset read and a parse), which a busy machine has stretched past 5 s.
 */
const TABLE_WAIT_MS = 20_000;
// A failed load is not kept: the next call tries again.
const tables: Record<Encoding, SharedLoad<Counter>> = {
  cl100k_base: new SharedLoad(TABLE_WAIT_MS),
  o200k_base: new SharedLoad(TABLE_WAIT_MS),
};
/** Tests: forget this isolate's tables (the next call loads them again). */
export function forgetBpeTables() {
  tables.cl100k_base = new SharedLoad(TABLE_WAIT_MS);
  tables.o200k_base = new SharedLoad(TABLE_WAIT_MS);
}
/**
 * The encoding's counter. A table that did not arrive in time is a 504, one that failed to load a
 * 502 (the detail says which table), like a network skill's upstream that timed out or failed
 * (not charged either way: the x402 payment is not settled, a card credit is given back); the
 * next call loads it again. Never a bare 500: the asset store is ours, but from the call's side
 * it is a dependency that failed, and the answer says to retry. Not a 503: the OpenAPI document
 * and the guides give 503 to payments that could not be taken (with Retry-After), while 502/504
 * `{detail, charged:false}` is what clients already read as "a dependency failed, not charged";
 * no Retry-After, as a failed load is not kept and the next call tries again at once.
 */
async function counter(name: Encoding, assets: Fetcher): Promise<Counter> {
  try {
    return await within(
      tables[name].get(() => load(name, assets)),
      TABLE_WAIT_MS,
      `BPE table ${name}`,
    );
  } catch (e) {
    if (e instanceof DeadlineError) throw new UpstreamError(504, e.message);
    const why = e instanceof TableUnusable ? e.message : `the load threw: ${String(e)}`;
    // Once per isolate and table (again when the reason changes): every call meets it until fixed.
    logOncePerValue(`bpe-table:${name}`, why, {
      level: "error",
      msg: "BPE table unusable",
      asset: new URL(TABLE_URL(name)).pathname,
      error: why,
    });
    throw new UpstreamError(502, `BPE table ${name} could not be loaded from this service's static assets`);
  }
}

// JavaScript's \s (what `\S+` splits words on): ASCII and Unicode white space, line terminators, BOM.
const isSpace = (c: number) =>
  c === 32 ||
  (c >= 9 && c <= 13) ||
  (c >= 0xa0 &&
    (c === 0xa0 ||
      c === 0x1680 ||
      (c >= 0x2000 && c <= 0x200a) ||
      c === 0x2028 ||
      c === 0x2029 ||
      c === 0x202f ||
      c === 0x205f ||
      c === 0x3000 ||
      c === 0xfeff));

/**
 * Code points (a surrogate pair is one, a lone surrogate one) and runs of non-white-space, in one
 * pass: `[...text].length` and `text.match(/\S+/g)` built a thousand strings per KB, a quarter of
 * a 1 KB call beside the tokenizer.
 */
function charsAndWords(text: string) {
  let chars = text.length;
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) chars--;
    }
    if (isSpace(c)) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  return { chars, words };
}

/** gpt-4o-mini input price, USD per token ($0.15 per million, OpenAI price list). */
const GPT_4O_MINI_INPUT_USD_PER_TOKEN = 0.15 / 1_000_000;

export const tokenCount = defineSkill({
  id: "token_count",
  name: "Token count",
  category: "text_ops",
  price_usd: 0.004,
  kind: "utility",
  readsAssets: true,
  description:
    "Count tokens exactly with real BPE tables (cl100k_base or o200k_base), plus characters and words, and a USD cost hint for sending the text as input to gpt-4o-mini. Special-token text such as <|endoftext|> is counted as plain text. Deterministic and offline.",
  input: () =>
    z.object({
      text: z.string().max(400000).meta({ description: "Text to count." }),
      encoding: z
        .string()
        .max(32)
        .default("cl100k")
        .pipe(z.enum(["cl100k", "cl100k_base", "o200k", "o200k_base"]))
        .meta({
          description: "cl100k (default) or o200k, with or without _base; the canonical name is echoed.",
          enum: ["cl100k", "cl100k_base", "o200k", "o200k_base"],
        }),
    }),
  output: () =>
    z.object({
      encoding: z.enum(["cl100k_base", "o200k_base"]),
      chars: z.int().min(0).meta({ description: "Code points." }),
      words: z.int().min(0),
      approx_tokens: z.int().min(0).meta({ description: "Exact BPE token count." }),
      usd_hint_gpt_4o_mini: z
        .number()
        .min(0)
        .meta({ description: "Cost of the tokens as gpt-4o-mini input." }),
    }),
  example_request: { text: "Hello, agents of the web!", encoding: "cl100k_base" },
  example_response: {
    skill: "token_count",
    ok: true,
    encoding: "cl100k_base",
    chars: 25,
    words: 5,
    approx_tokens: 7,
    usd_hint_gpt_4o_mini: 0.00000105,
  },
  async run({ text, encoding }, { env }) {
    const canonical = ENCODINGS[encoding];
    const count = await counter(canonical, env.ASSETS);
    const tokens = count(text);
    const { chars, words } = charsAndWords(text);
    return {
      encoding: canonical,
      chars,
      words,
      approx_tokens: tokens,
      usd_hint_gpt_4o_mini: Number((tokens * GPT_4O_MINI_INPUT_USD_PER_TOKEN).toPrecision(6)),
    };
  },
});
