import { env } from "cloudflare:test";
import type Stripe from "stripe";
import { afterEach, describe, expect, it, vi } from "vitest";
import { refundsNow } from "../../src/payments/card-refund-sync";
import { createCheckout } from "../../src/payments/checkout-create";
import { handleStripeEvent } from "../../src/payments/stripe-events";
import { sessionRef } from "../../src/redact";
import { skillById } from "../../src/skills/registry";
import type { Skill } from "../../src/skills/types";
import { eventOf } from "./checkout-helpers";

// A Stripe call that fails is logged; the line must say which session, event or payment it was
// for, or a maintainer cannot tell which buyer's webhook Stripe is redelivering (or gave up on).

afterEach(() => {
  vi.restoreAllMocks();
});

const down = () => {
  throw new Error("stripe: connection reset");
};

/** A Stripe client whose every call this test makes fails, except those given in `works`. */
function failingStripe(works: { refundsList?: () => AsyncIterable<unknown> } = {}) {
  return {
    checkout: { sessions: { retrieve: down, list: down, create: down } },
    refunds: { list: works.refundsList ?? down },
  } as unknown as Stripe;
}

/** Captures console.error: the JSON lines it was given whose msg is `msg`. */
function errorLines() {
  const spy = vi.spyOn(console, "error").mockImplementation(() => {});
  return (msg: string) =>
    spy.mock.calls
      .map((args) => JSON.parse(String(args[0])) as Record<string, unknown>)
      .filter((line) => line.msg === msg);
}

const noRun = () => undefined;

describe("a failed Stripe call's log line names what it was for", () => {
  it("a completed session that cannot be read: its session and event", async () => {
    const lines = errorLines();
    const event = eventOf("checkout.session.completed", {
      id: "cs_test_lines_retrieve",
      object: "checkout.session",
    });
    const answer = await handleStripeEvent(env, failingStripe(), event as Stripe.Event, noRun);
    expect(answer.status).toBe(502);
    expect(lines("stripe retrieve failed")).toEqual([
      expect.objectContaining({
        level: "error",
        session_id: sessionRef("cs_test_lines_retrieve"),
        event_id: event.id,
      }),
    ]);
  });

  it("a charge event whose payment's checkout cannot be looked up: its event and payment", async () => {
    const lines = errorLines();
    const event = eventOf("charge.refunded", {
      id: "ch_test_lines",
      object: "charge",
      payment_intent: "pi_test_lines_unknown",
    });
    const answer = await handleStripeEvent(env, failingStripe(), event as Stripe.Event, noRun);
    expect(answer.status).toBe(502);
    expect(lines("stripe list failed")).toEqual([
      expect.objectContaining({
        level: "error",
        event_id: event.id,
        payment_intent: "pi_test_lines_unknown",
      }),
    ]);
  });

  it("a payment's refunds, or its checkout, that cannot be read: its payment", async () => {
    const lines = errorLines();
    expect(await refundsNow(failingStripe(), "pi_test_lines_refunds")).toHaveProperty("unreadable");
    expect(lines("stripe refund list failed")).toEqual([
      expect.objectContaining({ payment_intent: "pi_test_lines_refunds" }),
    ]);
    const none = async function* () {};
    expect(await refundsNow(failingStripe({ refundsList: none }), "pi_test_lines_amount")).toHaveProperty(
      "unreadable",
    );
    expect(lines("stripe list failed")).toEqual([
      expect.objectContaining({ payment_intent: "pi_test_lines_amount" }),
    ]);
  });

  it("a checkout Stripe would not create: the request's id", async () => {
    const lines = errorLines();
    const requestId = crypto.randomUUID();
    const made = await createCheckout(
      env,
      failingStripe(),
      {
        request: { skill_id: "sha256" },
        skill: skillById("sha256") as Skill,
        network: "192.0.2.1",
        requestId,
        baseUrl: "https://skills.test",
      } as Parameters<typeof createCheckout>[2],
      async (work) => {
        await work;
      },
    );
    expect(made).toMatchObject({ refused: "stripe_failed" });
    expect(lines("stripe session create failed")).toEqual([
      expect.objectContaining({ level: "error", request_id: requestId }),
    ]);
  });
});
