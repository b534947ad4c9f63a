import Stripe from "stripe";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
// @ts-expect-error plain JS helper shared with the scripts
import { startStripeEmulator } from "../../scripts/lib/stripe-emulator.mjs";
import type { Bindings } from "../../src/env";
import { refundedTotal, stripeClient } from "../../src/payments/stripe";

// The Stripe emulator (scripts/lib/stripe-emulator.mjs) on its own, driven by the real `stripe`
// client: what it answers must be what Stripe answers where the app reads it.

const API_KEY = "sk_test_emulator_script_tests_0000000000";
let emulator: { url: string; stop: () => Promise<void> };
let stripe: Stripe;
beforeAll(async () => {
  emulator = await startStripeEmulator({ port: 0, apiKey: API_KEY });
  const { port } = new URL(emulator.url);
  stripe = new Stripe(API_KEY, { host: "127.0.0.1", port: Number(port), protocol: "http" });
});
afterAll(() => emulator.stop());

/** A paid session of `cents` (the parameters the app sends); its PaymentIntent. */
async function paidIntent(cents: number) {
  const session = await stripe.checkout.sessions.create({
    mode: "payment",
    success_url: "https://skills.test/checkout/success?session_id={CHECKOUT_SESSION_ID}",
    line_items: [
      { price_data: { currency: "usd", product_data: { name: "calls" }, unit_amount: cents }, quantity: 1 },
    ],
  });
  const res = await fetch(`${emulator.url}/pay/${session.id}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "email=t%40example.com&outcome=paid",
    redirect: "manual",
  });
  expect(res.status).toBe(303);
  return (await stripe.checkout.sessions.retrieve(session.id)).payment_intent as string;
}

async function control(path: string, form: Record<string, string> = {}) {
  const res = await fetch(`${emulator.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
}

const requests = async (match: string) =>
  (
    (await (await fetch(`${emulator.url}/_emulator/requests?match=${encodeURIComponent(match)}`)).json()) as {
      count: number;
    }
  ).count;

describe("the refund list pages as Stripe's does", () => {
  let pi: string;
  const made: string[] = []; // oldest first
  beforeAll(async () => {
    pi = await paidIntent(300);
    // Another payment's refunds in between: the list of one PaymentIntent leaves them out.
    const other = await paidIntent(300);
    for (let i = 0; i < 250; i++) {
      made.push((await stripe.refunds.create({ payment_intent: pi, amount: 1 })).id);
      if (i % 50 === 0) await stripe.refunds.create({ payment_intent: other, amount: 1 });
    }
  }, 60_000);

  it("the client's auto-pagination reads all 250 refunds, newest first, in three requests of 100", async () => {
    const before = await requests("GET /v1/refunds");
    const seen: string[] = [];
    for await (const refund of stripe.refunds.list({ payment_intent: pi, limit: 100 })) seen.push(refund.id);
    expect(seen).toEqual([...made].reverse());
    expect((await requests("GET /v1/refunds")) - before).toBe(3);
  });

  it("starting_after and ending_before name a page each way, has_more saying whether the list goes on", async () => {
    const newestFirst = [...made].reverse();
    const first = await stripe.refunds.list({ payment_intent: pi, limit: 100 });
    expect(first.data.map((r) => r.id)).toEqual(newestFirst.slice(0, 100));
    expect(first.has_more).toBe(true);
    const last = await stripe.refunds.list({
      payment_intent: pi,
      limit: 100,
      starting_after: newestFirst[199],
    });
    expect(last.data.map((r) => r.id)).toEqual(newestFirst.slice(200));
    expect(last.has_more).toBe(false);
    // Before the 150th newest: the 100 newer ones closest to it, still newest first; 49 newer remain.
    const back = await stripe.refunds.list({
      payment_intent: pi,
      limit: 100,
      ending_before: newestFirst[149],
    });
    expect(back.data.map((r) => r.id)).toEqual(newestFirst.slice(49, 149));
    expect(back.has_more).toBe(true);
    // The client pages backwards from ending_before too, oldest first.
    const backwards: string[] = [];
    for await (const refund of stripe.refunds.list({
      payment_intent: pi,
      limit: 100,
      ending_before: made[0],
    }))
      backwards.push(refund.id);
    expect(backwards).toEqual(made.slice(1));
  });

  it("refuses a cursor Stripe would refuse", async () => {
    await expect(
      stripe.refunds.list({ payment_intent: pi, starting_after: "re_missing" }),
    ).rejects.toMatchObject({
      statusCode: 400,
      code: "resource_missing",
      param: "starting_after",
    });
    await expect(
      stripe.refunds.list({ payment_intent: pi, starting_after: made[1], ending_before: made[0] }),
    ).rejects.toMatchObject({ statusCode: 400, message: expect.stringMatching(/only specify one/) });
  });

  it("the app's refund total (payments/stripe.ts refundedTotal) counts all of them, less those failed or canceled", async () => {
    const client = (await stripeClient({
      STRIPE_SECRET_KEY: API_KEY,
      STRIPE_API_BASE: emulator.url,
      // A test key: STRIPE_MODE unset is "live", which refuses it (src/config.ts stripeKeyProblem).
      STRIPE_MODE: "test",
    } as Bindings)) as Stripe;
    expect(await refundedTotal(client, pi)).toEqual({ refunded: 250, currency: "usd" });
    // The oldest fails: it is on the third page, which only auto-pagination reads.
    await control(`/_emulator/refunds/${made[0]}/fail`);
    expect(await refundedTotal(client, pi)).toEqual({ refunded: 249, currency: "usd" });
  });
});

describe("small fidelity", () => {
  afterEach(() => vi.useRealTimers());

  it("a refund names a failure_reason only once it failed, as Stripe's do", async () => {
    const pi = await paidIntent(300);
    const made = await stripe.refunds.create({ payment_intent: pi, amount: 5 });
    expect(made.status).toBe("succeeded");
    expect(made).not.toHaveProperty("failure_reason");
    const pending = await control("/_emulator/refunds", { payment_intent: pi, amount: "5" });
    expect(pending).toMatchObject({ status: "pending", pending_reason: "processing" });
    expect(pending).not.toHaveProperty("failure_reason");
    await control(`/_emulator/refunds/${made.id}/fail`);
    const listed = await stripe.refunds.list({ payment_intent: pi });
    expect(listed.data.map((r) => [r.status, r.failure_reason])).toEqual([
      ["pending", undefined],
      ["failed", "expired_or_canceled_card"],
    ]);
  });

  it("an idempotency key is kept 24 hours, then starts afresh", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const create = (name: string) =>
      stripe.checkout.sessions.create(
        {
          mode: "payment",
          success_url: "https://skills.test/checkout/success",
          line_items: [
            { price_data: { currency: "usd", product_data: { name }, unit_amount: 100 }, quantity: 1 },
          ],
        },
        { idempotencyKey: "emulator-test-key-lifetime" },
      );
    const first = await create("one");
    vi.setSystemTime(Date.now() + 24 * 3600 * 1000 - 60_000);
    // Within the day: the same request replays the session, another one is refused.
    expect((await create("one")).id).toBe(first.id);
    await expect(create("two")).rejects.toMatchObject({ type: "StripeIdempotencyError" });
    vi.setSystemTime(Date.now() + 60_000);
    // A day old, the key is gone: it makes a new session, whatever the request.
    const later = await create("two");
    expect(later.id).not.toBe(first.id);
    expect((await create("two")).id).toBe(later.id);
  });
});
