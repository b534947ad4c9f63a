#!/usr/bin/env node
// Builds the pages' browser scripts (src/browser/*.ts → static/assets/*.js) with esbuild: one
// self-contained file each, served from our own origin under the pages' CSP (script-src 'self').
// The output is committed, so `wrangler deploy` and `npm start` serve it with no build step;
// `node scripts/build-applet.mjs --check` (run by test/e2e/applet-bundle.test.ts) fails when the
// committed files are not what the sources build to. After editing src/browser, run
// `npm run build:applet` and commit both.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRIES = { applet: "src/browser/applet.ts", buy: "src/browser/buy.ts" };
const outdir = path.join(root, "static", "assets");

export async function buildApplet({ write }) {
  return build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(
      Object.entries(ENTRIES).map(([name, src]) => [name, path.join(root, src)]),
    ),
    outdir,
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["es2022"],
    // Bundled libraries keep their license notices (MIT and others ask for it).
    legalComments: "eof",
    charset: "utf8",
    banner: { js: "// Built from src/browser by scripts/build-applet.mjs; do not edit." },
    write,
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes("--check");
  const result = await buildApplet({ write: !check });
  let stale = 0;
  for (const file of result.outputFiles ?? []) {
    let committed = "";
    try {
      committed = readFileSync(file.path, "utf8");
    } catch {}
    if (committed !== file.text) {
      stale++;
      console.error(`stale: ${path.relative(root, file.path)} (run npm run build:applet)`);
    }
  }
  if (!check) for (const name of Object.keys(ENTRIES)) console.log(`built static/assets/${name}.js`);
  process.exit(stale ? 1 : 0);
}
