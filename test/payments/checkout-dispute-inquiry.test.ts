import { describe, expect, it } from "vitest";
import {
  credits,
  deliver,
  emulatorEvents,
  emulatorPost,
  grant,
  keyIn,
  outcomeOf,
  revealPost,
  revealTokenFromPage,
  seedSession,
  spendCall,
} from "./checkout-helpers";

// A dispute inquiry (a card network's pre-dispute, Stripe's `pm_card_createDisputeInquiry`) through
// the emulator: it opens `warning_needs_response`, may move to `warning_under_review`
// (charge.dispute.updated) and closes `warning_closed` (charge.dispute.closed) without ever becoming
// a chargeback. The webhook freezes the key while it is open and restores it once it closes.

/** A granted, revealed pack of 170 sha256 calls: its key and PaymentIntent. */
async function revealedKey() {
  const id = await seedSession("sha256", 170);
  const pi = await grant(id);
  const key = keyIn(await (await revealPost(id, (await revealTokenFromPage(id)) as string)).text()) as string;
  return { key, pi };
}

/** The event of `type` the emulator sent for this dispute, last first. */
const disputeEvent = async (type: string, disputeId: string) =>
  (await emulatorEvents(type)).filter((e) => e.data.object.id === disputeId).at(-1);

async function openInquiry(pi: string) {
  const dispute = await emulatorPost("/_emulator/disputes", {
    payment_intent: pi,
    status: "warning_needs_response",
  });
  expect(dispute.status).toBe("warning_needs_response");
  return {
    id: dispute.id as string,
    created: await disputeEvent("charge.dispute.created", dispute.id as string),
  };
}

describe("a dispute inquiry through the emulator", () => {
  it("freezes the key while open (reviewed too) and warning_closed restores it", async () => {
    const { key, pi } = await revealedKey();
    expect((await spendCall(key)).status).toBe(200);
    const inquiry = await openInquiry(pi);
    expect(inquiry.created?.data.object.status).toBe("warning_needs_response");
    expect(await outcomeOf(await deliver(inquiry.created))).toBe("frozen");
    const refused = await spendCall(key);
    expect(refused.status).toBe(403);
    expect((await refused.json<{ detail: string }>()).detail).toMatch(/frozen.*disputed/);

    // Evidence submitted: Stripe sends charge.dispute.updated, which changes nothing the key holds.
    await emulatorPost(`/_emulator/disputes/${inquiry.id}/update`, { status: "warning_under_review" });
    const updated = await disputeEvent("charge.dispute.updated", inquiry.id);
    expect(updated?.data.object.status).toBe("warning_under_review");
    expect((await deliver(updated)).status).toBe(200);
    expect(await credits(key)).toMatchObject({ calls_left: 169, status: "frozen" });

    await emulatorPost(`/_emulator/disputes/${inquiry.id}/close`, { status: "warning_closed" });
    const closed = await disputeEvent("charge.dispute.closed", inquiry.id);
    expect(closed?.data.object.status).toBe("warning_closed");
    expect(await outcomeOf(await deliver(closed))).toBe("restored");
    expect(await outcomeOf(await deliver(closed))).toBe("duplicate_event");
    const again = await spendCall(key);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-credits-remaining")).toBe("168");
  });

  it("an inquiry closed before its created event arrives never freezes the key", async () => {
    const { key, pi } = await revealedKey();
    const inquiry = await openInquiry(pi);
    await emulatorPost(`/_emulator/disputes/${inquiry.id}/close`, { status: "warning_closed" });
    // Stripe does not promise order: the close first, then the opening, which Stripe's current
    // state of the dispute (warning_closed) shows to be stale.
    expect(await outcomeOf(await deliver(await disputeEvent("charge.dispute.closed", inquiry.id)))).toBe(
      "unchanged",
    );
    expect(await outcomeOf(await deliver(inquiry.created))).toBe("already_decided");
    expect(await credits(key)).toMatchObject({ calls_left: 170, status: "active" });
  });

  it("the emulator moves an inquiry and a chargeback only as Stripe does", async () => {
    const { pi } = await revealedKey();
    const inquiry = await openInquiry(pi);
    await expect(emulatorPost(`/_emulator/disputes/${inquiry.id}/close`, { status: "won" })).rejects.toThrow(
      /warning_closed/,
    );
    const chargeback = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
    expect(chargeback.status).toBe("needs_response");
    await expect(
      emulatorPost(`/_emulator/disputes/${chargeback.id}/close`, { status: "warning_closed" }),
    ).rejects.toThrow(/won or lost/);
    await emulatorPost(`/_emulator/disputes/${chargeback.id}/update`, { status: "under_review" });
    expect((await disputeEvent("charge.dispute.updated", chargeback.id as string))?.data.object.status).toBe(
      "under_review",
    );
    await emulatorPost(`/_emulator/disputes/${chargeback.id}/close`, { status: "won" });
    await expect(
      emulatorPost(`/_emulator/disputes/${chargeback.id}/close`, { status: "lost" }),
    ).rejects.toThrow(/already closed/);
  });
});
