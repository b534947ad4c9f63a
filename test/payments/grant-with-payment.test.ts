import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { settleSession } from "../../src/payments/checkout-sessions";
import { SWEEP_MAX_READS, sweepCheckouts } from "../../src/payments/checkout-sweep";
import { hashKey, refundCredit, spendCredit } from "../../src/payments/credits";
import { applyPaymentState, paymentStateNow, SWEEP_GRANT_READS } from "../../src/payments/grant-with-payment";
import { fetchSession, stripeClient } from "../../src/payments/stripe";
import { skillById } from "../../src/skills/registry";
import {
  deliver,
  EMULATOR,
  emulatorEvents,
  emulatorPost,
  failRefund,
  keyIn,
  keyState,
  makeRefund,
  outcomeOf,
  remote,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionRow,
  spendCall,
  successPage,
} from "./checkout-helpers";

// The sweep grants a pack only when every webhook of it was lost (or D1 was restored to before its
// grant), and then its refund and dispute events were lost too, or came when no key was there to
// take from. Granted on the session alone, a pack Stripe had fully refunded came back with all its
// calls. The sweep now reads the payment's refunds and disputes before the grant and puts them on
// the key right after it.
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Long ago, so that as of NOW only the sessions a test puts here are due (the others were made later). */
const CREATED = Date.now() - 5000 * DAY;
const NOW = CREATED + 2 * DAY;
/** Runs that read one session and grant it, and no more. */
const ONE_GRANT = 1 + SWEEP_GRANT_READS;

/** Sessions a test left due: ended after it, so no later sweep asks them. */
const leftDue: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const id of leftDue.splice(0)) {
    await env.DB.prepare(
      "UPDATE checkout_sessions SET status = 'expired' WHERE id = ?1 AND api_key_id IS NULL",
    )
      .bind(id)
      .run();
  }
});

/** A session paid at Stripe whose webhooks never came, due for the sweep as of NOW (`i`: its place in line). */
async function paidUnheard(i = 0) {
  const id = await seedSession("sha256", 170);
  await env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2, checked_at = NULL WHERE id = ?1")
    .bind(id, CREATED + i)
    .run();
  leftDue.push(id);
  return { id, pi: (await remote(id)).payment_intent as string };
}

/** The sweep as of NOW, its log lines silenced; its first calls awaited. */
async function sweep(limit = SWEEP_MAX_READS, bindings: object = env) {
  const error = vi.spyOn(console, "error").mockImplementation(() => {});
  const firstCalls: Promise<void>[] = [];
  const summary = await sweepCheckouts(bindings as typeof env, (run) => firstCalls.push(run), NOW, limit);
  await Promise.all(firstCalls);
  const lines = error.mock.calls.map((c) => String(c[0]));
  error.mockRestore();
  return { summary, lines };
}

/** Every Stripe API read the app made so far (the emulator counts them). */
const stripeReads = async () =>
  (await (await fetch(`${EMULATOR}/_emulator/requests?match=GET%20%2Fv1%2F`)).json<{ count: number }>())
    .count;

/** The key the success page reveals for a granted session. */
async function revealed(id: string) {
  const token = await revealTokenFromPage(id);
  expect(token).toBeDefined();
  return keyIn(await (await revealPost(id, token as string)).text()) as string;
}

const dispute = (pi: string) => emulatorPost("/_emulator/disputes", { payment_intent: pi });

