import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { buildBundle } from "../../scripts/bench/throughput.mjs";
// @ts-expect-error plain JS script
import { entryOf, serve, writeConfig } from "../../scripts/bench/workerd-config.mjs";
// @ts-expect-error plain JS script
import { DATA_MODULE_GROUPS } from "../../scripts/build-worker.mjs";
// @ts-expect-error plain JS script
import { freePort } from "../../scripts/lib/proc.mjs";
import { keywordsInLanguage } from "../../src/skills/lib/text-language";
import { ENGLISH_NOUN_LISTS, GERMAN_LOANWORD_LISTING } from "../fixtures/english-noun-lists";
import { PARAGRAPHS } from "../fixtures/language-samples";

const root = path.resolve(import.meta.dirname, "../..");
const modules = path.join(root, "node_modules");

interface Metafile {
  outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
}

/**
 * The files scripts/build-worker.mjs ships as data (DATA_MODULE_GROUPS), by group, chosen here
 * again: a group the build adds or a file it drops fails the first test below.
 */
const stopwordDir = path.join(modules, "stopword/src");
const DATA_FILES = {
  "franc-data": ["franc/data.js"],
  "stopword-lists": readdirSync(stopwordDir)
    .filter((f) => /^stopwords_\w+\.js$/.test(f) && f !== "stopwords_eng.js")
    .map((f) => `stopword/src/${f}`),
};

/**
 * franc's trigram profiles and the `stopword` lists are data: parsed as JavaScript, they were
 * ~48 M of the ~625 M instructions of every start-up (workerd compiles every module of the upload,
 * imported or not; docs/PERFORMANCE.md, "Stop 38"). They ship as Data modules instead (scripts/build-worker.mjs, DATA_MODULE_GROUPS).
 */
describe("franc's profiles and the stopword lists ship as data, not JavaScript", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "data-modules-"));
  const out = path.join(dir, "out");
  const metafile = path.join(dir, "meta.json");
  let built: { files: string[]; meta: Metafile } | undefined;
  /** The production build (`wrangler deploy --dry-run`, which runs scripts/build-worker.mjs). */
  const build = () => {
    if (!built) {
      const files = buildBundle(root, { outdir: out, metafile }) as string[];
      built = { files, meta: JSON.parse(readFileSync(metafile, "utf8")) as Metafile };
    }
    return built;
  };
  let stop: (() => Promise<void>) | undefined;
  afterAll(async () => stop?.());

  it("the build's groups and their files are these (a group added to the build is added here, with its check)", () => {
    const groups = DATA_MODULE_GROUPS as Record<string, () => string[]>;
    expect(Object.keys(groups).sort()).toEqual(Object.keys(DATA_FILES).sort());
    for (const [group, list] of Object.entries(groups)) {
      const files = list().map((f) =>
        f
          .split(path.sep)
          .join("/")
          .replace(/^.*\/node_modules\//, ""),
      );
      expect(files.sort(), group).toEqual([...(DATA_FILES[group as keyof typeof DATA_FILES] ?? [])].sort());
    }
  });

  it("no JavaScript module holds them; wrangler uploads each group as one Data module equal to the library's exports", {
    timeout: 180_000,
  }, async () => {
    const { files, meta } = build();
    // In the chunks, each file is left as a line reading its exports from the text.
    const inJs = Object.values(meta.outputs)
      .flatMap((o) => Object.entries(o.inputs))
      .filter(([input, { bytesInOutput }]) => {
        const file = input.replace(/^.*node_modules\//, "");
        return Object.values(DATA_FILES).some((list) => list.includes(file)) && bytesInOutput > 200;
      })
      .map(([input, { bytesInOutput }]) => `${input}: ${bytesInOutput} bytes`);
    expect(inJs).toEqual([]);
    const francProfile = (await import("franc/data.js")).data.Latin?.spa?.slice(0, 40);
    expect(francProfile).toHaveLength(40);
    const js = files.filter((f) => /\.m?js$/.test(f));
    expect(js.length).toBeGreaterThan(5);
    expect(
      js.filter((f) => readFileSync(path.join(out, f), "utf8").includes(francProfile as string)),
    ).toEqual([]);
    for (const [group, list] of Object.entries(DATA_FILES)) {
      const data = files.filter((f) => f.startsWith(`${group}-`) && f.endsWith(".bin"));
      expect(data).toHaveLength(1);
      const shipped = JSON.parse(readFileSync(path.join(out, data[0] as string), "utf8"));
      expect(Object.keys(shipped).sort()).toEqual([...list].sort());
      for (const file of list) expect(shipped[file]).toEqual({ ...(await import(path.join(modules, file))) });
    }
  });

  it("the built Worker answers keyword_extract as the source does", { timeout: 180_000 }, async () => {
    const { files } = build();
    const port = await freePort();
    const config = writeConfig(out, {
      name: "data-modules",
      files,
      main: entryOf(files),
      port,
      bindings: { FREE_BETA: "true", X402_ENABLED: "false", CARDPAY_ENABLED: "false", RATE_LIMITS: "off" },
    });
    const served = await serve(root, config, { port, probePath: "/__probe", anyStatus: true });
    stop = served.stop;
    const texts = [...Object.values(PARAGRAPHS), ...ENGLISH_NOUN_LISTS, GERMAN_LOANWORD_LISTING];
    const languages = new Set<string>();
    for (const text of texts) {
      const res = await fetch(`http://127.0.0.1:${port}/api/skills/keyword_extract`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text }),
      });
      expect(res.status).toBe(200);
      const { keywords, unique_terms, tokens, language } = (await res.json()) as Record<string, unknown>;
      expect({ keywords, unique_terms, tokens, language }).toEqual(keywordsInLanguage(text, 20));
      languages.add(language as string);
    }
    // Both the lists (coverage) and franc (Portuguese beside Galician, Hebrew-less scripts) decide some.
    expect(languages.size).toBeGreaterThan(10);
  });
});
