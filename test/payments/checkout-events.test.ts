import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { hashKey, refundCredit, spendCredit } from "../../src/payments/credits";
import { revealToken } from "../../src/payments/key-reveal";
import { skillById } from "../../src/skills/registry";
import type { Skill } from "../../src/skills/types";
import { call, postJson } from "../helpers";
import {
  cardEnv,
  createCheckout,
  credits,
  deliver,
  deliverWithStripeDown,
  emulatorEvents,
  emulatorPost,
  eventOf,
  FIRST_CALL_COSTS,
  firstCallResult,
  keyIn,
  keysFor,
  pay,
  remote,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
  sessionRow,
  signed,
  spendCall,
  stripe,
} from "./checkout-helpers";

const outcomeOf = async (res: Response) => {
  expect(res.status).toBe(200);
  return (await res.json<{ outcome: string }>()).outcome;
};

/** A signed event whose body claims the session is paid: only Stripe's own state may decide. */
const claimsPaid = (id: string) =>
  eventOf("checkout.session.completed", {
    id,
    object: "checkout.session",
    status: "complete",
    payment_status: "paid",
  });
const claimsExpired = (id: string) =>
  eventOf("checkout.session.expired", { id, object: "checkout.session", status: "expired" });

async function grantedKey(skill = "sha256") {
  const id = await seedSession(skill, 170);
  expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
    "granted",
  );
  const key = keyIn(await (await revealPost(id, (await revealTokenFromPage(id)) as string)).text()) as string;
  const pi = (await remote(id)).payment_intent as string;
  return { id, key, pi };
}

/** Grants through the webhook with Stripe's own event for the (paid) session. */
async function settleForTest(id: string) {
  const ctx = createExecutionContext();
  await toWebhook(await signed(await sessionEvent("checkout.session.completed", id)), ctx);
  await waitOnExecutionContext(ctx);
}

