import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const check = path.join(root, "scripts/bundle-imports-check.mjs");

/** Runs the check as `npm run build` does; its exit status and what it printed. */
const run = (dir: string) => {
  try {
    return {
      status: 0,
      out: execFileSync(process.execPath, [check, dir], { encoding: "utf8", stdio: "pipe" }),
    };
  } catch (e) {
    const err = e as { status: number; stdout: string; stderr: string };
    return { status: err.status, out: err.stdout + err.stderr };
  }
};

/** A dry-run's output directory in small: a minified entry, a chunk it imports lazily, the chunk's Data module and wasm. */
const bundle = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "bundle-imports-"));
  writeFileSync(
    path.join(dir, "index.js"),
    'import{x as a}from"./chunk-A1.chunk.mjs";import"cloudflare:workers";export default{fetch(){return import("./lang-B2.chunk.mjs").then(m=>new Response(m.l+a))}};',
  );
  writeFileSync(path.join(dir, "chunk-A1.chunk.mjs"), "export const x=1;");
  writeFileSync(
    path.join(dir, "lang-B2.chunk.mjs"),
    'import b from"./stopword-lists-0a.bin";import w from"./mdream_bg-1c.wasm";export const l=b.byteLength+String(w);',
  );
  writeFileSync(path.join(dir, "stopword-lists-0a.bin"), "{}");
  writeFileSync(path.join(dir, "mdream_bg-1c.wasm"), "");
  writeFileSync(path.join(dir, "README.md"), "wrangler's note");
  return dir;
};

describe("npm run build refuses a bundle whose modules import a file wrangler did not attach", () => {
  it("a complete bundle passes", () => {
    const dir = bundle();
    expect(run(dir)).toMatchObject({ status: 0 });
    rmSync(dir, { recursive: true });
  });

  it("a missing Data module, wasm or chunk (static or dynamic import) is refused, naming it and its importer", () => {
    for (const [gone, importer] of [
      ["stopword-lists-0a.bin", "lang-B2.chunk.mjs"],
      ["mdream_bg-1c.wasm", "lang-B2.chunk.mjs"],
      ["lang-B2.chunk.mjs", "index.js"],
      ["chunk-A1.chunk.mjs", "index.js"],
    ]) {
      const dir = bundle();
      rmSync(path.join(dir, gone as string));
      const { status, out } = run(dir);
      expect(status, gone).toBe(1);
      expect(out).toContain(`${importer} -> ./${gone}`);
      rmSync(dir, { recursive: true });
    }
  });

  it("npm run build runs it on the dry-run's output, and npm run deploy and npm run upload run that build first", () => {
    const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts;
    const steps = (script: string) => script.split("&&").map((s) => s.trim());
    const build = steps(scripts.build);
    expect(build.indexOf("node scripts/bundle-imports-check.mjs dist")).toBe(
      build.indexOf("wrangler deploy --dry-run --minify --outdir dist") + 1,
    );
    for (const name of ["deploy", "upload"]) {
      const s = steps(scripts[name]);
      expect(s.indexOf("npm run build"), name).toBeGreaterThanOrEqual(0);
      expect(s.indexOf("npm run build"), name).toBeLessThan(
        s.findIndex((x) => /^wrangler (deploy|versions upload)/.test(x)),
      );
    }
  });
});
