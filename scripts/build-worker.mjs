#!/usr/bin/env node
// Builds the Worker into separate ES modules: every `import()` target becomes its own chunk,
// evaluated when it is first imported, with one instance of every module (docs/PERFORMANCE.md,
// "Start-up", fourth pass). wrangler.toml's `[build] command` runs this before `wrangler dev` and
// `wrangler deploy`; wrangler bundles the entry chunk and attaches the other chunks and the wasm
// as additional modules (`find_additional_modules`, `rules`).
//
//   node scripts/build-worker.mjs [--entry src/index.ts] [--outdir build/worker]
//                                 [--config wrangler.toml] [--no-minify]
//
// The esbuild options are the ones wrangler's own bundler uses for this Worker (wrangler 4,
// `bundleWorker` and its nodejs_compat "v2" plugin), so the code runs as it ran from one bundle:
// conditions workerd/worker/browser, target es2024, NODE_ENV and navigator.userAgent defined,
// Node built-ins (`node:*` and unprefixed) left to workerd, `require()` of a built-in turned into
// an import, unenv's npm aliases. keep_names stays off (wrangler.toml says why).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
// wrangler's own dependencies (installed with it, same versions its bundler uses).
import { getCloudflarePreset, nonPrefixedNodeModules } from "@cloudflare/unenv-preset";
import * as esbuild from "esbuild";
import { defineEnv } from "unenv";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);

/**
 * The bundler's own packages must be the versions wrangler itself bundles with (package.json pins
 * them): after a wrangler upgrade the two builds would otherwise drift apart without a word.
 */
function sameToolsAsWrangler() {
  const wanted = require("wrangler/package.json").dependencies;
  const drift = ["esbuild", "unenv", "@cloudflare/unenv-preset"]
    .map((name) => [name, wanted[name], require(`${name}/package.json`).version])
    .filter(([, want, have]) => want !== have);
  if (drift.length)
    throw new Error(
      `scripts/build-worker.mjs uses ${drift.map(([n, w, h]) => `${n} ${h} (wrangler has ${w})`).join(", ")}: pin them in package.json to wrangler's`,
    );
}

/**
 * patches/ must be in what ships: without it (an install with --ignore-scripts) json_schema_validate's
 * uniqueItems is the library's n² loop, which the meter then refuses (schema-work.ts), so
 * every schema using it is a 422. The patch sets this string on its helper, which survives minification.
 */
const JSON_SCHEMA_PATCH = "agent-skills-marketplace: linear uniqueItems, unescaped keys";
export function jsonSchemaPatched(modules = path.join(root, "node_modules")) {
  for (const flavour of ["esm", "commonjs"]) {
    const file = path.join(modules, "@cfworker/json-schema/dist", flavour, "validate.js");
    if (!readFileSync(file, "utf8").includes(JSON_SCHEMA_PATCH))
      throw new Error(
        `${path.relative(root, file)} lacks patches/@cfworker+json-schema+*.patch: run \`rm -rf node_modules/@cfworker/json-schema && npm install\` (patch-package cannot apply a changed patch over an older one)`,
      );
  }
}

/**
 * Keys of a wrangler config that shape wrangler's own bundle. This build applies none of them to
 * the chunks, so a config that sets one is refused rather than built differently from what it says.
 */
const UNAPPLIED_KEYS =
  /^\s*(\[(define|alias)\]|\[env\.|(define|alias|tsconfig|jsx_factory|jsx_fragment|node_compat)\s*=)/m;

/** compatibility_date and compatibility_flags of a wrangler TOML file (the keys this build reads). */
function compat(configFile) {
  const toml = readFileSync(configFile, "utf8");
  const unapplied = toml.match(UNAPPLIED_KEYS)?.[1];
  if (unapplied)
    throw new Error(
      `${configFile}: "${unapplied.trim()}" would not reach the split chunks: extend scripts/build-worker.mjs`,
    );
  const date = toml.match(/^compatibility_date\s*=\s*"([^"]+)"/m)?.[1];
  const flags = toml.match(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m)?.[1];
  if (!date) throw new Error(`${configFile}: no compatibility_date`);
  return {
    compatibilityDate: date,
    compatibilityFlags: [...(flags ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1]),
  };
}

