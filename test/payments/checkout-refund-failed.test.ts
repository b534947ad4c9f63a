import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  deliver,
  emulatorEvents,
  emulatorPost,
  failRefund,
  granted,
  keyState,
  keysFor,
  makeRefund,
  outcomeOf,
} from "./checkout-helpers";

/** Refunds `amount` cents (all that is left without it) and delivers the charge.refunded Stripe sent. */
async function refund(pi: string, amount?: string) {
  const made = await makeRefund(pi, amount);
  expect(await outcomeOf(await deliver(made.event))).toBe("refund_applied");
  return made.id;
}

describe("a refund that fails later gives the credits back", () => {
  it("a failed partial refund returns the calls it took; redelivered, nothing more; a later refund still counts", async () => {
    const { id, pi } = await granted();
    const first = await refund(pi, "17");
    expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
    const updated = await failRefund(first);
    expect(updated?.data.object.status).toBe("failed");
    expect(await outcomeOf(await deliver(updated))).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
    expect(await outcomeOf(await deliver(updated))).toBe("duplicate_event");
    // A new refund of a third counts from what Stripe holds now ($0.17 of $0.51 refunded).
    await refund(pi, "17");
    expect(await keyState(id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });
  });

  it("what was spent is not handed back: revoked debt is cancelled first, only unspent credits return", async () => {
    const { id, pi } = await granted();
    // 160 credits spent (in flight or used), 10 unspent; a full refund takes the 10 and owes 160.
    await env.DB.prepare("UPDATE api_keys SET calls_left = 10 WHERE session_id = ?1").bind(id).run();
    const full = await refund(pi);
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 160 });
    expect(await outcomeOf(await deliver(await failRefund(full)))).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 10, calls_revoked: 0, revoke_debt: 0 });
    expect((await keysFor(id)).results).toEqual([{ calls_left: 10, calls_total: 170 }]);
  });

  it("a key whose dispute was lost stays revoked", async () => {
    const { id, pi } = await granted();
    const full = await refund(pi, "17");
    const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
    await deliver(
      (await emulatorEvents("charge.dispute.created")).find((e) => e.data.object.id === dispute.id),
    );
    await emulatorPost(`/_emulator/disputes/${dispute.id}/close`, { status: "lost" });
    await deliver(
      (await emulatorEvents("charge.dispute.closed")).find((e) => e.data.object.id === dispute.id),
    );
    expect(await outcomeOf(await deliver(await failRefund(full)))).toBe("unchanged");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
  });
});
