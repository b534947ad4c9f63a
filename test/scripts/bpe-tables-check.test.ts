import { execFileSync } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";

// The published tables (static/assets/bpe/*.json, README) and the ones token_count reads
// (*.bin) are generated from the installed gpt-tokenizer and committed: after an upgrade of the
// library they must be written again, or the JSON files drift silently (the .bin files would also
// fail test/skills/token-tables.test.ts, which looks up every library entry in them).
it("static/assets/bpe holds exactly what scripts/gen-bpe-tables.mjs writes from the installed gpt-tokenizer", {
  timeout: 60_000,
}, () => {
  const root = path.resolve(import.meta.dirname, "../..");
  expect(() =>
    execFileSync(process.execPath, ["scripts/gen-bpe-tables.mjs", "--check"], { cwd: root, stdio: "pipe" }),
  ).not.toThrow();
});
