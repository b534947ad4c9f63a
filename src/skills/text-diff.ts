import {
  DIFF_DELETE,
  DIFF_EQUAL,
  DIFF_INSERT,
  type Diff,
  diffMain,
  resolveOptions,
} from "diff-match-patch-es";
import * as z from "zod";
import { codePointLength } from "../text-cut";
import { defineSkill } from "./types";

/**
 * Bounded diff. diff-match-patch's bisection costs up to (n+m)²/2 steps for n and m tokens, and
 * its only brake is a wall-clock deadline, which does not advance during computation on deployed
 * Workers. So the work is bounded by size instead: texts are diffed hierarchically (lines, then
 * sentences, then words, then characters), each changed block is refined at the next level only
 * while its worst-case cost fits the block cap and the call's remaining budget, and a block that
 * does not fit stays as one delete plus one insert. The script is always complete and valid.
 */
const BLOCK_CAP = 8_000_000;
const CALL_BUDGET = 40_000_000;
// Resolved once: diffMain copies and marks an unresolved options object on every call.
const NO_DEADLINE = resolveOptions({ diffTimeout: 0 });

type Mode = "char" | "word" | "line";
type Level = "line" | "sentence" | "word" | "char";
const LEVELS: Record<Mode, Level[]> = {
  char: ["line", "sentence", "word", "char"],
  word: ["line", "sentence", "word"],
  line: ["line"],
};

const SPLIT: Record<Exclude<Level, "char">, RegExp> = {
  line: /[^\n]*\n|[^\n]+$/g,
  sentence: /[^.!?\n]*(?:[.!?]+\s*|\n|$)/g,
  word: /\s+|[\p{L}\p{M}\p{N}_]+|[^\s\p{L}\p{M}\p{N}_]/gu,
};

function tokenize(text: string, level: Level): string[] {
  if (level === "char") return Array.from(text); // code points: never split a surrogate pair
  const tokens = text.match(SPLIT[level]) ?? [];
  // Only the sentence pattern can match empty (at the end); a line or word token has a character.
  return level === "sentence" ? tokens.filter((t) => t.length > 0) : tokens;
}

// Skips the surrogate range so every token maps to one BMP code unit diff-match-patch can compare.
function tokenCode(index: number): number {
  return index < 0xd800 ? index : index + 0x800;
}
const MAX_TOKENS = 0xffff - 0x800;
/** The index tokenCode made `code` of. */
function tokenIndex(code: number): number {
  return code < 0xd800 ? code : code - 0x800;
}

// Any surrogate unit, paired or lone: a char-level token (a code point) may then be two units.
const SURROGATE = /[\ud800-\udfff]/;

class Differ {
  private budget = CALL_BUDGET;
  constructor(private readonly levels: Level[]) {}

  run(a: string, b: string): Diff[] {
    const out: Diff[] = [];
    this.refine(a, b, 0, out);
    return mergeRuns(out);
  }

  private refine(a: string, b: string, depth: number, out: Diff[]) {
    if (a === b) {
      if (a) out.push([DIFF_EQUAL, a]);
      return;
    }
    if (!a || !b) {
      if (a) out.push([DIFF_DELETE, a]);
      if (b) out.push([DIFF_INSERT, b]);
      return;
    }
    const level = this.levels[depth];
    if (level === undefined) {
      out.push([DIFF_DELETE, a], [DIFF_INSERT, b]);
      return;
    }
    if (level === "char" && !SURROGATE.test(a) && !SURROGATE.test(b)) {
      // Every code point is one code unit, and diff-match-patch (with checklines false, as here: no
      // line-mode speed-up) only compares units for equality and counts them: the texts are already
      // their own token codes, so there is nothing to split, encode or expand.
      const cost = this.cost(a.length + b.length);
      if (cost < 0) out.push([DIFF_DELETE, a], [DIFF_INSERT, b]);
      else this.align(a, b, cost, depth, out, null);
      return;
    }
    const ta = tokenize(a, level);
    const tb = tokenize(b, level);
    const cost = this.cost(ta.length + tb.length);
    if (cost < 0) {
      // Too large to align at this level: one replacement block, and finer levels are pointless.
      out.push([DIFF_DELETE, a], [DIFF_INSERT, b]);
      return;
    }
    // Token i is the code unit tokenCode(i), decoded by index: a reversed copy of `codes` per block
    // and a string iterator per run were ~6-11 % of a 1 KB call (docs/PERFORMANCE.md, stop 39).
    const codes = new Map<string, number>();
    const tokens: string[] = [];
    const ea = encode(ta, codes, tokens);
    const eb = encode(tb, codes, tokens);
    if (ea === null || eb === null) {
      out.push([DIFF_DELETE, a], [DIFF_INSERT, b]);
      return;
    }
    this.align(ea, eb, cost, depth, out, tokens);
  }

