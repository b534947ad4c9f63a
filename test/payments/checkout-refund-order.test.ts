import { describe, expect, it } from "vitest";
import {
  createCheckout,
  deliver,
  deliverWithStripeDown,
  failRefund,
  grant,
  keyState,
  makeRefund,
  outcomeOf,
  pay,
  seedSession,
} from "./checkout-helpers";

/** Every refund event ends in Stripe's current state, whatever the order and however late. */

describe("charge.refunded follows Stripe's current refunds", () => {
  it("delivered late, after its refund failed, takes nothing; a later refund counts from Stripe's total", async () => {
    const id = await seedSession("sha256", 170);
    const pi = await grant(id);
    // The $0.17 refund's charge.refunded is refused (our 502) and Stripe retries it hours later;
    // meanwhile the refund fails, and its charge.refund.updated arrives first.
    const made = await makeRefund(pi, "17");
    const late = [
      await outcomeOf(await deliver(await failRefund(made.id))),
      await outcomeOf(await deliver(made.event)),
    ];
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
    expect(late).toEqual(["unchanged", "unchanged"]);
    // A new $0.05 refund: 170 × 5/51 = 16.67, rounded up to 17.
    const next = await makeRefund(pi, "5");
    const applied = await outcomeOf(await deliver(next.event));
    expect(await keyState(id)).toEqual({ calls_left: 153, calls_revoked: 17, revoke_debt: 0 });
    expect(applied).toBe("refund_applied");
  });

  it("two refunds' events in reverse order end in Stripe's total, and a failure then lowers it", async () => {
    const id = await seedSession("sha256", 170);
    const pi = await grant(id);
    const a = await makeRefund(pi, "17");
    const b = await makeRefund(pi, "5");
    // The later event first: Stripe holds $0.22 refunded, 170 × 22/51 = 73.3 → 74.
    const later = await outcomeOf(await deliver(b.event));
    expect(await keyState(id)).toEqual({ calls_left: 96, calls_revoked: 74, revoke_debt: 0 });
    const older = await outcomeOf(await deliver(a.event));
    expect(await keyState(id)).toEqual({ calls_left: 96, calls_revoked: 74, revoke_debt: 0 });
    // The $0.17 one fails: $0.05 stays refunded, 17 calls. Its charge.refunded redelivered under
    // a new id (as if never seen) reads Stripe's state too.
    await failRefund(a.id);
    const retried = await outcomeOf(await deliver({ ...a.event, id: `${a.event?.id}_retry` }));
    expect(await keyState(id)).toEqual({ calls_left: 153, calls_revoked: 17, revoke_debt: 0 });
    expect([later, older, retried]).toEqual(["refund_applied", "unchanged", "refund_applied"]);
  });

  it("Stripe unreachable: 502 and nothing recorded; the redelivery applies the refund", async () => {
    const id = await seedSession("sha256", 170);
    const pi = await grant(id);
    const made = await makeRefund(pi, "17");
    expect((await deliverWithStripeDown(made.event)).status).toBe(502);
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
    expect(await outcomeOf(await deliver(made.event))).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
  });
});

describe("the refunded share is of the charge's own amount, in its currency", () => {
  /** A $0.51 pack the buyer paid €0.47 for (Adaptive Pricing on the emulator's hosted page). */
  async function paidInEuros() {
    const id = await createCheckout("sha256", 170);
    await pay(id, "paid", { presentment_currency: "eur", presentment_amount: "47" });
    return { id, pi: await grant(id) };
  }

  it("a refund in euros takes its share of the euro charge, whichever event delivers it", async () => {
    const { id, pi } = await paidInEuros();
    const part = await makeRefund(pi, "16");
    const rest = await makeRefund(pi);
    expect(rest.event?.data.object).toMatchObject({ amount: 47, amount_refunded: 47, currency: "eur" });
    // The whole charge refunded takes the whole pack (against the $0.51 it would leave 13 calls).
    const full = await outcomeOf(await deliver(rest.event));
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 0 });
    // The €0.31 refund fails: €0.16 of €0.47 stays refunded, 170 × 16/47 = 57.9 → 58 (not 54).
    const failed = await outcomeOf(await deliver(await failRefund(rest.id)));
    expect(await keyState(id)).toEqual({ calls_left: 112, calls_revoked: 58, revoke_debt: 0 });
    const first = await outcomeOf(await deliver(part.event));
    expect(await keyState(id)).toEqual({ calls_left: 112, calls_revoked: 58, revoke_debt: 0 });
    expect([full, failed, first]).toEqual(["refund_applied", "refund_applied", "unchanged"]);
  });
});
