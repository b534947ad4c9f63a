import { describe, expect, it } from "vitest";
import { skills } from "../../src/skills/registry";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const analytic = skills.filter((s) => s.kind === "analytic");

describe("analytic skills in the catalog", () => {
  it(
    "are the four of spec 1",
    () => {
      expect(analytic.map((s) => s.id)).toEqual(["osint_graph", "research", "seo", "ai_detector"]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each(analytic.map((s) => [s.id, s] as const))(
    "%s: example_request validates, description < 500",
    (_, skill) => {
      expect(skill.input.safeParse(skill.example_request).success).toBe(true);
      expect(skill.description.length).toBeLessThan(500);
      expect(skill.example_response.skill).toBe(skill.id);
      expect("ok" in skill.example_response).toBe(false);
    },
  );

  it(
    "examples carry every response field of spec 2.4",
    () => {
      const fields: Record<string, string[]> = {
        osint_graph: [
          "seed_entity",
          "max_depth",
          "disclaimer",
          "graph",
          "degrees_sample",
          "sources",
          "logged_for_realization",
        ],
        research: ["query", "summary", "sources", "confidence"],
        seo: ["url", "keywords", "score", "recommendations"],
        ai_detector: [
          "url",
          "text_preview",
          "verdict",
          "ai_likelihood",
          "human_likelihood",
          "signals",
          "supported",
        ],
      };
      for (const skill of analytic) {
        for (const f of fields[skill.id] ?? [])
          expect(skill.example_response, `${skill.id}.${f}`).toHaveProperty(f);
      }
    },
    SKILL_TEST_TIMEOUT,
  );
});
