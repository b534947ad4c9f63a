import type { Bindings } from "../env";
import { assertOutputSize } from "./lib/output-size";
import type { Skill } from "./types";

/**
 * Runs a skill on an already validated body and shapes its response (`skill`, and `ok` for
 * utilities). Every caller (the HTTP route, the card checkout's first payload, the MCP tools that
 * go through the route) gets the response-size cap: an answer over MAX_OUTPUT_BYTES throws
 * OutputTooLarge (a 422) instead of being returned.
 */
export async function runSkill(skill: Skill, body: unknown, env: Bindings, requestId: string) {
  const out = await skill.run(body as never, { env, requestId });
  const shaped =
    skill.kind === "utility" ? { skill: skill.id, ok: true, ...out } : { skill: skill.id, ...out };
  assertOutputSize(shaped);
  return shaped;
}