/** A signed event posted to the webhook through the Worker itself, its background work in `ctx`. */
const toWebhook = ({ payload, header }: { payload: string; header: string }, ctx: ExecutionContext) =>
  worker.fetch(
    new Request("https://skills.test/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    }),
    env,
    ctx,
  );

describe("issue 19.5: the grant follows Stripe's state of the session, in any event order", () => {
  it("Stripe says expired: expired-then-completed and completed-then-expired both grant nothing", async () => {
    for (const order of ["expired first", "completed first"]) {
      const id = await createCheckout("sha256");
      await stripe.checkout.sessions.expire(id);
      const expired = (await emulatorEvents("checkout.session.expired")).find((e) => e.data.object.id === id);
      expect(expired).toBeTruthy();
      const events = order === "expired first" ? [expired, claimsPaid(id)] : [claimsPaid(id), expired];
      for (const event of events) expect(await outcomeOf(await deliver(event))).toBe("expired");
      expect((await keysFor(id)).results).toEqual([]);
      expect((await sessionRow(id))?.status).toBe("expired");
      // The page (and its reveal POST) agree: nothing to reveal.
      expect(await (await call(`/checkout/success?session_id=${id}`)).text()).toContain(
        "This checkout expired",
      );
    }
  });

  it("Stripe says paid: completed-then-expired and expired-then-completed both grant exactly once", async () => {
    for (const order of ["completed first", "expired first"]) {
      const id = await seedSession("sha256", 170);
      const completed = await sessionEvent("checkout.session.completed", id);
      const events =
        order === "completed first" ? [completed, claimsExpired(id)] : [claimsExpired(id), completed];
      const outcomes = [];
      for (const event of events) outcomes.push(await outcomeOf(await deliver(event)));
      expect(outcomes).toEqual(["granted", "already_granted"]);
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
      expect(await sessionRow(id)).toMatchObject({
        status: "complete",
        payment_intent: (await remote(id)).payment_intent,
      });
    }
  });

  it("a Stripe outage answers 502 and records nothing, so Stripe's redelivery decides", async () => {
    const id = await seedSession("sha256", 170);
    const event = await sessionEvent("checkout.session.completed", id);
    const down = await deliverWithStripeDown(event);
    expect(down.status).toBe(502);
    expect((await keysFor(id)).results).toEqual([]);
    expect(await outcomeOf(await deliver(event))).toBe("granted");
  });
});

describe("checkout.session.async_payment_failed", () => {
  it("a delayed payment that fails grants nothing, even if a paid-looking completion follows", async () => {
    const id = await createCheckout("sha256");
    await pay(id, "async_failed");
    const mine = async (type: string) =>
      (await emulatorEvents(type)).find((e) => e.data.object.id === id) as unknown;
    expect(await outcomeOf(await deliver(await mine("checkout.session.completed")))).toBe("not_paid");
    expect(await outcomeOf(await deliver(await mine("checkout.session.async_payment_failed")))).toBe(
      "payment_failed",
    );
    expect(await outcomeOf(await deliver(claimsPaid(id)))).toBe("not_paid");
    expect((await keysFor(id)).results).toEqual([]);
    expect((await sessionRow(id))?.payment_failed_at).toBeTypeOf("number");
    const page = await call(`/checkout/success?session_id=${id}`);
    expect(await page.text()).toContain("The payment failed");
  });
});

describe("charge.refunded", () => {
  it("revokes the refunded share of the pack, cumulatively, idempotently and never below zero", async () => {
    const { id, pi } = await grantedKey();
    const refundEvent = async () => {
      const all = await emulatorEvents("charge.refunded");
      return all.filter((e) => e.data.object.payment_intent === pi).at(-1);
    };
    // A third of $0.51: 170 × 17/51 = 56.67 calls, rounded up to 57.
    await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "17" });
    const first = await refundEvent();
    expect(await outcomeOf(await deliver(first))).toBe("refund_applied");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 113, calls_total: 170 }]);
    expect(await outcomeOf(await deliver(first))).toBe("duplicate_event");
    expect((await keysFor(id)).results[0]?.calls_left).toBe(113);

    // The buyer spends down to 20; the rest is refunded (cumulative $0.51 = the whole pack).
    await env.DB.prepare("UPDATE api_keys SET calls_left = 20 WHERE session_id = ?1").bind(id).run();
    await emulatorPost("/v1/refunds", { payment_intent: pi });
    const second = await refundEvent();
    expect(second?.data.object.amount_refunded).toBe(51);
    expect(await outcomeOf(await deliver(second))).toBe("refund_applied");
    expect((await keysFor(id)).results[0]?.calls_left).toBe(0);
    // The older event arriving late reads Stripe's total too: nothing more, nothing goes negative.
    expect(await outcomeOf(await deliver({ ...first, id: `${first?.id}_late` }))).toBe("unchanged");
    expect((await keysFor(id)).results[0]?.calls_left).toBe(0);
  });

  it("a call in flight when a full refund lands gets no revoked credit back when it fails", async () => {
    const { id, key, pi } = await grantedKey();
    const keyHash = await hashKey(key);
    // The call takes its credit, the refund revokes the whole pack, then the call fails.
    const call = crypto.randomUUID();
    expect(await spendCredit(env.DB, keyHash, skillById("sha256") as Skill, call)).toEqual({
      calls_left: 169,
    });
    await emulatorPost("/v1/refunds", { payment_intent: pi });
    const ev = (await emulatorEvents("charge.refunded"))
      .filter((e) => e.data.object.payment_intent === pi)
      .at(-1);
    expect(await outcomeOf(await deliver(ev))).toBe("refund_applied");
    expect((await keysFor(id)).results[0]?.calls_left).toBe(0);
    await refundCredit(env.DB, keyHash, call);
    expect((await keysFor(id)).results[0]?.calls_left).toBe(0);
    expect((await spendCall(key)).status).toBe(402);
  });

  it("a partial refund landing while credits are in flight is taken from them when their calls fail", async () => {
    const sha256 = skillById("sha256") as Skill;
    /** A third of the pack (57 calls) refunded while `inFlight` of `left` credits are being spent. */
    const scenario = async (left: number, inFlight: number, order: "refund first" | "calls fail first") => {
      const { id, key, pi } = await grantedKey();
      const keyHash = await hashKey(key);
      await env.DB.prepare("UPDATE api_keys SET calls_left = ?2 WHERE session_id = ?1").bind(id, left).run();
      const calls = Array.from({ length: inFlight }, () => crypto.randomUUID());
      for (const call of calls) expect(await spendCredit(env.DB, keyHash, sha256, call)).toBeTruthy();
      await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "17" });
      const ev = (await emulatorEvents("charge.refunded"))
        .filter((e) => e.data.object.payment_intent === pi)
        .at(-1);
      const fail = async () => {
        for (const call of calls) await refundCredit(env.DB, keyHash, call);
      };
      if (order === "calls fail first") await fail();
      expect(await outcomeOf(await deliver(ev))).toBe("refund_applied");
      if (order === "refund first") await fail();
      return (await keysFor(id)).results[0]?.calls_left;
    };
    // Every credit left is in flight: the refund finds none unspent; the failed calls pay it.
    expect(await scenario(57, 57, "refund first")).toBe(0);
    expect(await scenario(57, 57, "calls fail first")).toBe(0);
    // 100 calls used, 60 in flight, 10 unspent: the buyer kept 113 and used 100, so 13 remain
    // once the 60 calls fail, in either order.
    expect(await scenario(70, 60, "refund first")).toBe(13);
    expect(await scenario(70, 60, "calls fail first")).toBe(13);
  });

  it("a failed call's X-Credits-Remaining says what the key holds after a refund kept its credit", async () => {
    const { id, key } = await grantedKey();
    // A refund found 1 credit in flight and left it owed (revoke_debt): the next failed call pays it.
    await env.DB.prepare("UPDATE api_keys SET calls_left = 5, revoke_debt = 1 WHERE session_id = ?1")
      .bind(id)
      .run();
    // sha256 refuses text its encoding cannot hold while running: a failure after the spend (a
    // body that fails validation spends nothing).
    const res = await spendCall(key, { text: "é", encoding: "ascii" });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-credits-remaining")).toBe("4");
    expect((await keysFor(id)).results[0]?.calls_left).toBe(4);
  });

  it("a refund of a payment we never granted is acknowledged and changes nothing", async () => {
    const charge = {
      id: "ch_x",
      object: "charge",
      payment_intent: "pi_unknown",
      amount: 100,
      amount_refunded: 100,
    };
    expect(await outcomeOf(await deliver(eventOf("charge.refunded", charge)))).toBe("unknown_payment");
  });
});

