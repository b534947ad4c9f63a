import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { cached, VERSION } from "../../src/skills/lib/cache";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "../../src/skills/lib/output-size";
import { runSkill, skillAnswer } from "../../src/skills/run";
import type { Skill } from "../../src/skills/types";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * A network skill whose computed value is over the answer cap. No shipped skill can build one from
 * the fixture upstreams (every list they answer is bounded), so this one computes it itself, as
 * `cached` sees any skill's value: the cache must not keep what runSkill refuses.
 */
function overCapSkill(id: string, bytes: number, echoed = "") {
  let computed = 0;
  const skill = {
    id,
    kind: "analytic",
    run: async (_body: unknown, ctx: Parameters<Skill["run"]>[1]) => {
      const { value, cache } = await cached(ctx, id, ["same input"], async () => {
        computed++;
        return { text: "x".repeat(bytes) };
      });
      // What the answer adds to the cached value (research echoes its query, osint_graph its seed).
      return echoed ? { ...value, query: echoed, cache } : { ...value, cache };
    },
  } as unknown as Skill;
  return { skill, computed: () => computed };
}

const entries = async (id: string) => (await env.KV.list({ prefix: `skill:${id}:${VERSION}:` })).keys.length;

describe("the network skills' cache and the answer cap", () => {
  it(
    "a value over the cap is never written to KV: both calls are 422 output_too_large, each computed",
    async () => {
      const id = `over_cap_${crypto.randomUUID().slice(0, 8)}`;
      const { skill, computed } = overCapSkill(id, MAX_OUTPUT_BYTES + 1);
      for (const call of [1, 2]) {
        const err = await runSkill(skill, {}, env, `req-${call}`).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(OutputTooLarge);
        expect(skillAnswer(err)?.status).toBe(422);
        // No write in the background either: without a waitUntil the write is awaited (or skipped).
        expect(await entries(id)).toBe(0);
      }
      expect(computed()).toBe(2);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a value just under the cap whose answer is over it (the query echoed) is not written either",
    async () => {
      const id = `echo_over_${crypto.randomUUID().slice(0, 8)}`;
      // {"text":"…"} is 11 bytes around the text: the cached value is 20 bytes under the cap.
      const { skill, computed } = overCapSkill(id, MAX_OUTPUT_BYTES - 20 - 11, "q".repeat(100));
      for (const call of [1, 2]) {
        const err = await runSkill(skill, {}, env, `req-${call}`).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(OutputTooLarge);
        expect(await entries(id)).toBe(0);
      }
      expect(computed()).toBe(2);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a run that throws after cached() leaves nothing in KV: the write waits for the answer",
    async () => {
      const id = `throws_after_${crypto.randomUUID().slice(0, 8)}`;
      const skill = {
        id,
        kind: "analytic",
        run: async (_body: unknown, ctx: Parameters<Skill["run"]>[1]) => {
          await cached(ctx, id, ["same input"], async () => ({ text: "computed" }));
          throw new Error("failed after the lookup");
        },
      } as unknown as Skill;
      await expect(runSkill(skill, {}, env, "req-1")).rejects.toThrow("failed after the lookup");
      expect(await entries(id)).toBe(0);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a value under the cap is still cached: the second call is a hit",
    async () => {
      const id = `under_cap_${crypto.randomUUID().slice(0, 8)}`;
      const { skill, computed } = overCapSkill(id, 1000);
      const first = (await runSkill(skill, {}, env, "req-1")) as { cache?: string };
      const second = (await runSkill(skill, {}, env, "req-2")) as { cache?: string };
      expect([first.cache, second.cache]).toEqual(["miss", "hit"]);
      expect(await entries(id)).toBe(1);
      expect(computed()).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );
});