describe("the sweep grants a pack with its payment's refunds and disputes as Stripe reports them", () => {
  it("fully refunded, its completed and refund webhooks both lost: granted with every call revoked, the success page reveals none", async () => {
    const { id, pi } = await paidUnheard();
    await makeRefund(pi); // $0.51 back to the buyer; the charge.refunded never reaches us
    const before = await stripeReads();
    const { summary, lines } = await sweep(SWEEP_MAX_READS);
    expect(summary).toMatchObject({ asked: 1, granted: 1 });
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 0 });
    expect(summary.reads).toBe(ONE_GRANT);
    // The session, the refunds, the checkout's amount, the disputes, and the refunds again after the write.
    expect((await stripeReads()) - before).toBe(5);
    expect(lines.find((l) => l.includes("granted a paid session"))).toContain('"refund":"refund_applied"');
    // The success page says so and reveals no key.
    expect(await successPage(id)).toContain("Payment refunded");
    expect(await revealTokenFromPage(id)).toBeUndefined();
    // The lost event, delivered at last (a resend), changes nothing.
    const event = (await emulatorEvents("charge.refunded"))
      .filter((e) => e.data.object.payment_intent === pi)
      .at(-1);
    expect(await outcomeOf(await deliver(event))).toBe("unchanged");
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 0 });
  });

  it("a partial refund revokes its share; nothing refunded costs 3 reads beyond the session's and revokes nothing", async () => {
    const part = await paidUnheard();
    await makeRefund(part.pi, "17"); // a third of $0.51
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect(await keyState(part.id)).toEqual({ calls_left: 113, calls_revoked: 57, revoke_debt: 0 });

    const whole = await paidUnheard();
    const before = await stripeReads();
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect((await stripeReads()) - before).toBe(1 + 3);
    expect(await keyState(whole.id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
  });

  it("an open dispute freezes the key it grants; a lost one revokes it for good", async () => {
    const open = await paidUnheard();
    await dispute(open.pi);
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect(await keyState(open.id)).toMatchObject({ calls_left: 170, calls_revoked: 0 });
    expect(await successPage(open.id)).toContain("Payment disputed");
    expect(await revealTokenFromPage(open.id)).toBeUndefined();

    const lost = await paidUnheard();
    const d = await dispute(lost.pi);
    await emulatorPost(`/_emulator/disputes/${d.id}/close`, { status: "lost" });
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect(await keyState(lost.id)).toMatchObject({ calls_left: 0, calls_revoked: 170 });
    expect(await successPage(lost.id)).toContain("Payment charged back");
    expect(await revealTokenFromPage(lost.id)).toBeUndefined();

    // A dispute won before the grant changes nothing.
    const won = await paidUnheard();
    const w = await dispute(won.pi);
    await emulatorPost(`/_emulator/disputes/${w.id}/close`, { status: "won" });
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect((await spendCall(await revealed(won.id))).status).toBe(200);
  });
});

