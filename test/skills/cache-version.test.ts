import { describe, expect, it } from "vitest";
import * as z from "zod";
import { sha256Hex } from "../../src/digest";
import { VERSION } from "../../src/skills/lib/cache";
import { skills } from "../../src/skills/registry";

/**
 * The output schemas of the cached skills (those answering a `cache` field) under each cache
 * VERSION, descriptions left out. An entry a skill cached is read back for VERSION's lifetime: a
 * shape changed without a bump would serve entries of the old shape as the new one. When this
 * fails, bump VERSION in src/skills/lib/cache.ts (saying why) and add its line here.
 */
const SHAPES: Record<string, string> = {
  v9: "f07490d4b75737d81ebfc0430fa7066d4bf4c722a20b77fd23a2aa70c3080f38",
};

const withoutDescriptions = (schema: unknown): unknown =>
  Array.isArray(schema)
    ? schema.map(withoutDescriptions)
    : typeof schema === "object" && schema !== null
      ? Object.fromEntries(
          Object.entries(schema)
            .filter(([k]) => k !== "description")
            .map(([k, v]) => [k, withoutDescriptions(v)]),
        )
      : schema;

describe("the cache's VERSION", () => {
  it("changes with the output shape of every cached skill", async () => {
    const cachedSkills = skills.filter((s) => "cache" in s.output.shape);
    expect(cachedSkills.map((s) => s.id).sort()).toEqual(["ai_detector", "osint_graph", "research", "seo"]);
    const shapes = cachedSkills.map((s) => [s.id, withoutDescriptions(z.toJSONSchema(s.output))]);
    const digest = await sha256Hex(JSON.stringify(shapes));
    expect(digest, `a cached skill's output changed: bump VERSION and add  ${VERSION}: "${digest}"`).toBe(
      SHAPES[VERSION],
    );
  });
});
