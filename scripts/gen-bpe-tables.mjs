#!/usr/bin/env node
// Writes gpt-tokenizer's BPE rank tables as JSON text (src/skills/bpe/*.txt). The Worker imports
// them as Text modules: a string costs nothing at start-up, while the same tables as JavaScript
// array literals made up 60% of the bundle V8 had to parse before the first request (see
// docs/PERFORMANCE.md). Run again after upgrading gpt-tokenizer; `--check` fails if they differ.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
let stale = false;
for (const name of ["cl100k_base", "o200k_base"]) {
  const { default: ranks } = await import(`gpt-tokenizer/bpeRanks/${name}`);
  const text = JSON.stringify(ranks);
  const file = path.join(root, "src/skills/bpe", `${name}.txt`);
  if (check) {
    if (readFileSync(file, "utf8") !== text) {
      console.error(`${file} differs from gpt-tokenizer's ${name}; run node scripts/gen-bpe-tables.mjs`);
      stale = true;
    }
  } else writeFileSync(file, text);
}
process.exit(stale ? 1 : 0);
