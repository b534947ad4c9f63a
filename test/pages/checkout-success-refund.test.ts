import { describe, expect, it } from "vitest";
import { call } from "../helpers";
import {
  deliver,
  emulatorEvents,
  emulatorPost,
  granted,
  keyIn,
  makeRefund,
  outcomeOf,
  revealPost,
  revealTokenFromPage,
} from "../payments/checkout-helpers";

// The success page after Stripe refunds or disputes the pack's payment: the real emulator's
// refunds and disputes, their events delivered to the webhook as Stripe sends them.

/** The page's heading, its "Calls left" figure, and whether it offers the key. */
async function successPage(id: string) {
  const html = await (await call(`/checkout/success?session_id=${id}`)).text();
  return {
    html,
    h1: /<h1[^>]*>([^<]*)<\/h1>/.exec(html)?.[1],
    callsLeft: /<dd id="calls-left">([^<]*)<\/dd>/.exec(html)?.[1],
    reveal: html.includes('id="reveal"'),
  };
}

async function openDispute(pi: string) {
  const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
  const created = (await emulatorEvents("charge.dispute.created")).find(
    (e) => e.data.object.id === dispute.id,
  );
  expect(await outcomeOf(await deliver(created))).toBe("frozen");
  return dispute.id as string;
}

async function closeDispute(disputeId: string, status: "won" | "lost") {
  await emulatorPost(`/_emulator/disputes/${disputeId}/close`, { status });
  const closed = (await emulatorEvents("charge.dispute.closed")).find((e) => e.data.object.id === disputeId);
  return outcomeOf(await deliver(closed));
}

describe("the success page after a refund or dispute of the pack", () => {
  it("a full refund: 'Payment refunded', no calls-left figure and no key to reveal", async () => {
    const { id, pi } = await granted();
    expect(await successPage(id)).toMatchObject({ h1: "Payment received", callsLeft: "170", reveal: true });
    const { event } = await makeRefund(pi);
    expect(await outcomeOf(await deliver(event))).toBe("refund_applied");
    const page = await successPage(id);
    expect(page).toMatchObject({
      h1: "Payment refunded",
      callsLeft: "none: the payment was refunded",
      reveal: false,
    });
    expect(page.html).toContain("The payment was refunded, so this checkout&#39;s key holds no calls");
    expect(page.html).not.toContain("Payment received");
    expect(page.html).not.toContain("Reveal my key");
  });

  it("a reveal form loaded before the refund or dispute (its token still valid) hands out no key", async () => {
    for (const end of ["refund", "dispute"] as const) {
      const { id, pi } = await granted();
      const token = (await revealTokenFromPage(id)) as string;
      if (end === "refund") {
        const { event } = await makeRefund(pi);
        expect(await outcomeOf(await deliver(event))).toBe("refund_applied");
      } else await openDispute(pi);
      const html = await (await revealPost(id, token)).text();
      expect(keyIn(html), end).toBeUndefined();
      expect(html, end).toContain('id="key-withheld"');
      if (end === "dispute") {
        // Nothing was lost by waiting: once the dispute is won, the same form reveals the key.
        const disputes = await emulatorEvents("charge.dispute.created");
        const d = disputes.find((e) => e.data.object.payment_intent === pi);
        expect(await closeDispute(d?.data.object.id as string, "won")).toBeTruthy();
        expect(keyIn(await (await revealPost(id, token)).text())).toMatch(/^mk_/);
      }
    }
  });

  it("a partial refund: the pack stands with the calls left, and says what the refund took back", async () => {
    const { id, pi } = await granted();
    // 17 of the pack's 51 cents: a third of its 170 calls.
    const { event } = await makeRefund(pi, "17");
    expect(await outcomeOf(await deliver(event))).toBe("refund_applied");
    expect(await successPage(id)).toMatchObject({
      h1: "Payment received",
      callsLeft: "113 (57 of the pack taken back by a partial refund)",
      reveal: true,
    });
  });

  it("an open dispute: 'frozen while the payment is disputed', the key held; a won dispute offers it again", async () => {
    const { id, pi } = await granted();
    const dispute = await openDispute(pi);
    const frozen = await successPage(id);
    expect(frozen).toMatchObject({
      h1: "Payment disputed",
      callsLeft: "frozen while the payment is disputed (170 come back if it is decided in our favour)",
      reveal: false,
    });
    expect(frozen.html).toContain("Your key is held while the card payment is disputed");
    expect(await closeDispute(dispute, "won")).toBe("restored");
    const restored = await successPage(id);
    expect(restored).toMatchObject({ h1: "Payment received", callsLeft: "170", reveal: true });
    expect(keyIn(await (await revealPost(id, (await revealTokenFromPage(id)) as string)).text())).toMatch(
      /^mk_/,
    );
  });

  it("a lost dispute: 'Payment charged back', none left; a key revealed before is said to be gone", async () => {
    const { id, pi } = await granted();
    expect(keyIn(await (await revealPost(id, (await revealTokenFromPage(id)) as string)).text())).toMatch(
      /^mk_/,
    );
    expect(await closeDispute(await openDispute(pi), "lost")).toBe("revoked");
    const page = await successPage(id);
    expect(page).toMatchObject({
      h1: "Payment charged back",
      callsLeft: "none: the payment was charged back",
      reveal: false,
    });
    expect(page.html).toContain('id="key-gone"');
  });
});
