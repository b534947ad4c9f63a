import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { FIXTURE } from "../fixtures/upstream-requests";

// The unpaid 402's text offers a card-credit key only on the routes that take one (the skills):
// partner try routes and refinery recipes refuse card keys and checkout sells none for them, yet
// their 402 said "Pay with x402 (…) or a card-credit key (Authorization: Bearer mk_...)".
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

async function unpaidError(method: string, path: string, body?: unknown) {
  const res = await app.fetch(
    new Request(`https://skills.test${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    paidEnv,
  );
  expect(res.status).toBe(402);
  const { error, reason } = await res.json<{ error: string; reason: string }>();
  expect(reason).toBe("payment_required");
  expect(error).toMatch(/^Payment required: this call costs .* Pay with x402 \(v2: PAYMENT-SIGNATURE/);
  return error;
}

describe("the unpaid 402 offers a card-credit key only where one pays", () => {
  it("a skill: x402 or a card-credit key", async () => {
    expect(await unpaidError("POST", "/api/skills/sha256", { text: "a" })).toMatch(
      /or a card-credit key \(Authorization: Bearer mk_\.\.\.\)\.$/,
    );
  });

  it.each([
    ["GET", "/api/partners/pricefeed/try/price", undefined],
    ["POST", "/api/partners/pricefeed/try/price", {}],
    ["POST", "/api/skills/refinery-recipes", { recipe: "policy_digest" }],
    ["POST", "/api/skills/refinery-recipes", {}],
  ])("%s %s: x402 only, no card-credit key", async (method, path, body) => {
    const error = await unpaidError(method, path, body);
    expect(error).not.toMatch(/card|mk_/);
    expect(error).toMatch(/requirements in this body\)\.$/);
  });
});
