// Benchmark-only Worker for scripts/bench/bpe-first.mjs: token_count's first o200k call in a fresh
// isolate, whole (the skill's own `run`) and by phase. Never deployed.
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { pieceCounter } from "../../src/skills/lib/bpe-count";
import { BpeTable } from "../../src/skills/lib/bpe-table";
import { tokenCount } from "../../src/skills/token-count";

interface Env {
  ASSETS: Fetcher;
}
const ctxOf = (env: Env) => ({ env, requestId: "bench" }) as unknown as Parameters<typeof tokenCount.run>[1];

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/probe") return new Response("ok");
    const { text, encoding } = (await request.json()) as { text: string; encoding: "cl100k" | "o200k" };
    if (url.pathname === "/run") {
      // What the bench's first column times: the skill's run, its table load included.
      const t = performance.now();
      const out = await tokenCount.run({ text, encoding }, ctxOf(env));
      return Response.json({ ms: performance.now() - t, tokens: out.approx_tokens });
    }
    if (url.pathname === "/phases") {
      // The binary table's load, step by step, as token-count.ts does it (the o200k table; the
      // columns keep stop 32's names: "parse" reads the layout, "build" makes the counter).
      const t = performance.now();
      const t0 = performance.now();
      const res = await env.ASSETS.fetch("https://assets.invalid/assets/bpe/o200k_base.bin");
      const body = await res.arrayBuffer();
      const t1 = performance.now();
      const table = BpeTable.read(body, 199_998);
      const t2 = performance.now();
      const count = pieceCounter(table, O200K_TOKEN_SPLIT_REGEX);
      const t3 = performance.now();
      const tokens = count(text);
      const t4 = performance.now();
      return Response.json({
        import: t0 - t,
        fetch: t1 - t0,
        parse: t2 - t1,
        build: t3 - t2,
        count: t4 - t3,
        tokens,
      });
    }
    return new Response("not found", { status: 404 });
  },
};
