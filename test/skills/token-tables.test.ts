import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";

// token_count reads the BPE tables from JSON Text modules (scripts/gen-bpe-tables.mjs) instead of
// gpt-tokenizer's own modules; on any text the counts must be the library's.
const TEXT = [
  "Héllo wörld! The quick brown fox — jumps over 13 lazy dogs. ",
  "日本語のテキストと emoji 🚀🔥, code: `const x = arr.map((v) => v * 2);` ",
  "<|endoftext|> tabs\tand\nnewlines, URLs https://example.com/a?b=c#d ",
].join("\n");

describe("token_count tables are gpt-tokenizer's", () => {
  it.each([
    ["cl100k", "cl100k_base"],
    ["o200k", "o200k_base"],
  ])("%s counts like gpt-tokenizer/encoding/%s", { timeout: 60_000 }, async (encoding, name) => {
    const lib =
      name === "cl100k_base"
        ? await import("gpt-tokenizer/encoding/cl100k_base")
        : await import("gpt-tokenizer/encoding/o200k_base");
    const plain = { disallowedSpecial: new Set<string>() };
    for (const text of [TEXT, TEXT.repeat(7), "a"]) {
      const res = await postJson("/api/skills/token-count", { text, encoding });
      const out = await res.json<{ approx_tokens: number }>();
      expect(out.approx_tokens).toBe(lib.countTokens(text, plain));
    }
  });
});