describe("charge.dispute.*", () => {
  it("a dispute freezes the key (clear 403), a won dispute restores it", async () => {
    const { key, pi } = await grantedKey();
    expect((await spendCall(key)).status).toBe(200);
    const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
    const created = (await emulatorEvents("charge.dispute.created")).find(
      (e) => e.data.object.id === dispute.id,
    );
    expect(await outcomeOf(await deliver(created))).toBe("frozen");
    const refused = await spendCall(key);
    expect(refused.status).toBe(403);
    expect((await refused.json<{ detail: string }>()).detail).toMatch(/frozen.*disputed/);
    expect(await credits(key)).toMatchObject({ calls_left: 169, status: "frozen" });

    await emulatorPost(`/_emulator/disputes/${dispute.id}/close`, { status: "won" });
    const closed = (await emulatorEvents("charge.dispute.closed")).find(
      (e) => e.data.object.id === dispute.id,
    );
    expect(await outcomeOf(await deliver(closed))).toBe("restored");
    expect(await outcomeOf(await deliver(closed))).toBe("duplicate_event");
    const again = await spendCall(key);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-credits-remaining")).toBe("168");
  });

  it("a dispute decided before its created event arrives never freezes the key, one after another", async () => {
    const { key, pi } = await grantedKey();
    const decidedFirst = async (status: "won" | "lost") => {
      const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
      const created = (await emulatorEvents("charge.dispute.created")).find(
        (e) => e.data.object.id === dispute.id,
      );
      await emulatorPost(`/_emulator/disputes/${dispute.id}/close`, { status });
      const closed = (await emulatorEvents("charge.dispute.closed")).find(
        (e) => e.data.object.id === dispute.id,
      );
      // Stripe does not promise order: the decision first, then the opening, which Stripe's
      // current state (the dispute is closed) shows to be stale.
      return {
        closed: await outcomeOf(await deliver(closed)),
        created: await outcomeOf(await deliver(created)),
      };
    };
    expect(await decidedFirst("won")).toEqual({ closed: "unchanged", created: "already_decided" });
    expect(await credits(key)).toMatchObject({ calls_left: 170, status: "active" });
    // A second dispute of the same payment, again decided first.
    expect(await decidedFirst("won")).toEqual({ closed: "unchanged", created: "already_decided" });
    expect((await spendCall(key)).status).toBe(200);
    // A lost one, decided first, still revokes for good.
    expect(await decidedFirst("lost")).toEqual({ closed: "revoked", created: "already_decided" });
    const res = await spendCall(key);
    expect(res.status).toBe(403);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/revoked/);
  });

  it("a dispute opened while Stripe cannot be asked answers 502 and records nothing; the redelivery freezes", async () => {
    const { key, pi } = await grantedKey();
    const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
    const created = (await emulatorEvents("charge.dispute.created")).find(
      (e) => e.data.object.id === dispute.id,
    );
    const down = await deliverWithStripeDown(created);
    expect(down.status).toBe(502);
    expect(await credits(key)).toMatchObject({ status: "active" });
    expect(await outcomeOf(await deliver(created))).toBe("frozen");
  });

  it("a lost dispute revokes what was left, for good", async () => {
    const { key, pi } = await grantedKey();
    const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
    const created = (await emulatorEvents("charge.dispute.created")).find(
      (e) => e.data.object.id === dispute.id,
    );
    await deliver(created);
    await emulatorPost(`/_emulator/disputes/${dispute.id}/close`, { status: "lost" });
    const closed = (await emulatorEvents("charge.dispute.closed")).find(
      (e) => e.data.object.id === dispute.id,
    );
    expect(await outcomeOf(await deliver(closed))).toBe("revoked");
    expect(await credits(key)).toMatchObject({ calls_left: 0, status: "revoked" });
    const res = await spendCall(key);
    expect(res.status).toBe(403);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/revoked/);
  });
});

