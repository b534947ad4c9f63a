import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { deliver, failRefund, granted, keyState, makeRefund, outcomeOf, signed } from "./checkout-helpers";

// Refund events handled at the same time: each reads Stripe, then writes what it read. The one
// whose read is older may write last; it then reads Stripe again and follows what it finds, so
// the key ends in Stripe's state whichever write lands last (up or down).

/**
 * Delivers `event` to a Worker whose first D1 batch (the refund's write, after its Stripe reads)
 * waits until `open` is called: `reached` resolves once the handler has read Stripe and is held.
 */
async function deliverHeld(event: unknown) {
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let reach = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  let held = false;
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch" && !held) {
        return async (statements: D1PreparedStatement[]) => {
          held = true;
          reach();
          await gate;
          return target.batch(statements);
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const { payload, header } = await signed(event);
  const response = createApp().fetch(
    new Request("https://skills.test/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    }),
    { ...env, DB: db },
  );
  return { reached, open, response: Promise.resolve(response) };
}

describe("concurrent refund events end in Stripe's state, whichever writes last", () => {
  it("a stale read written after a newer refund's event: the newer total stays revoked", async () => {
    const { id, pi } = await granted();
    const e1 = await makeRefund(pi, "17");
    const p1 = await deliverHeld(e1.event);
    await p1.reached; // e1 has read Stripe: $0.17 refunded, 57 calls
    const e2 = await makeRefund(pi, "17");
    // $0.34 of $0.51: 170 × 34/51 = 113.3 → 114 revoked.
    expect(await outcomeOf(await deliver(e2.event))).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 56, calls_revoked: 114, revoke_debt: 0 });
    p1.open();
    // e1 wrote its stale 57, read Stripe again and moved the key back to 114.
    expect(await outcomeOf(await p1.response)).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 56, calls_revoked: 114, revoke_debt: 0 });
    // Its redelivery is a duplicate; the state-following write recorded no second event.
    expect(await outcomeOf(await deliver(e1.event))).toBe("duplicate_event");
    const seen = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE event_id IN (?1, ?2)")
      .bind(e1.event?.id, e2.event?.id)
      .first<{ n: number }>();
    expect(seen).toEqual({ n: 2 });
  });

  it("a stale read written after the refund failed: the calls stay with the buyer", async () => {
    const { id, pi } = await granted();
    const e1 = await makeRefund(pi, "17");
    const p1 = await deliverHeld(e1.event);
    await p1.reached; // e1 has read Stripe: $0.17 refunded, 57 calls
    // The refund fails before e1 writes; its charge.refund.updated reads $0 refunded.
    expect(await outcomeOf(await deliver(await failRefund(e1.id)))).toBe("unchanged");
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
    p1.open();
    await outcomeOf(await p1.response);
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
  });
});
