import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionRow } from "../../src/payments/checkout-sessions";
import { stripeView } from "../../src/payments/stripe-views";
import { createCheckout, EMULATOR, pay } from "./checkout-helpers";

const open = { status: "open" } as SessionRow;

/** Lets the views started so far reach their reads (stripeView awaits its Stripe client first). */
const asked = () => new Promise((r) => setTimeout(r, 50));

/** How often this session was read from Stripe (the emulator counts its API requests). */
const stripeReads = async (id: string) =>
  (
    await (
      await fetch(
        `${EMULATOR}/_emulator/requests?match=${encodeURIComponent(`GET /v1/checkout/sessions/${id}`)}`,
      )
    ).json<{ count: number }>()
  ).count;

/** A budget that answers `may`, counting how often it was asked. */
function counted(key: string, may: boolean) {
  const budget = {
    key,
    asked: 0,
    mayRead: async () => {
      budget.asked++;
      return may;
    },
  };
  return budget;
}

describe("a view whose joined read another budget held back asks its own", () => {
  it("each waiting view asks its own budget once, and the one it allows reads Stripe's answer", async () => {
    const id = await createCheckout("sha256");
    await pay(id);
    const { promise, resolve: allowA } = Promise.withResolvers<boolean>();
    const a = stripeView(env, open, id, { key: "ip:A", mayRead: () => promise });
    const budgetB = counted("ip:B", false);
    const budgetP = counted("ip:P", true);
    const b = stripeView(env, open, id, budgetB);
    const p = stripeView(env, open, id, budgetP);
    await asked();
    allowA(false);
    expect(await a).toEqual({ remote: undefined, postponed: true });
    expect(await b).toEqual({ remote: undefined, postponed: true });
    const answer = await p;
    expect(budgetB.asked).toBe(1);
    expect(budgetP.asked).toBe(1);
    expect(answer.postponed).toBe(false);
    expect(answer.remote?.paid).toBe(true);
  });

  it("a view under the budget that held the read back is postponed with it, without asking again", async () => {
    const id = await createCheckout("sha256");
    const { promise, resolve: allowA } = Promise.withResolvers<boolean>();
    const a = stripeView(env, open, id, { key: "ip:A", mayRead: () => promise });
    const again = counted("ip:A", true);
    const same = stripeView(env, open, id, again);
    await asked();
    allowA(false);
    expect(await a).toEqual({ remote: undefined, postponed: true });
    expect(await same).toEqual({ remote: undefined, postponed: true });
    expect(again.asked).toBe(0);
  });

  it("views under other budgets woken by a postponed read share one read, not one each", async () => {
    const id = await createCheckout("sha256");
    await pay(id);
    const { promise, resolve: allowA } = Promise.withResolvers<boolean>();
    const a = stripeView(env, open, id, { key: "ip:A", mayRead: () => promise });
    const budgets = ["B", "C", "D", "E", "F"].map((ip) => counted(`ip:${ip}`, true));
    const others = budgets.map((budget) => stripeView(env, open, id, budget));
    await asked();
    allowA(false);
    expect(await a).toEqual({ remote: undefined, postponed: true });
    for (const view of await Promise.all(others)) {
      expect(view.postponed).toBe(false);
      expect(view.remote?.paid).toBe(true);
    }
    // The first woken view starts the read on its own budget; the others join it.
    expect(await stripeReads(id)).toBe(1);
    expect(budgets.map((b) => b.asked)).toEqual([1, 0, 0, 0, 0]);
  });
});
