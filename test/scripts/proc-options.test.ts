import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with the scripts
import { takeOption, takeOptions } from "../../scripts/lib/proc.mjs";

describe("bench scripts' option parsing", () => {
  it("a repeated option is taken whole, in order, and the positional arguments stay", () => {
    const argv = ["--route", "GET /__bench/noop", "a", "--slices", "4", "--route", "/api/skills/sha256", "b"];
    expect(takeOptions(argv, "--route")).toEqual(["GET /__bench/noop", "/api/skills/sha256"]);
    expect(takeOption(argv, "--slices", "10")).toBe("4");
    expect(argv).toEqual(["a", "b"]);
    expect(takeOptions(argv, "--route")).toEqual([]);
  });
});