describe("the sweep's Stripe budget and failures", () => {
  it("a paid session whose grant reads no longer fit waits, first in line, for the next run", async () => {
    const open = await paidUnheard();
    // Not paid, and first in line: the run's first read. Then the paid one, with
    // SWEEP_GRANT_READS - 1 reads left.
    const unpaid = await seedSession("sha256", 170, undefined, false);
    await env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2 WHERE id = ?1")
      .bind(unpaid, CREATED - 1)
      .run();
    leftDue.push(unpaid);
    const { summary } = await sweep(ONE_GRANT);
    expect(summary).toMatchObject({ asked: 2, granted: 0, more: true });
    expect(summary.reads).toBeLessThanOrEqual(ONE_GRANT);
    expect(summary.stopped).toContain(open.id);
    expect(await sessionRow(open.id)).toMatchObject({ api_key_id: null, checked_at: null });
    // The next run: the unpaid one was asked, so the paid one leads and is granted.
    const next = await sweep(ONE_GRANT);
    expect(next.summary).toMatchObject({ asked: 1, granted: 1, reads: ONE_GRANT });
    expect(await keyState(open.id)).toMatchObject({ calls_left: 170 });
  });

  it("refunds or disputes Stripe does not answer: not granted, a warn line, the run fails; granted once Stripe answers", async () => {
    const { id, pi } = await paidUnheard();
    await makeRefund(pi);
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.startsWith(`${EMULATOR}/v1/disputes`)) {
        return Response.json(
          { error: { type: "api_error", message: "An unknown error occurred." } },
          { status: 500 },
        );
      }
      return real(input, init);
    });
    // A client of its own (one per API base), built with the failing fetch.
    const { summary, lines } = await sweep(ONE_GRANT, {
      ...env,
      STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}`,
    });
    vi.restoreAllMocks();
    expect(summary).toMatchObject({ asked: 1, granted: 0, more: true });
    expect(summary.error).toMatch(/could not be read about cs_.*disputes/);
    expect(
      lines.some(
        (l) => l.includes('"level":"warn"') && l.includes("paid session not granted yet") && l.includes(id),
      ),
    ).toBe(true);
    expect(await sessionRow(id)).toMatchObject({ api_key_id: null, status: "open" });
    // Asked again an hour on (past Stripe's 24 h lifetime as of NOW): granted, refunded.
    await env.DB.prepare("UPDATE checkout_sessions SET checked_at = ?2 WHERE id = ?1")
      .bind(id, NOW - 2 * HOUR)
      .run();
    expect((await sweep()).summary).toMatchObject({ granted: 1 });
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 0 });
  });

  it("a restricted key that may not read refunds or disputes: granted on the session alone, with the configuration error and a warn line (asking again would change nothing)", async () => {
    const { id } = await paidUnheard();
    const { summary, lines } = await sweep(ONE_GRANT, {
      ...env,
      STRIPE_SECRET_KEY: "rk_test_unit_tests_without_disputes_read",
    });
    expect(summary).toMatchObject({ asked: 1, granted: 1 });
    expect(summary.error).toBeUndefined();
    expect(lines.some((l) => l.includes("stripe configuration error") && l.includes("restricted key"))).toBe(
      true,
    );
    expect(
      lines.some((l) => l.includes("paid session granted without its refunds or disputes") && l.includes(id)),
    ).toBe(true);
    expect(await keyState(id)).toEqual({ calls_left: 170, calls_revoked: 0, revoke_debt: 0 });
  });

  it("never reads past SWEEP_MAX_READS, whatever it grants", async () => {
    for (let i = 0; i < 4; i++) await paidUnheard(i);
    const before = await stripeReads();
    const { summary } = await sweep(SWEEP_MAX_READS);
    expect(summary.reads).toBeLessThanOrEqual(SWEEP_MAX_READS);
    expect((await stripeReads()) - before).toBeLessThanOrEqual(SWEEP_MAX_READS);
    expect(summary).toMatchObject({ granted: Math.floor(SWEEP_MAX_READS / ONE_GRANT), more: true });
  });
});

describe("a call between the grant and the refund's write", () => {
  it("a key revealed and spent in that window ends exact: what was used is kept, the call in flight is not handed back, a failed refund gives back the rest", async () => {
    const { id, pi } = await paidUnheard();
    const { id: refundId } = await makeRefund(pi);
    const stripe = await stripeClient(env);
    if (!stripe) throw new Error("no Stripe client");
    // The sweep's steps, with the buyer acting between the grant and the write.
    const state = await paymentStateNow(stripe, pi);
    if ("unreadable" in state) throw new Error(state.unreadable);
    expect(
      await settleSession(
        env,
        (await fetchSession(stripe, id)) as NonNullable<Awaited<ReturnType<typeof fetchSession>>>,
      ),
    ).toBe("granted");
    const key = await revealed(id);
    expect((await spendCall(key)).status).toBe(200); // used before the refund reached the key
    const sha = skillById("sha256");
    if (!sha) throw new Error("no sha256");
    expect(await spendCredit(env.DB, await hashKey(key), sha)).toBeTruthy(); // a call in flight
    expect(await applyPaymentState(env.DB, stripe, pi, state)).toMatchObject({ refund: "refund_applied" });
    expect(await keyState(id)).toEqual({ calls_left: 0, calls_revoked: 170, revoke_debt: 2 });
    // The call in flight fails: its credit pays the debt, not the buyer.
    expect(await refundCredit(env.DB, await hashKey(key))).toBe(0);
    expect((await spendCall(key)).status).toBe(402);
    // Stripe then fails the refund: the buyer has every call back but the one used.
    const failed = await failRefund(refundId);
    expect(await outcomeOf(await deliver(failed))).toBe("refund_applied");
    expect(await keyState(id)).toEqual({ calls_left: 169, calls_revoked: 0, revoke_debt: 0 });
  });
});
