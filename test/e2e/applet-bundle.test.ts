import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("the pages' browser scripts", () => {
  it("static/assets/applet.js and buy.js are what src/browser builds to (committed output not stale)", () => {
    let out = "";
    try {
      out = execFileSync(process.execPath, ["scripts/build-applet.mjs", "--check"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 60_000,
      });
    } catch (e) {
      const err = e as { stderr?: string; stdout?: string };
      out = `${err.stdout ?? ""}${err.stderr ?? ""}`;
      expect.fail(`stale bundle: ${out}`);
    }
    expect(out).not.toContain("stale");
  }, 90_000);
});