describe("a refund or dispute that arrives before the grant", () => {
  /** A paid session nobody granted yet: the completed webhook failed, the buyer has not revealed. */
  const ungranted = async () => {
    const id = await seedSession("sha256", 170);
    expect((await keysFor(id)).results).toEqual([]);
    return { id, pi: (await remote(id)).payment_intent as string };
  };
  const lastEvent = async (type: string, pi: string) =>
    (await emulatorEvents(type)).filter((e) => e.data.object.payment_intent === pi).at(-1);
  // The success page offers no reveal of a refunded, charged-back or disputed pack
  // (test/pages/checkout-success-refund.test.ts); the form's token, sent anyway, still opens it.
  const reveal = async (id: string) =>
    keyIn(
      await (await revealPost(id, await revealToken(env.STRIPE_SECRET_KEY as string, id))).text(),
    ) as string;

  it("a full refund first: the event grants and revokes the pack; the late grant and the reveal hand out nothing", async () => {
    const { id, pi } = await ungranted();
    await emulatorPost("/v1/refunds", { payment_intent: pi });
    const refunded = await lastEvent("charge.refunded", pi);
    expect(await outcomeOf(await deliver(refunded))).toBe("refund_applied");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
      "already_granted",
    );
    expect(await outcomeOf(await deliver(refunded))).toBe("duplicate_event");
    // A key that holds no call and never will is not handed out (the success page says why).
    expect(await reveal(id)).toBeUndefined();
    expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
  });

  it("a partial refund first, with the Reveal POST as the late grant: the refunded share stays revoked", async () => {
    const { id, pi } = await ungranted();
    await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "17" });
    const refunded = await lastEvent("charge.refunded", pi);
    expect(await outcomeOf(await deliver(refunded))).toBe("refund_applied");
    const key = await reveal(id);
    expect(await credits(key)).toMatchObject({ calls_left: 113 });
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
      "already_granted",
    );
    expect((await keysFor(id)).results).toEqual([{ calls_left: 113, calls_total: 170 }]);
  });

  it("a refund racing the Reveal POST is applied once, whichever commits first", async () => {
    const { id, pi } = await ungranted();
    await emulatorPost("/v1/refunds", { payment_intent: pi });
    const refunded = await lastEvent("charge.refunded", pi);
    const token = (await revealTokenFromPage(id)) as string;
    const [hook, page] = await Promise.all([deliver(refunded), revealPost(id, token)]);
    expect(await outcomeOf(hook)).toBe("refund_applied");
    // Granted by the POST then refunded, the key was just shown; refunded first, it is withheld.
    const html = await page.text();
    expect(keyIn(html) !== undefined || html.includes('id="key-withheld"')).toBe(true);
    expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
  });

  it("a dispute opened first freezes the key the late grant hands out; one lost first revokes it", async () => {
    for (const decided of [undefined, "lost"] as const) {
      const { id, pi } = await ungranted();
      const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
      const created = await lastEvent("charge.dispute.created", pi);
      if (decided) {
        await emulatorPost(`/_emulator/disputes/${dispute.id}/close`, { status: decided });
        expect(await outcomeOf(await deliver(await lastEvent("charge.dispute.closed", pi)))).toBe("revoked");
        expect(await outcomeOf(await deliver(created))).toBe("already_decided");
      } else {
        expect(await outcomeOf(await deliver(created))).toBe("frozen");
      }
      expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
        "already_granted",
      );
      // Frozen or revoked, the key could make no call: the reveal holds it back.
      expect(await reveal(id)).toBeUndefined();
      const row = await env.DB.prepare(
        "SELECT k.calls_left, k.dispute_status FROM api_keys k JOIN checkout_sessions s ON s.api_key_id = k.id WHERE s.id = ?1",
      )
        .bind(id)
        .first();
      expect(row).toEqual(
        decided ? { calls_left: 0, dispute_status: "lost" } : { calls_left: 170, dispute_status: "open" },
      );
    }
  });

  it("Stripe unreachable: 502 and nothing recorded, so the redelivery applies the refund", async () => {
    const { id, pi } = await ungranted();
    await emulatorPost("/v1/refunds", { payment_intent: pi });
    const refunded = await lastEvent("charge.refunded", pi);
    expect((await deliverWithStripeDown(refunded)).status).toBe(502);
    expect((await keysFor(id)).results).toEqual([]);
    expect(await outcomeOf(await deliver(refunded))).toBe("refund_applied");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
  });
});

