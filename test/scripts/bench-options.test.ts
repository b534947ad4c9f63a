import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// Exits before anything starts, or the test runs into its timeout while a chain, a facilitator and
// workerd come up (and the run would rewrite bench/results.md).
const bench = (...args: string[]) =>
  spawnSync(process.execPath, ["scripts/bench.mjs", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
  });

describe("npm run bench's options", () => {
  it("--help prints the options and starts nothing", () => {
    const r = bench("--help");
    expect(r.status).toBe(0);
    for (const option of ["--throughput", "--only-mcp", "--profile", "--rounds"])
      expect(r.stdout).toContain(option);
  });

  it.each([["--only", "html-clean"], ["--throughput", "--round", "3"], ["--profile"]])(
    "%s … is refused with the usage, before any run",
    (...args) => {
      const r = bench(...args);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^bench: (unknown option|--profile needs a value)/);
      expect(r.stderr).toContain("usage: npm run bench");
    },
  );
});
