import { env } from "cloudflare:test";
import type Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { createCheckout } from "../../src/payments/checkout-create";
import { stripeClient } from "../../src/payments/stripe";
import { skillById } from "../../src/skills/registry";
import type { Skill } from "../../src/skills/types";
import { emulatorPost } from "./checkout-helpers";

/**
 * Making a card checkout is the domain's (payments/checkout-create.ts): called without a route it
 * prices the pack, scopes a client's key by network and says which Stripe failure a retry replays.
 */
describe("createCheckout, outside any route", () => {
  const sha256 = skillById("sha256") as Skill;
  const order = (
    request: { skill_id: string; quantity?: number },
    clientKey?: string,
    network = "192.0.2.1",
  ) => ({
    request,
    skill: sha256,
    clientKey,
    network,
    requestId: crypto.randomUUID(),
    baseUrl: "https://skills.test",
  });
  const make = async (o: ReturnType<typeof order>) =>
    createCheckout(env, (await stripeClient(env)) as Stripe, o, async (work) => {
      await work;
    });

  it("prices and records the pack; a client key replays on its network only, and refuses another body", async () => {
    const key = crypto.randomUUID();
    const made = await make(order({ skill_id: "sha256", quantity: 171 }, key));
    if (!("created" in made)) throw new Error(JSON.stringify(made));
    expect(made.calls).toBe(180);
    expect(made.amountCents).toBe(54);
    const row = await env.DB.prepare("SELECT calls, amount_cents FROM checkout_sessions WHERE id = ?1")
      .bind(made.created.id)
      .first();
    expect(row).toEqual({ calls: 180, amount_cents: 54 });
    const again = await make(order({ skill_id: "sha256", quantity: 171 }, key));
    expect("created" in again && again.created.id).toBe(made.created.id);
    const elsewhere = await make(order({ skill_id: "sha256", quantity: 171 }, key, "198.51.100.7"));
    expect("created" in elsewhere && elsewhere.created.id).not.toBe(made.created.id);
    expect(await make(order({ skill_id: "sha256", quantity: 200 }, key))).toEqual({ refused: "key_reused" });
  });

  it("a Stripe failure under a client key is one a retry replays; without one it is not", async () => {
    const calls = 10 * (2_000 + Math.floor(Math.random() * 7_000));
    await emulatorPost("/_emulator/fail-creates", { match: `metadata[calls]=${calls}`, times: "2" });
    expect(await make(order({ skill_id: "sha256", quantity: calls }, crypto.randomUUID()))).toEqual({
      refused: "stripe_failed",
      replayed: true,
    });
    expect(await make(order({ skill_id: "sha256", quantity: calls }))).toEqual({
      refused: "stripe_failed",
      replayed: false,
    });
  });
});