describe("a paid session missing from D1", () => {
  /** A session created on the emulator directly, as if our creation had never reached D1. */
  const emulatorSession = (
    unit_amount: number,
    name: string,
    success_url: string,
    metadata?: Record<string, string>,
  ) =>
    stripe.checkout.sessions.create({
      mode: "payment",
      line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount, product_data: { name } } }],
      success_url,
      ...(metadata ? { metadata } : {}),
    });
  /** Pays the session and delivers its completion event: what the webhook made of it. */
  const paidAndCompleted = async (id: string) => {
    await pay(id);
    return outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)));
  };

  it("is rebuilt from the session's metadata and granted, not dropped", async () => {
    const s = await emulatorSession(
      51,
      "170 calls",
      "https://skills.test/checkout/success?session_id={CHECKOUT_SESSION_ID}",
      {
        skill_id: "slugify",
        calls: "170",
      },
    );
    expect(await sessionRow(s.id)).toBeNull();
    expect(await paidAndCompleted(s.id)).toBe("granted");
    expect(await sessionRow(s.id)).toMatchObject({
      skill_id: "slugify",
      calls: 170,
      amount_cents: 51,
      status: "complete",
    });
    expect((await keysFor(s.id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
  });

  it("without our metadata it is acknowledged as unknown and grants nothing", async () => {
    const s = await emulatorSession(500, "not ours", "https://elsewhere.test/ok");
    expect(await paidAndCompleted(s.id)).toBe("unknown_session");
    expect(await sessionRow(s.id)).toBeNull();
  });
});

describe("Idempotency-Key on checkout creation", () => {
  const create = (body: unknown, key?: string) =>
    postJson("/api/cardpay/checkout", body, key === undefined ? {} : { "idempotency-key": key });

  it("a retried request with the same key gets the same session; without a key each is new", async () => {
    const key = crypto.randomUUID();
    const body = { skill_id: "sha256", payload: { text: "x" } };
    const [a, b] = await Promise.all([create(body, key), create(body, key)]);
    const ids = [
      (await a.json<{ session_id: string }>()).session_id,
      (await b.json<{ session_id: string }>()).session_id,
    ];
    expect(ids[0]).toBe(ids[1]);
    expect(
      (await env.DB.prepare("SELECT count(*) AS n FROM checkout_sessions WHERE id = ?1").bind(ids[0]).first())
        ?.n,
    ).toBe(1);
    const c = await (await create(body)).json<{ session_id: string }>();
    const d = await (await create(body)).json<{ session_id: string }>();
    expect(c.session_id).not.toBe(d.session_id);
  });

  it("the same key for a different checkout is 409; a malformed key is 422", async () => {
    const key = crypto.randomUUID();
    expect((await create({ skill_id: "sha256" }, key)).status).toBe(200);
    const other = await create({ skill_id: "sha256", payload: { text: "different" } }, key);
    expect(other.status).toBe(409);
    expect((await other.json<{ detail: string }>()).detail).toMatch(/Idempotency-Key/);
    const bad = await create({ skill_id: "sha256" }, "x".repeat(256));
    expect(bad.status).toBe(422);
    expect((await bad.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual([
      "header",
      "idempotency-key",
    ]);
  });
});

describe("the first call runs after the webhook's response", () => {
  it("the webhook answers before a slow first call finishes; the page shows it running, then its answer", async () => {
    // research against the fixture's slow page waits for the 1.5 s fetch timeout.
    const id = await seedSession("research", 34, { query: "upstream-slow" });
    const event = await signed(await sessionEvent("checkout.session.completed", id));
    const ctx = createExecutionContext();
    const started = Date.now();
    const res = await toWebhook(event, ctx);
    const answeredIn = Date.now() - started;
    expect(await res.json()).toMatchObject({ outcome: "granted" });
    expect((await sessionRow(id))?.payload_result).toBeNull();
    const running = await call(`/checkout/success?session_id=${id}`);
    expect(running.headers.get("refresh")).toBe("3");
    expect(await running.text()).toContain("Running…");
    await waitOnExecutionContext(ctx);
    const result = await firstCallResult(id);
    expect(result.status).not.toBe(200);
    expect(answeredIn).toBeLessThan(1500);
    const done = await call(`/checkout/success?session_id=${id}`);
    expect(done.headers.get("refresh")).toBeNull();
    expect(await done.text()).toContain("no credit was spent");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 34, calls_total: 34 }]);
  }, 30_000);

  it.each(FIRST_CALL_COSTS)(
    "with a late webhook, the Reveal POST grants from Stripe's state, runs the first call and shows both ($mode)",
    async ({ bindings, spent, ran }) => {
      const id = await seedSession("slugify", 170, { text: "Late Hook" });
      const page = await call(`/checkout/success?session_id=${id}`);
      const html = await page.text();
      expect(html).toContain("Payment received");
      expect(html).toContain("Reveal my key");
      // Showing the page granted nothing: only the POST may.
      expect((await keysFor(id)).results).toEqual([]);
      const token = (await revealTokenFromPage(id)) as string;
      const revealed = await (await revealPost(id, token, {}, bindings)).text();
      const key = keyIn(revealed) as string;
      expect(key).toBeTruthy();
      expect(revealed).toContain("late-hook");
      expect(revealed).toContain(ran);
      expect(revealed).toContain(`>${170 - spent}<`);
      const row = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE session_id = ?1")
        .bind(id)
        .first();
      expect(row?.key_hash).toBe(await hashKey(key));
      // The webhook arriving now changes nothing.
      expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
        "already_granted",
      );
    },
  );
});

