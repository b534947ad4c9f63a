import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { buildBundle } from "../../scripts/bench/throughput.mjs";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * Libraries that cost start-up time when evaluated at module scope and are needed only by some
 * requests (docs/PERFORMANCE.md, "Start-up"): each must be reached from src/index.ts through an
 * `import()` somewhere, never through static imports alone, or the Worker evaluates it at start.
 */
const FIRST_USE_ONLY = [
  "viem",
  "ox",
  "jose",
  "ajv",
  "stripe",
  "@x402/evm",
  "@x402/extensions",
  "@x402/core/dist/esm/server",
  "@x402/core/dist/esm/http",
  "@modelcontextprotocol/sdk",
  "@hono/mcp",
  "htmlparser2",
  "html-to-text",
  "mdream",
  "re2js",
  "@cfworker/json-schema",
];

interface Metafile {
  inputs: Record<string, { imports?: { path: string; kind: string }[] }>;
  outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
}

/** Every input reached from the entry by static imports, with the importer it was first reached from. */
function staticallyReached(meta: Metafile, entry: string) {
  const from = new Map<string, string | undefined>([[entry, undefined]]);
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const imp of meta.inputs[file]?.imports ?? []) {
      if (imp.kind !== "import-statement" && imp.kind !== "require-call") continue;
      if (from.has(imp.path)) continue;
      from.set(imp.path, file);
      queue.push(imp.path);
    }
  }
  return from;
}

describe("start-up evaluates only what every request needs", () => {
  it("no heavy library is statically imported from the Worker's entry", { timeout: 180_000 }, () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "start-up-imports-"));
    const metafile = path.join(dir, "meta.json");
    buildBundle(root, { outdir: path.join(dir, "out"), metafile });
    const meta = JSON.parse(readFileSync(metafile, "utf8")) as Metafile;
    const entry = Object.keys(meta.inputs).find((k) => k.endsWith("src/index.ts"));
    expect(entry).toBeDefined();
    const from = staticallyReached(meta, entry as string);
    const chains: string[] = [];
    for (const lib of FIRST_USE_ONLY) {
      const hit = [...from.keys()].find((k) => k.includes(`node_modules/${lib}/`));
      if (!hit) continue;
      const chain: string[] = [];
      for (let f: string | undefined = hit; f !== undefined; f = from.get(f)) {
        chain.push(f.replace(/^.*node_modules\//, ""));
      }
      chains.push(`${lib}: ${chain.join(" <- ")}`);
    }
    expect(chains).toEqual([]);
    // `import { z } from "zod"` anywhere keeps all of zod, its ~40 locale tables included
    // (~260 KiB parsed at every start); `import * as z` lets esbuild keep what is called.
    const locales = Object.values(meta.outputs)
      .flatMap((o) => Object.entries(o.inputs))
      .filter(([file, x]) => /zod\/v4\/locales\/(?!en\.|index\.)/.test(file) && x.bytesInOutput > 0)
      .map(([file]) => file);
    expect(locales).toEqual([]);
  });
});
