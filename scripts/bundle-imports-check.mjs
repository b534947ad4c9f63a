#!/usr/bin/env node
// `npm run build` runs this on what `wrangler deploy --dry-run --minify --outdir dist` wrote, and
// `npm run deploy` and `npm run upload` run that build before uploading: every relative
// `import`/`import()` of every emitted module must name a file in that directory. wrangler attaches
// a module only if one of wrangler.toml's rules matches it, and says nothing when none does (a Data
// rule for `*.dat` with `fallthrough = false` dropped both `*.bin` data modules with exit 0);
// workerd then starts, and the first call needing the module answers 500.
//
// esbuild (the build's own bundler) parses each module and lists its imports; none is followed.
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

/** Relative imports of the JavaScript modules in `dir` that name no file there, as "module -> import". */
export async function missingImports(dir) {
  const modules = readdirSync(dir).filter((f) => /\.m?js$/.test(f) && statSync(path.join(dir, f)).isFile());
  if (!modules.length) return [`${dir}: no JavaScript module`];
  const missing = [];
  await esbuild.build({
    absWorkingDir: path.resolve(dir),
    entryPoints: modules.map((f) => path.resolve(dir, f)),
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    outdir: path.join(path.resolve(dir), ".imports-check"),
    logLevel: "silent",
    plugins: [
      {
        name: "list-imports",
        setup(build) {
          build.onResolve({ filter: /.*/ }, (args) => {
            if (args.kind === "entry-point") return undefined;
            if (/^\.\.?\//.test(args.path)) {
              const file = path.resolve(args.resolveDir, args.path);
              if (!existsSync(file) || !statSync(file).isFile())
                missing.push(`${path.relative(dir, args.importer)} -> ${args.path}`);
            }
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  return missing.sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? "dist";
  const missing = await missingImports(dir);
  if (missing.length) {
    console.error(
      `bundle-imports-check: ${dir} lacks what its modules import (no wrangler.toml rule attached it?); not deploying:\n  ${missing.join("\n  ")}`,
    );
    process.exit(1);
  }
  console.log(`bundle-imports-check: every relative import of ${dir}'s modules is there`);
}