describe("a first call whose run died", () => {
  it("is run once by the Reveal POST when its claim went stale, not while a live run holds it", async () => {
    const id = await seedSession("slugify", 170, { text: "Run Died" });
    // Granted by the late-webhook path, then the run is made to look claimed by a live isolate.
    const token = (await revealTokenFromPage(id)) as string;
    await env.DB.prepare("UPDATE checkout_sessions SET payload_started_at = ?2 WHERE id = ?1")
      .bind(id, Date.now())
      .run();
    await settleForTest(id);
    await env.DB.prepare("UPDATE checkout_sessions SET payload_started_at = ?2 WHERE id = ?1")
      .bind(id, Date.now())
      .run();
    const live = await (await revealPost(id, token, {}, cardEnv)).text();
    // The live claim is respected: after waiting, the page says it is still running; nothing spent.
    expect(live).toContain("Running…");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
    // Two minutes later the claim is stale: the next POST runs it, once.
    await env.DB.prepare("UPDATE checkout_sessions SET payload_started_at = ?2 WHERE id = ?1")
      .bind(id, Date.now() - 120_000)
      .run();
    // Payments on: run twice, it would take two credits.
    const [a, b] = await Promise.all([
      revealPost(id, token, {}, cardEnv),
      revealPost(id, token, {}, cardEnv),
    ]);
    const pages = [await a.text(), await b.text()];
    expect(pages.some((p) => p.includes("run-died"))).toBe(true);
    expect((await firstCallResult(id)).status).toBe(200);
    expect((await keysFor(id)).results).toEqual([{ calls_left: 169, calls_total: 170 }]);
  }, 30_000);
});

describe("the Reveal POST is CSRF-safe", () => {
  it("refuses a wrong token, another session's token, a cross-site post, and a missing token", async () => {
    const id = await seedSession("sha256", 170);
    await deliver(await sessionEvent("checkout.session.completed", id));
    const other = await seedSession("sha256", 170);
    const token = (await revealTokenFromPage(id)) as string;
    expect(token).toBe(await revealToken(env.STRIPE_SECRET_KEY as string, id));
    expect((await revealPost(id, "A".repeat(43))).status).toBe(403);
    expect((await revealPost(id, await revealToken(env.STRIPE_SECRET_KEY as string, other))).status).toBe(
      403,
    );
    expect((await revealPost(id, token, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await revealPost(id, token, { origin: "https://evil.test" })).status).toBe(403);
    const missing = await call(`/checkout/success?session_id=${id}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "",
    });
    expect(missing.status).toBe(422);
    // None of those burned it: the right token from the same site still reveals it once.
    const ok = await revealPost(id, token, {
      "sec-fetch-site": "same-origin",
      origin: "https://skills.test",
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    expect(ok.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(keyIn(await ok.text())).toBeTruthy();
  });
});
