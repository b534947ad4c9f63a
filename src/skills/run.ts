import type { Bindings } from "../env";
import { type ErrorItem, InputError } from "../http/validation";
import { UpstreamError } from "../net/fetcher";
import { type AfterAnswer, afterAnswer, type HeldWrite } from "./lib/cache";
import { assertOutputSize } from "./lib/output-size";
import type { Skill } from "./types";

/**
 * Runs a skill on an already validated body and shapes its response (`skill`, and `ok` for
 * utilities). Every caller (the HTTP route, the card checkout's first payload, the MCP tools that
 * go through the route) gets the response-size cap: an answer over MAX_OUTPUT_BYTES throws
 * OutputTooLarge (a 422) instead of being returned.
 *
 * `waitUntil` takes the work the answer need not wait for (a network skill's cache write): the
 * route's execution context's, a card checkout's run's; without one, that work is awaited. A cache
 * write is held until the shaped answer passed the size check, and dropped if it did not (or if
 * the skill threw after it).
 */
export async function runSkill(
  skill: Skill,
  body: unknown,
  env: Bindings,
  requestId: string,
  waitUntil?: AfterAnswer,
) {
  if (skill.kind === "utility") {
    // Utilities cache nothing: no held writes to gather (this is every cheap call's path).
    const out = await skill.run(body as never, { env, requestId, waitUntil });
    const shaped = { skill: skill.id, ok: true, ...out };
    assertOutputSize(shaped);
    return shaped;
  }
  // A cache write waits for the size check: an answer over the cap, or a run that threw after
  // cached(), leaves nothing in KV.
  const held: HeldWrite[] = [];
  const holdWrite = (write: HeldWrite) => {
    held.push(write);
  };
  const out = await skill.run(body as never, { env, requestId, waitUntil, holdWrite });
  const shaped = { skill: skill.id, ...out };
  assertOutputSize(shaped);
  for (const write of held) await afterAnswer(write, waitUntil);
  return shaped;
}

/** The answer to a skill's failure: its status and JSON body, and whether the caller's target failed. */
export interface SkillFailure {
  status: 422 | 502 | 504;
  body: { detail: ErrorItem[] | string; charged?: false };
  /** The page the caller named failed (UpstreamError.target), not the skill: the figures leave it out. */
  targetFault: boolean;
}

/**
 * What a skill's failure answers, wherever the skill ran (its route, a card checkout's first call),
 * so a call gets the same status and detail both ways: input its code refused is a 422 of its items,
 * an upstream that failed its 502 or 504, not charged. Undefined for anything else: a bug, the
 * caller's 500.
 */
export function skillAnswer(e: unknown): SkillFailure | undefined {
  if (e instanceof InputError) return { status: 422, body: { detail: e.items }, targetFault: false };
  if (e instanceof UpstreamError) {
    return { status: e.status, body: { detail: e.message, charged: false }, targetFault: e.target };
  }
  return undefined;
}
