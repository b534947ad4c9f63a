import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deliver, eventOf, newEventId } from "./checkout-helpers";

/**
 * A correctly signed event of a shape Stripe never sends is refused with a 400 and nothing is
 * recorded (its fields would go into D1 and into Stripe reads): never a 500, never a 502 that has
 * Stripe redeliver it for days as if Stripe were down.
 */
describe("a signed webhook event of a shape Stripe never sends", () => {
  const recorded = (id: string) =>
    env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE event_id = ?1")
      .bind(id)
      .first<{ n: number }>();

  it.each([
    ["an empty object", {}],
    ["an array", []],
    ["null", null],
    ["an event without its object's id", eventOf("checkout.session.async_payment_failed", {})],
    ["an event whose id is not a string", { ...eventOf("charge.dispute.created", { id: "dp_1" }), id: {} }],
    ["an event without data", { ...eventOf("checkout.session.completed", { id: "cs_x" }), data: null }],
    ["a dispute whose id is a number", eventOf("charge.dispute.closed", { id: 7, status: "won" })],
  ])("%s: 400, nothing recorded", async (_what, event) => {
    const res = await deliver(event);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: expect.stringMatching(/^Malformed Stripe event: /) });
    const id = (event as { id?: unknown } | null)?.id;
    if (typeof id === "string") expect((await recorded(id))?.n).toBe(0);
  });

  it("an event of a type we do not act on still needs no object id (Stripe's balance.available has none)", async () => {
    const id = newEventId();
    const res = await deliver(eventOf("balance.available", { object: "balance", available: [] }, id));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true, ignored: "balance.available" });
    expect((await recorded(id))?.n).toBe(1);
  });
});
