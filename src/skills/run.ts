import type { Bindings } from "../env";
import type { Skill } from "./types";

/** Runs a skill on an already validated body and shapes its response (`skill`, and `ok` for utilities). */
export async function runSkill(skill: Skill, body: unknown, env: Bindings, requestId: string) {
  const out = await skill.run(body as never, { env, requestId });
  return skill.kind === "utility" ? { skill: skill.id, ok: true, ...out } : { skill: skill.id, ...out };
}
