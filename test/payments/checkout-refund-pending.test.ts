import { describe, expect, it } from "vitest";
import {
  deliver,
  emulatorEvents,
  emulatorPost,
  granted,
  keyState,
  outcomeOf,
  stripe,
} from "./checkout-helpers";

// A refund Stripe holds `pending` (its balance cannot cover it yet) through the emulator: Stripe
// sends charge.refunded when the refund is made, then charge.refund.updated when it succeeds, fails
// or is canceled. A pending refund counts as refunded (the buyer will get the money); one that
// fails or is canceled gave nothing back, so the pack gets its calls back.

/** A pending refund of `amount` cents, its charge.refunded delivered: the refund's id. */
async function pendingRefund(pi: string, amount: string) {
  const made = await emulatorPost("/_emulator/refunds", {
    payment_intent: pi,
    amount,
    pending_reason: "insufficient_funds",
  });
  expect(made).toMatchObject({ status: "pending", pending_reason: "insufficient_funds" });
  const refunded = (await emulatorEvents("charge.refunded"))
    .filter((e) => e.data.object.payment_intent === pi)
    .at(-1);
  expect(refunded?.data.object.amount_refunded).toBe(Number(amount));
  expect(await outcomeOf(await deliver(refunded))).toBe("refund_applied");
  return made.id as string;
}

/** Moves the refund on and returns the charge.refund.updated Stripe sent for it. */
async function moveRefund(id: string, status: "succeeded" | "failed" | "canceled") {
  await emulatorPost(`/_emulator/refunds/${id}/update`, { status });
  return (await emulatorEvents("charge.refund.updated")).filter((e) => e.data.object.id === id).at(-1);
}

describe("a pending refund", () => {
  it("counts while pending, and its success changes nothing", async () => {
    const { id, pi } = await granted();
    const refund = await pendingRefund(pi, "17");
    // $0.17 of $0.51: 170 × 17/51 = 57 calls taken back while the refund is pending.
    expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
    const listed = await stripe.refunds.list({ payment_intent: pi });
    expect(listed.data.map((r) => r.status)).toEqual(["pending"]);
    const succeeded = await moveRefund(refund, "succeeded");
    expect(succeeded?.data.object).toMatchObject({ status: "succeeded" });
    expect(succeeded?.data.object).not.toHaveProperty("pending_reason");
    expect(await outcomeOf(await deliver(succeeded))).toBe("unchanged");
    expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
  });

  it("canceled or failed, gives the calls back, once", async () => {
    for (const end of ["canceled", "failed"] as const) {
      const { id, pi } = await granted();
      const refund = await pendingRefund(pi, "17");
      expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
      const updated = await moveRefund(refund, end);
      expect(updated?.data.object.status, end).toBe(end);
      expect(await outcomeOf(await deliver(updated)), end).toBe("refund_applied");
      expect(await keyState(id), end).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
      expect(await outcomeOf(await deliver(updated)), end).toBe("duplicate_event");
      // The money is back on the charge: the whole of it can be refunded again.
      expect(await emulatorPost("/v1/refunds", { payment_intent: pi }), end).toMatchObject({ amount: 51 });
    }
  });

  it("the emulator moves a refund only as Stripe does", async () => {
    const { pi } = await granted();
    const refund = await pendingRefund(pi, "5");
    await moveRefund(refund, "succeeded");
    // A card refund that succeeded can still fail, but not be canceled or succeed again.
    await expect(emulatorPost(`/_emulator/refunds/${refund}/update`, { status: "canceled" })).rejects.toThrow(
      /can move only to failed/,
    );
    await moveRefund(refund, "failed");
    await expect(
      emulatorPost(`/_emulator/refunds/${refund}/update`, { status: "succeeded" }),
    ).rejects.toThrow(/has status failed/);
  });
});
