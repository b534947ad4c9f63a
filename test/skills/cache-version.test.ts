import { describe, expect, it } from "vitest";
import * as z from "zod";
import { sha256Hex } from "../../src/digest";
import { VERSION } from "../../src/skills/lib/cache";
import { skills } from "../../src/skills/registry";

/**
 * The output schemas of the cached skills (those answering a `cache` field) under each cache
 * VERSION, descriptions left out. An entry a skill cached is read back for VERSION's lifetime: a
 * shape changed without a bump would serve entries of the old shape as the new one. When this
 * fails, bump VERSION in src/skills/lib/cache.ts (saying why) and add the new VERSION's line
 * here; an existing line is never edited.
 */
const SHAPES: Record<string, string> = {
  v9: "3033e8b979e3d56cdabde673876aa748cbb704daaf480d6a22d7cba8ecc4a5ae",
  v10: "3033e8b979e3d56cdabde673876aa748cbb704daaf480d6a22d7cba8ecc4a5ae",
};

/**
 * A JSON Schema without its annotations: a schema's `description` (a string) goes, a property named
 * `description` (osint_graph's `graph.nodes[].description`, a schema under `properties`) stays.
 */
const withoutDescriptions = (schema: unknown, propertyMap = false): unknown => {
  if (Array.isArray(schema)) return schema.map((s) => withoutDescriptions(s));
  if (typeof schema !== "object" || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([k, v]) => propertyMap || k !== "description" || typeof v !== "string")
      .map(([k, v]) => [k, withoutDescriptions(v, !propertyMap && k === "properties")]),
  );
};

const nextVersion = `v${Number(VERSION.slice(1)) + 1}`;

describe("the cache's VERSION", () => {
  it("changes with the output shape of every cached skill", async () => {
    const cachedSkills = skills.filter((s) => "cache" in s.output.shape);
    expect(cachedSkills.map((s) => s.id).sort()).toEqual(["ai_detector", "osint_graph", "research", "seo"]);
    const shapes = cachedSkills.map((s) => [s.id, withoutDescriptions(z.toJSONSchema(s.output))]);
    const digest = await sha256Hex(JSON.stringify(shapes));
    expect(
      digest,
      `a cached skill's output changed: bump VERSION in src/skills/lib/cache.ts to ${nextVersion} (saying why), then add  ${nextVersion}: "${digest}"  to SHAPES; never edit an existing line`,
    ).toBe(SHAPES[VERSION]);
  });

  it("keeps a line for every VERSION up to the current one", () => {
    // VERSION also changes when only values change (v6-v10 did): two lines may share a digest. A
    // bump whose line is missing, or the first line renamed to the new VERSION, leaves the list
    // short of FIRST..VERSION. A digest edited in place on the current line no test can tell from a
    // new shape's first pin: that one is review's.
    const FIRST = 9;
    const numbers = Object.keys(SHAPES).map((v) => Number(v.slice(1)));
    const current = Number(VERSION.slice(1));
    expect(numbers).toEqual(Array.from({ length: current - FIRST + 1 }, (_, k) => FIRST + k));
  });
});
