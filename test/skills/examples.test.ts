import { describe, expect, it } from "vitest";
import { outputJsonSchema, skills } from "../../src/skills/registry";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The catalog can never lie: each utility skill's example_response is what it really answers.
describe("catalog examples are real outputs", () => {
  for (const skill of skills.filter((s) => s.kind === "utility")) {
    it(
      skill.id,
      async () => {
        const res = await postJson(skill.endpoint, skill.example_request);
        expect(res.status).toBe(200);
        const body = await res.json<Record<string, unknown>>();
        // What the skill really answers conforms to the schema openapi.json publishes.
        expect(skill.response.safeParse(body).error).toBeUndefined();
        if (skill.id === "uuid_mint") {
          // Random by design: same shape, fresh ids.
          const { ids, ...rest } = body;
          const { ids: exampleIds, ...exampleRest } = skill.example_response;
          expect(rest).toEqual(exampleRest);
          expect((ids as string[]).length).toBe((exampleIds as string[]).length);
          for (const id of ids as string[])
            expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
          return;
        }
        expect(body).toEqual(skill.example_response);
      },
      SKILL_TEST_TIMEOUT,
    );
  }
});

// The published response schemas describe the catalog examples exactly: every field declared, none missing.
describe("each example_response conforms to its skill's output schema", {
  timeout: SKILL_TEST_TIMEOUT,
}, () => {
  for (const skill of skills) {
    it(
      skill.id,
      () => {
        const parsed = skill.response.safeParse(skill.example_response);
        expect(parsed.error).toBeUndefined();
        // Objects strip undeclared keys, so equality means the schema names every field of the example.
        expect(parsed.data).toEqual(skill.example_response);
        const schema = outputJsonSchema(skill) as { properties: Record<string, { const?: unknown }> };
        expect(schema.properties.skill?.const).toBe(skill.id);
        expect(schema.properties.ok?.const).toBe(skill.kind === "utility" ? true : undefined);
      },
      SKILL_TEST_TIMEOUT,
    );
  }
});
