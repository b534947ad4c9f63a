import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { jsonSchemaPatched } from "../../scripts/build-worker.mjs";

// The build refuses a node_modules whose @cfworker/json-schema lacks patches/ (an install with
// --ignore-scripts), so a deploy without the linear uniqueItems fails before it bundles.
const root = path.resolve(import.meta.dirname, "../..");
const library = path.join(root, "node_modules/@cfworker/json-schema/dist");

describe("the build checks that patches/ is applied to @cfworker/json-schema", () => {
  it("passes on this install, fails on a copy whose validate.js is the library's own", () => {
    expect(() => jsonSchemaPatched()).not.toThrow();
    const modules = mkdtempSync(path.join(os.tmpdir(), "json-schema-patch-"));
    try {
      const dist = path.join(modules, "@cfworker/json-schema/dist");
      cpSync(library, dist, { recursive: true });
      expect(() => jsonSchemaPatched(modules)).not.toThrow();
      // Either build of the library without the patch's helper (its loop as published).
      for (const flavour of ["esm", "commonjs"]) {
        const file = path.join(dist, flavour, "validate.js");
        const patched = readFileSync(file, "utf8");
        writeFileSync(file, patched.replace(/^firstDuplicatePair\.patch = .*$/m, ""));
        expect(() => jsonSchemaPatched(modules)).toThrow(/lacks patches\/@cfworker\+json-schema/);
        writeFileSync(file, patched);
      }
    } finally {
      rmSync(modules, { recursive: true, force: true });
    }
  });
});
