import { Hono } from "hono";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { InputError, jsonBody, validationResponse } from "../http/validation";
import { serializeOutput } from "../skills/raw-json";
import { skills } from "../skills/registry";
import { NotImplemented, type Skill } from "../skills/types";

/** Runs a skill on an already validated body and shapes its response. */
export async function runSkill(skill: Skill, body: unknown, env: AppEnv["Bindings"], requestId: string) {
  const out = await skill.run(body as never, { env, requestId });
  return skill.kind === "utility" ? { skill: skill.id, ok: true, ...out } : { skill: skill.id, ...out };
}

export const skillRoutes = new Hono<AppEnv>();

for (const skill of skills) {
  skillRoutes.post(skill.endpoint, jsonBody(skill.input), async (c) => {
    try {
      const out = await runSkill(skill, c.get("body"), c.env, c.get("requestId"));
      return c.body(serializeOutput(out), 200, { "content-type": "application/json" });
    } catch (e) {
      if (e instanceof InputError) return validationResponse(c, e.items);
      if (e instanceof NotImplemented) return detail(c, 501, "not implemented");
      throw e;
    }
  });
}
