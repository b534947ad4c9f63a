import { describe, expect, it } from "vitest";
import { InputError } from "../../src/http/validation";
import { UpstreamError } from "../../src/net/fetcher";
import { skillAnswer } from "../../src/skills/run";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";
import { firstCallResult, grant, seedSession } from "./checkout-helpers";

/**
 * A skill that fails answers one way (skills/run.ts skillAnswer), whether its route ran it or a card
 * checkout's first call did: the same status and the same detail.
 */
describe("a failing skill answers alike over its route and as a checkout's first call", () => {
  it.each([
    ["a 422 from the skill's code (hex it cannot read)", "sha256", { text: "zz", encoding: "hex" }, 422],
    [
      "an upstream failure (the page the buyer named)",
      "ai_detector",
      { url: `${FIXTURE}/pages/upstream-failure` },
      502,
    ],
  ])("%s", async (_what, skill, payload, status) => {
    const route = await postJson(`/api/skills/${skill.replaceAll("_", "-")}`, payload);
    expect(route.status).toBe(status);
    // Paid and granted through the webhook, which runs the first call past its answer.
    const id = await seedSession(skill, undefined, payload);
    await grant(id);
    expect(await firstCallResult(id)).toEqual({ status, body: await route.json() });
  });

  it("skillAnswer knows a skill's two failures and leaves anything else to the caller's 500", () => {
    const items = [{ loc: ["body", "text"], msg: "bad", type: "value_error" }];
    expect(skillAnswer(new InputError(items))).toEqual({
      status: 422,
      body: { detail: items },
      targetFault: false,
    });
    expect(skillAnswer(new UpstreamError(504, "slow page", true))).toEqual({
      status: 504,
      body: { detail: "slow page", charged: false },
      targetFault: true,
    });
    expect(skillAnswer(new Error("not implemented"))).toBeUndefined();
  });
});
