import { describe, expect, it } from "vitest";
import {
  createCheckout,
  deliver,
  EMULATOR,
  emulatorEvents,
  emulatorPost,
  keysFor,
  newEventId,
  outcomeOf,
  pay,
  remote,
} from "./checkout-helpers";

// A delayed payment method (a bank debit) through the emulator: the buyer's Pay completes the
// session unpaid (checkout.session.completed, payment_status "unpaid"); days later the debit clears,
// Stripe marks the session paid and sends checkout.session.async_payment_succeeded. The webhook
// grants nothing for the first and the pack, once, for the second.

const sessionEventOf = async (type: string, sessionId: string) =>
  (await emulatorEvents(type)).filter((e) => e.data.object.id === sessionId).at(-1);

describe("a delayed payment that succeeds", () => {
  it("grants nothing while the debit is pending, then the pack once when it clears", async () => {
    const id = await createCheckout("sha256", 170);
    await pay(id, "async_succeeded");
    expect(await remote(id)).toMatchObject({ status: "complete", payment_status: "unpaid" });
    const completed = await sessionEventOf("checkout.session.completed", id);
    expect(completed?.data.object.payment_status).toBe("unpaid");
    expect(await outcomeOf(await deliver(completed))).toBe("not_paid");
    expect((await keysFor(id)).results).toEqual([]);

    const paid = await emulatorPost(`/_emulator/sessions/${id}/async_payment_succeeded`, {});
    expect(paid).toMatchObject({ id, status: "complete", payment_status: "paid" });
    const succeeded = await sessionEventOf("checkout.session.async_payment_succeeded", id);
    expect(succeeded?.data.object.payment_status).toBe("paid");
    const res = await deliver(succeeded);
    expect(await res.json()).toMatchObject({ outcome: "granted", granted: true });
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);

    // Once: the same event redelivered, the completed event again, and a copy under a new id.
    expect(await outcomeOf(await deliver(succeeded))).toBe("duplicate_event");
    expect(await outcomeOf(await deliver(completed))).toBe("duplicate_event");
    expect(await outcomeOf(await deliver({ ...succeeded, id: newEventId() }))).toBe("already_granted");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
  });

  it("the emulator clears only a debit that is waiting, and only once", async () => {
    const paidByCard = await createCheckout("sha256", 170);
    const card = await fetch(`${EMULATOR}/pay/${paidByCard}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "email=t%40example.com&outcome=paid",
      redirect: "manual",
    });
    await card.arrayBuffer();
    await expect(
      emulatorPost(`/_emulator/sessions/${paidByCard}/async_payment_succeeded`, {}),
    ).rejects.toThrow(/no delayed payment waiting/);
    const id = await createCheckout("sha256", 170);
    await pay(id, "async_succeeded");
    await emulatorPost(`/_emulator/sessions/${id}/async_payment_succeeded`, {});
    await expect(emulatorPost(`/_emulator/sessions/${id}/async_payment_succeeded`, {})).rejects.toThrow(
      /no delayed payment waiting/,
    );
    // The cleared debit has a charge: it can be refunded like a card payment.
    const pi = (await remote(id)).payment_intent as string;
    expect(await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "1" })).toMatchObject({
      status: "succeeded",
    });
  });
});
