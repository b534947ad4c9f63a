import { env } from "cloudflare:test";
import type Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { stripeClient } from "../../src/payments/stripe";
import { handleStripeEvent } from "../../src/payments/stripe-events";
import { eventOf, firstCallResult, seedSession, sessionEvent } from "./checkout-helpers";

/**
 * The Stripe event dispatcher is the domain's (payments/stripe-events.ts), not the webhook route's:
 * called with a verified event it answers what the route writes, and hands the first call it starts
 * to the caller, never awaiting it.
 */
describe("handleStripeEvent, outside any route", () => {
  const client = async () => (await stripeClient(env)) as Stripe;

  it("grants a paid session and hands its first call to runAfter, once", async () => {
    const id = await seedSession("sha256", 170, { text: "abc" });
    const runs: Promise<void>[] = [];
    const event = (await sessionEvent("checkout.session.completed", id)) as unknown as Stripe.Event;
    const answer = await handleStripeEvent(env, await client(), event, (run) => runs.push(run));
    expect(answer).toEqual({ status: 200, body: { received: true, outcome: "granted", granted: true } });
    expect(runs).toHaveLength(1);
    await runs[0];
    expect((await firstCallResult(id, 1_000)).status).toBe(200);
    // A redelivery acts once and starts nothing.
    const again = await handleStripeEvent(env, await client(), event, (run) => runs.push(run));
    expect(again).toEqual({ status: 200, body: { received: true, outcome: "duplicate_event" } });
    expect(runs).toHaveLength(1);
  });

  it("answers a malformed event 400 and an unknown type as ignored, starting nothing", async () => {
    const runs: Promise<void>[] = [];
    const runAfter = (run: Promise<void>) => runs.push(run);
    const malformed = eventOf("charge.dispute.closed", { id: 7 }) as unknown as Stripe.Event;
    expect(await handleStripeEvent(env, await client(), malformed, runAfter)).toEqual({
      status: 400,
      body: { detail: "Malformed Stripe event: data.object.id must be a string" },
    });
    const other = eventOf("balance.available", { object: "balance" }) as unknown as Stripe.Event;
    expect(await handleStripeEvent(env, await client(), other, runAfter)).toEqual({
      status: 200,
      body: { received: true, ignored: "balance.available" },
    });
    expect(runs).toHaveLength(0);
  });
});
