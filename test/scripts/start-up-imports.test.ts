import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { buildBundle, staticClosure } from "../../scripts/bench/throughput.mjs";

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
  "@modelcontextprotocol/server",
  "@modelcontextprotocol/core",
  "htmlparser2",
  "markdown-it",
  "html-to-text",
  "mdream",
  "re2js",
  "@cfworker/json-schema",
  "html-encoding-sniffer",
  "@exodus/bytes",
  "entities",
  "jsonc-parser",
  // keyword_extract's, seo's and ai_detector's language detection (lib/text-language.ts).
  "franc",
  "trigram-utils",
];

interface Metafile {
  inputs: Record<string, { imports?: { path: string; kind: string }[] }>;
  outputs: Record<
    string,
    {
      entryPoint?: string;
      imports: { path: string; kind: string; external?: boolean }[];
      inputs: Record<string, { bytesInOutput: number }>;
    }
  >;
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

/**
 * The output chunks the entry chunk imports statically, itself included: what workerd evaluates
 * at start-up (the build splits every `import()` target into chunks of its own).
 */
function entryClosure(meta: Metafile, entry: string) {
  const start = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === entry)?.[0];
  if (start === undefined) throw new Error(`no output chunk for ${entry}`);
  return staticClosure(meta, start) as Set<string>;
}

describe("start-up evaluates only what every request needs", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "start-up-imports-"));
  const metafile = path.join(dir, "meta.json");
  let built: Metafile | undefined;
  /** The production build (`wrangler deploy --dry-run`, which runs scripts/build-worker.mjs). */
  const build = () => {
    if (!built) {
      buildBundle(root, { outdir: path.join(dir, "out"), metafile });
      built = JSON.parse(readFileSync(metafile, "utf8")) as Metafile;
    }
    return built;
  };

  it("no heavy library is statically imported from the Worker's entry", { timeout: 180_000 }, () => {
    const meta = build();
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

  it("every heavy library is in a chunk loaded on first use, not in the entry chunk's static closure", {
    timeout: 180_000,
  }, () => {
    const meta = build();
    const closure = entryClosure(meta, "src/index.ts");
    // The split happened: the first-use code lives in chunks outside the closure.
    expect(
      Object.keys(meta.outputs).filter((k) => k.endsWith(".mjs") && !closure.has(k)).length,
    ).toBeGreaterThan(5);
    const found: string[] = [];
    for (const chunk of closure) {
      for (const [input, { bytesInOutput }] of Object.entries(meta.outputs[chunk]?.inputs ?? {})) {
        const lib = FIRST_USE_ONLY.find((l) => input.includes(`node_modules/${l}/`));
        if (lib && bytesInOutput > 0)
          found.push(`${lib}: ${input.replace(/^.*node_modules\//, "")} in ${chunk}`);
      }
    }
    expect(found).toEqual([]);
    // Of the stopword package's 62 lists, start-up holds English's alone (research and stylometry
    // import stopword/src/stopwords_eng.js: the package has no exports map, and its index imports
    // every list, which a static import of it put in the entry's closure beside text-language's).
    const lists = [...closure].flatMap((chunk) =>
      Object.entries(meta.outputs[chunk]?.inputs ?? {})
        .filter(([input, { bytesInOutput }]) => input.includes("node_modules/stopword/") && bytesInOutput > 0)
        .map(([input]) => input.replace(/^.*node_modules\//, "")),
    );
    expect(lists).toEqual(["stopword/src/stopwords_eng.js"]);
    // Every heavy library is reached by the build at all (a renamed package must not pass vacuously).
    const reached = Object.keys(meta.inputs);
    expect(FIRST_USE_ONLY.filter((l) => !reached.some((i) => i.includes(`node_modules/${l}/`)))).toEqual([]);
  });

  it("seo loads the language detector only for a page whose keywords it extracts", {
    timeout: 180_000,
  }, () => {
    const meta = build();
    // seo.ts imports seo-keywords.ts before its cache check (the caller's keywords are the cache
    // key) and seo-audit.ts on a miss, with the caller's keywords too: neither may bring it.
    const fromAudit = Object.keys(meta.inputs)
      .filter((k) => /src\/skills\/lib\/seo-(audit|keywords)\.ts$/.test(k))
      .flatMap((k) => [...staticallyReached(meta, k).keys()]);
    expect(fromAudit.length).toBeGreaterThan(2);
    expect(fromAudit.filter((f) => f.includes("text-language") || f.includes("node_modules/franc/"))).toEqual(
      [],
    );
  });
});