  /** The bisection's worst case for `n` tokens, or -1 when it does not fit the caps. */
  private cost(n: number): number {
    const cost = n ** 2 / 2;
    return cost > BLOCK_CAP || cost > this.budget ? -1 : cost;
  }

  /** Diffs two encoded texts; `tokens` decodes them (null: they are the texts themselves). */
  private align(ea: string, eb: string, cost: number, depth: number, out: Diff[], tokens: string[] | null) {
    this.budget -= cost;
    const ops = diffMain(ea, eb, NO_DEADLINE, false);
    // Adjacent delete/insert runs are a changed block: refine it one level finer.
    let del = "";
    let ins = "";
    for (const d of ops) {
      const op = d[0];
      const text = tokens ? expand(d[1], tokens) : d[1];
      if (op === DIFF_DELETE) del += text;
      else if (op === DIFF_INSERT) ins += text;
      else {
        if (del || ins) this.refine(del, ins, depth + 1, out);
        del = "";
        ins = "";
        out.push([DIFF_EQUAL, text]);
      }
    }
    if (del || ins) this.refine(del, ins, depth + 1, out);
  }
}

function encode(list: string[], codes: Map<string, number>, tokens: string[]): string | null {
  // One flat string from the codes: appending a unit at a time built a rope diff-match-patch
  // then had to flatten.
  const units: number[] = [];
  for (const t of list) {
    let c = codes.get(t);
    if (c === undefined) {
      if (tokens.length >= MAX_TOKENS) return null;
      c = tokenCode(tokens.length);
      codes.set(t, c);
      tokens.push(t);
    }
    units.push(c);
  }
  return String.fromCharCode(...units);
}

function expand(s: string, tokens: string[]): string {
  let text = "";
  for (let i = 0; i < s.length; i++) text += tokens[tokenIndex(s.charCodeAt(i))];
  return text;
}

/**
 * Joins adjacent operations of the same kind. (diff-match-patch's diffCleanupMerge also factors
 * common prefixes out of replacements, which would split words in word mode and surrogate pairs.)
 */
function mergeRuns(ops: Diff[]): Diff[] {
  const merged: Diff[] = [];
  for (const d of ops) {
    const op = d[0];
    const text = d[1];
    if (!text) continue;
    const last = merged[merged.length - 1];
    if (last && last[0] === op) last[1] += text;
    else merged.push([op, text]);
  }
  return merged;
}

export function diffTexts(a: string, b: string, mode: Mode) {
  const ops: { op: "equal" | "del" | "ins"; value: string }[] = [];
  let inserted = 0;
  let deleted = 0;
  let equal = 0;
  for (const d of new Differ(LEVELS[mode]).run(a, b)) {
    const value = d[1];
    const n = codePointLength(value);
    if (d[0] === DIFF_INSERT) {
      ops.push({ op: "ins", value });
      inserted += n;
    } else if (d[0] === DIFF_DELETE) {
      ops.push({ op: "del", value });
      deleted += n;
    } else {
      ops.push({ op: "equal", value });
      equal += n;
    }
  }
  return { mode, ops, inserted, deleted, equal };
}

export const textDiff = defineSkill({
  id: "text_diff",
  name: "Text diff",
  category: "text_ops",
  price_usd: 0.006,
  kind: "utility",
  description:
    "Compute a complete edit script between two texts (up to 200,000 characters each) at char, word or line granularity: equal, del and ins operations whose values rebuild both inputs, with character counts. Work is bounded, so unrelated inputs still answer quickly. Deterministic and offline.",
  input: () =>
    z.object({
      a: z.string().max(200000).meta({ description: "Original text." }),
      b: z.string().max(200000).meta({ description: "New text." }),
      options: z
        .looseObject({ mode: z.enum(["char", "word", "line"]).optional() })
        .nullable()
        .default(null)
        .meta({ description: "Free-form; `mode` is char (default), word or line." }),
    }),
  output: () =>
    z.object({
      mode: z.enum(["char", "word", "line"]),
      ops: z.array(z.object({ op: z.enum(["equal", "del", "ins"]), value: z.string() })).meta({
        description: "Edit script: equal and del values rebuild a, equal and ins values rebuild b.",
      }),
      inserted: z.int().min(0).meta({ description: "Code points inserted." }),
      deleted: z.int().min(0).meta({ description: "Code points deleted." }),
      equal: z.int().min(0).meta({ description: "Code points unchanged." }),
    }),
  example_request: { a: "kitten sat", b: "sitting sat" },
  example_response: {
    skill: "text_diff",
    ok: true,
    mode: "char",
    ops: [
      { op: "del", value: "k" },
      { op: "ins", value: "s" },
      { op: "equal", value: "itt" },
      { op: "del", value: "e" },
      { op: "ins", value: "i" },
      { op: "equal", value: "n" },
      { op: "ins", value: "g" },
      { op: "equal", value: " sat" },
    ],
    inserted: 3,
    deleted: 2,
    equal: 8,
  },
  run: ({ a, b, options }) => diffTexts(a, b, options?.mode ?? "char"),
});
