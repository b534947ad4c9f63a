#!/usr/bin/env node
// Writes gpt-tokenizer's BPE rank tables as JSON (static/assets/bpe/*.json). They ship as Workers
// Static Assets that token_count reads through the ASSETS binding on first use: as JavaScript array
// literals they made up 60% of the bundle V8 parsed before the first request, and even as Text
// modules two thirds of the gzip bundle (see docs/PERFORMANCE.md). Run again after upgrading
// gpt-tokenizer; `--check` fails if they differ.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
let stale = false;
for (const name of ["cl100k_base", "o200k_base"]) {
  const { default: ranks } = await import(`gpt-tokenizer/bpeRanks/${name}`);
  const text = JSON.stringify(ranks);
  const file = path.join(root, "static/assets/bpe", `${name}.json`);
  if (check) {
    if (readFileSync(file, "utf8") !== text) {
      console.error(`${file} differs from gpt-tokenizer's ${name}; run node scripts/gen-bpe-tables.mjs`);
      stale = true;
    }
  } else writeFileSync(file, text);
}
process.exit(stale ? 1 : 0);