/** wrangler's nodejs_compat (v2) esbuild plugin, reduced to what it does at our compatibility date. */
function nodejsCompat({ compatibilityDate, compatibilityFlags }) {
  const { alias, external, inject, polyfill } = defineEnv({
    presets: [getCloudflarePreset({ compatibilityDate, compatibilityFlags }), { alias: { debug: "debug" } }],
    npmShims: true,
  }).env;
  // workerd provides every Node global this date needs; wrangler would inject unenv's otherwise.
  if (Object.keys(inject).length || polyfill.length)
    throw new Error(
      "unenv wants globals injected at this compatibility date: extend scripts/build-worker.mjs",
    );
  const builtin = new RegExp(`^(${nonPrefixedNodeModules.join("|")}|node:.+)$`);
  const aliased = Object.entries(alias).filter(([name, to]) => name !== to && !to.startsWith("node:"));
  // A built-in the preset replaces with a polyfill (wrangler's "hybrid" modules) would be left to
  // workerd by the handler below, which runs first: refuse it instead of building it differently.
  const polyfilled = aliased.filter(([name]) => builtin.test(name)).map(([name]) => name);
  if (polyfilled.length)
    throw new Error(
      `unenv polyfills these Node built-ins at this compatibility date: ${polyfilled.join(", ")}: extend scripts/build-worker.mjs`,
    );
  return {
    name: "nodejs-compat",
    setup(build) {
      build.onResolve({ filter: builtin }, (args) =>
        args.kind === "require-call"
          ? { path: args.path, namespace: "node-built-in" }
          : { path: args.path, external: true },
      );
      // A CommonJS dependency's require("node:x") becomes an import of the built-in's default export.
      build.onLoad({ filter: /.*/, namespace: "node-built-in" }, ({ path: p }) => ({
        contents: `import m from ${JSON.stringify(p)}; module.exports = m;`,
        loader: "js",
      }));
      for (const [name, to] of aliased) {
        let resolved;
        try {
          resolved = require.resolve(to);
        } catch {
          continue; // wrangler skips an alias it cannot resolve, too
        }
        const filter = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`);
        build.onResolve({ filter }, (args) => {
          // wrangler wraps a require() of these ESM shims so it gets their default export; none is
          // required today, so one that appears is refused rather than handed the namespace.
          if (args.kind === "require-call")
            throw new Error(
              `require("${name}") of an unenv shim (${args.importer}): extend scripts/build-worker.mjs`,
            );
          return { path: resolved, external: external.includes(to) };
        });
      }
    },
  };
}

/**
 * `import wasm from "./x.wasm"` stays an import of a CompiledWasm module (wrangler's rule for
 * `**\/*.wasm`): the file goes next to the chunks under a content-hashed name, in `files`.
 */
function wasmModules(files) {
  return {
    name: "wasm-modules",
    setup(build) {
      build.onResolve({ filter: /\.wasm(\?module)?$/ }, (args) => {
        const file = path.resolve(args.resolveDir, args.path.replace(/\?module$/, ""));
        const bytes = readFileSync(file);
        const hash = createHash("sha1").update(bytes).digest("hex").slice(0, 16);
        const name = `${path.basename(file, ".wasm")}-${hash}.wasm`;
        files.set(name, bytes);
        // Every chunk sits in the output directory itself, so one relative name serves every importer.
        return { path: `./${name}`, external: true };
      });
    },
  };
}

/**
 * Library modules that hold only data, shipped as data instead of JavaScript: workerd compiles
 * every JavaScript module of the upload at load, imported or not, so their literals were parsed at
 * every start-up (~75 M instructions per MB; docs/PERFORMANCE.md, "Stop 38"). Each group's files
 * are evaluated here, in node, and their exports written as one JSON file beside the chunks, which
 * wrangler uploads as a Data module (its default rule for `*.bin`; workerd hands it over as an
 * ArrayBuffer, parsing nothing: cheaper at load than a Text module, which it turns into a string);
 * each file is replaced by a module reading its exports from that JSON, decoded and parsed when
 * the chunk that needs it is first imported. A file whose exports JSON would not give back equal
 * is refused.
 *   franc-data: franc's trigram profiles (franc/data.js).
 *   stopword-lists: the `stopword` lists but English's, which start-up holds anyway (research and
 *   stylometry import it statically; as its own module it stays JavaScript, 2 KB).
 */
export const DATA_MODULE_GROUPS = {
  "franc-data": () => [fileURLToPath(import.meta.resolve("franc/data.js"))],
  "stopword-lists": () => {
    const dir = path.dirname(fileURLToPath(import.meta.resolve("stopword/src/stopword.js")));
    return readdirSync(dir)
      .filter((f) => /^stopwords_\w+\.js$/.test(f) && f !== "stopwords_eng.js")
      .map((f) => path.join(dir, f));
  },
};

/** Key of a data file in its group's text: its path inside node_modules (wherever that is). */
const dataKey = (file) =>
  file
    .split(path.sep)
    .join("/")
    .replace(/^.*\/node_modules\//, "");

/**
 * The plugin serving DATA_MODULE_GROUPS' files from their Data modules, each put in `files` once
 * the build reads one of its files (another entry, such as the bench's, may read none).
 */
async function dataModules(files) {
  const groupOf = new Map();
  const namesOf = new Map();
  const blobs = new Map();
  for (const [group, list] of Object.entries(DATA_MODULE_GROUPS)) {
    const data = {};
    for (const file of list()) {
      const exports = { ...(await import(pathToFileURL(file).href)) };
      if (!isDeepStrictEqual(JSON.parse(JSON.stringify(exports)), exports))
        throw new Error(`${file}: its exports are not plain JSON data: take it out of DATA_MODULE_GROUPS`);
      data[dataKey(file)] = exports;
      groupOf.set(file, group);
      namesOf.set(file, Object.keys(exports));
    }
    if (!Object.keys(data).length) throw new Error(`DATA_MODULE_GROUPS.${group} matched no file`);
    const bytes = Buffer.from(JSON.stringify(data));
    const hash = createHash("sha1").update(bytes).digest("hex").slice(0, 16);
    blobs.set(group, { name: `${group}-${hash}.bin`, bytes });
  }
  return {
    name: "data-modules",
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, ({ path: file }) => {
        const group = groupOf.get(file);
        if (group === undefined) return undefined;
        return {
          contents: `import all from "data-module:${group}";\nexport const { ${namesOf.get(file).join(", ")} } = all[${JSON.stringify(dataKey(file))}];\n`,
          loader: "js",
        };
      });
      build.onResolve({ filter: /^data-module:/ }, (args) => ({ path: args.path, namespace: "data-module" }));
      build.onLoad({ filter: /.*/, namespace: "data-module" }, ({ path: p }) => {
        const { name, bytes } = blobs.get(p.slice("data-module:".length));
        files.set(name, bytes);
        return {
          contents: `import bytes from "./${name}";\nexport default JSON.parse(new TextDecoder().decode(bytes));\n`,
          loader: "js",
        };
      });
      // Every chunk sits in the output directory itself, so one relative name serves every importer.
      build.onResolve({ filter: /\.bin$/, namespace: "data-module" }, (args) => ({
        path: args.path,
        external: true,
      }));
    },
  };
}

/**
 * Makes `dir` hold exactly `files`, writing only what changed: an unchanged build touches nothing,
 * so a running `wrangler dev` (which watches these files) does not reload when another command
 * (a test, the bench) runs the same build.
 */
function sync(dir, files) {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir))
    if (!files.has(name) && !name.endsWith(".part")) rmSync(path.join(dir, name), { recursive: true });
  for (const [name, bytes] of files) {
    const file = path.join(dir, name);
    if (existsSync(file) && readFileSync(file).equals(bytes)) continue;
    // Whole files only: a `wrangler dev` or another build reading this directory never sees half.
    const part = `${file}.${process.pid}.part`;
    writeFileSync(part, bytes);
    renameSync(part, file);
  }
}

/**
 * Builds `entry` into `outdir` (relative to the repository root) and writes esbuild's metafile
 * next to it as `<outdir>.meta.json` (the bench's top contributors and
 * test/scripts/start-up-imports.test.ts read it); returns the metafile.
 */
export async function buildWorker({
  entry = "src/index.ts",
  outdir = "build/worker",
  config = "wrangler.toml",
  minify = true,
} = {}) {
  sameToolsAsWrangler();
  jsonSchemaPatched();
  const out = path.resolve(root, outdir);
  const files = new Map();
  // One build for every command (wrangler's bundler said "development" under `wrangler dev`): the
  // local stack runs what ships, and a build from a test or the bench while `wrangler dev` runs
  // writes the same bytes, so nothing under it changes.
  const production = JSON.stringify(process.env.NODE_ENV || "production");
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { index: path.resolve(root, entry) },
    outdir: out,
    write: false,
    bundle: true,
    splitting: true,
    format: "esm",
    // `*.chunk.mjs` is what wrangler.toml's ESModule rule matches (and nothing under node_modules).
    chunkNames: "[name]-[hash].chunk",
    outExtension: { ".js": ".mjs" },
    target: "es2024",
    supported: { "import-source": true, using: true },
    loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx" },
    conditions: ["workerd", "worker", "browser"],
    define: {
      "navigator.userAgent": '"Cloudflare-Workers"',
      "process.env.NODE_ENV": production,
      "global.process.env.NODE_ENV": production,
      "globalThis.process.env.NODE_ENV": production,
    },
    external: ["cloudflare:*"],
    minify,
    keepNames: false,
    sourcemap: true,
    metafile: true,
    logLevel: "warning",
    plugins: [await dataModules(files), nodejsCompat(compat(path.resolve(root, config))), wasmModules(files)],
  });
  for (const f of result.outputFiles) files.set(path.relative(out, f.path), Buffer.from(f.contents));
  // `wrangler types` types `exports` of cloudflare:workers (test/helpers.ts) as the main module,
  // now this directory's index: its declarations are the source entry's.
  const source = path.relative(out, path.resolve(root, entry)).replace(/\.ts$/, "").split(path.sep).join("/");
  const from = JSON.stringify(source);
  files.set("index.d.ts", Buffer.from(`export * from ${from};\nexport { default } from ${from};\n`));
  sync(out, files);
  const meta = Buffer.from(JSON.stringify(result.metafile));
  const metaFile = `${out}.meta.json`;
  if (!existsSync(metaFile) || !readFileSync(metaFile).equals(meta)) writeFileSync(metaFile, meta);
  return result.metafile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args[i + 1];
  };
  await buildWorker({
    entry: opt("--entry"),
    outdir: opt("--outdir"),
    config: opt("--config"),
    // Minified as `wrangler deploy --minify` did, under `wrangler dev` too (see above; the chunks'
    // source maps are beside them). WORKER_BUILD_MINIFY=0 is the bench's --profile mode: wrangler
    // runs this command with fixed arguments.
    minify: !args.includes("--no-minify") && process.env.WORKER_BUILD_MINIFY !== "0",
  });
}
