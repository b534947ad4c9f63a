import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs module of the bench, no types
import { benchInputs } from "../../scripts/bench/inputs.mjs";
import { skillBySlug } from "../../src/skills/registry";

// `npm run bench` times each skill's `run` on these inputs directly (scripts/bench/worker.ts): an
// input outside the skill's own bounds makes the bench fail with a 500 after minutes of timing.
describe("the bench's inputs", () => {
  const inputs = benchInputs() as [string, string, unknown][];
  it.each(inputs.map(([slug, label, body]) => [`${slug}, ${label}`, slug, body] as const))(
    "%s is a body its skill accepts",
    (_name, slug, body) => {
      const skill = skillBySlug(slug);
      expect(skill, slug).toBeDefined();
      const parsed = skill?.input.safeParse(body);
      expect(parsed?.success, JSON.stringify(parsed?.error?.issues?.slice(0, 2))).toBe(true);
    },
  );
});
