import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { runFirstPayload } from "../../src/payments/checkout-first-call";
import { call } from "../helpers";
import {
  emulatorEvents,
  emulatorPost,
  FIRST_CALL_COSTS,
  firstCallResult,
  keyIn,
  keysFor,
  outcomeOf,
  remote,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
  sessionRow,
  signed,
  successPage,
} from "./checkout-helpers";

// A refund or dispute event can grant the pack it takes from (the completed webhook was late). The
// pack's first call (the request the buyer typed before paying) must not run while the pack can
// make no call: its 402 was stored for good, and after a dispute won the paid call showed as failed.

/** A paid slugify session with a first call, not granted yet (the completed webhook is late). */
async function ungranted() {
  const id = await seedSession("slugify", 170, { text: "First Call!" });
  expect((await keysFor(id)).results).toEqual([]);
  return { id, pi: (await remote(id)).payment_intent as string };
}

const lastEvent = async (type: string, pi: string) =>
  (await emulatorEvents(type)).filter((e) => e.data.object.payment_intent === pi).at(-1);

/**
 * Delivers an event through the Worker (with `bindings`: FREE_BETA on or off): its outcome, and its
 * work after the answer (the first call).
 */
async function deliverThroughWorker(event: unknown, bindings: object = env) {
  const { payload, header } = await signed(event);
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request("https://skills.test/api/cardpay/webhook", {
      method: "POST",
      headers: { "stripe-signature": header },
      body: payload,
    }),
    bindings as typeof env,
    ctx,
  );
  return { outcome: await outcomeOf(res), after: () => waitOnExecutionContext(ctx) };
}

/** Delivers an event through the Worker and waits for its work after the answer. */
async function deliverAndWait(event: unknown, bindings?: object) {
  const { outcome, after } = await deliverThroughWorker(event, bindings);
  await after();
  return outcome;
}

const firstCallText = async (id: string) =>
  /<p id="first-call"[^>]*>([^<]*)<\/p>/.exec(
    await (await call(`/checkout/success?session_id=${id}`)).text(),
  )?.[1];

/** Opens a dispute on the payment and delivers its `created`: the late grant's key is frozen. */
async function frozenBeforeGrant(bindings?: object) {
  const { id, pi } = await ungranted();
  const dispute = await emulatorPost("/_emulator/disputes", { payment_intent: pi });
  expect(await deliverAndWait(await lastEvent("charge.dispute.created", pi), bindings)).toBe("frozen");
  return { id, pi, disputeId: dispute.id as string };
}

// Each runs with payments on (the first call takes a credit, `spent`) and in free beta (none).
describe.each(FIRST_CALL_COSTS)(
  "the first call of a pack granted by a refund or dispute event ($mode)",
  ({ bindings, spent, ran }) => {
    it("disputed: not run and nothing stored; the dispute won runs it, once, with its credit (none in free beta)", async () => {
      const { id, pi, disputeId } = await frozenBeforeGrant(bindings);
      // Before, the skill ran on the frozen key and its 402 was stored as the first call's answer.
      expect(await sessionRow(id)).toMatchObject({ payload_result: null, payload_started_at: 0 });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
      expect(await firstCallText(id)).toBe("Not run: the payment is disputed.");

      await emulatorPost(`/_emulator/disputes/${disputeId}/close`, { status: "won" });
      expect(await deliverAndWait(await lastEvent("charge.dispute.closed", pi), bindings)).toBe("restored");
      expect(await firstCallResult(id, 0)).toMatchObject({ status: 200, body: { slug: "first-call" } });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170 - spent, calls_total: 170 }]);

      // The key's reveal shows that answer; the call does not run a second time.
      const token = (await revealTokenFromPage(id)) as string;
      const html = await (await revealPost(id, token, {}, bindings)).text();
      expect(keyIn(html)).toMatch(/^mk_/);
      expect(html).toContain(ran);
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170 - spent, calls_total: 170 }]);
      expect(await successPage(id, bindings)).toContain(ran);
      // What the page says of the credit follows what the run did, not the flag when it is shown.
      const otherMode = FIRST_CALL_COSTS.find((m) => m.bindings !== bindings)?.bindings as object;
      expect(await successPage(id, otherMode)).toContain(ran);
    });

    it("the dispute won's webhook and the Reveal POST both start it: it runs once", async () => {
      const { id, pi, disputeId } = await frozenBeforeGrant(bindings);
      await emulatorPost(`/_emulator/disputes/${disputeId}/close`, { status: "won" });
      // The webhook's run starts after its answer; the buyer's Reveal POST comes while it may run.
      const { outcome, after } = await deliverThroughWorker(
        await lastEvent("charge.dispute.closed", pi),
        bindings,
      );
      expect(outcome).toBe("restored");
      const page = await revealPost(id, (await revealTokenFromPage(id)) as string, {}, bindings);
      await after();
      expect(keyIn(await page.text())).toMatch(/^mk_/);
      expect(await firstCallResult(id)).toMatchObject({ status: 200, body: { slug: "first-call" } });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170 - spent, calls_total: 170 }]);
    });

    it("a dispute lost: never run, and the page says why", async () => {
      const { id, pi, disputeId } = await frozenBeforeGrant(bindings);
      await emulatorPost(`/_emulator/disputes/${disputeId}/close`, { status: "lost" });
      expect(await deliverAndWait(await lastEvent("charge.dispute.closed", pi), bindings)).toBe("revoked");
      expect(await sessionRow(id)).toMatchObject({ payload_result: null, payload_started_at: 0 });
      expect(await firstCallText(id)).toBe("Not run: the payment was charged back.");
    });

    it("fully refunded: not run (no upstream cost, no 402 stored), and the page says why", async () => {
      const { id, pi } = await ungranted();
      await emulatorPost("/v1/refunds", { payment_intent: pi });
      expect(await deliverAndWait(await lastEvent("charge.refunded", pi), bindings)).toBe("refund_applied");
      expect(await sessionRow(id)).toMatchObject({ payload_result: null, payload_started_at: 0 });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 0, calls_total: 170 }]);
      expect(await firstCallText(id)).toBe("Not run: the payment was refunded.");
      // The completed webhook, late, finds the session granted and runs nothing either.
      expect(await deliverAndWait(await sessionEvent("checkout.session.completed", id), bindings)).toBe(
        "already_granted",
      );
      expect((await sessionRow(id))?.payload_result).toBeNull();
    });

    it("partly refunded: the pack can still call, so its first call runs with a credit (none in free beta)", async () => {
      const { id, pi } = await ungranted();
      await emulatorPost("/v1/refunds", { payment_intent: pi, amount: "17" });
      expect(await deliverAndWait(await lastEvent("charge.refunded", pi), bindings)).toBe("refund_applied");
      expect(await firstCallResult(id, 0)).toMatchObject({ status: 200, body: { slug: "first-call" } });
      // 57 of 170 refunded (a third, rounded up), then the first call's credit.
      expect((await keysFor(id)).results).toEqual([{ calls_left: 113 - spent, calls_total: 170 }]);
    });
  },
);

describe.each(FIRST_CALL_COSTS)(
  "a dispute opened while the first call runs ($mode)",
  ({ bindings, spent }) => {
    it("holds the answer back without storing a 402: the call runs again once the dispute is won", async () => {
      const id = await seedSession("slugify", 170, { text: "Mid Run" });
      expect(await deliverAndWait(await sessionEvent("checkout.session.completed", id), bindings)).toBe(
        "granted",
      );
      // Ran once already: put it back to run, and open a dispute right after the run claims it.
      await env.DB.prepare(
        "UPDATE checkout_sessions SET payload_result = NULL, payload_started_at = NULL WHERE id = ?1",
      )
        .bind(id)
        .run();
      await env.DB.prepare("UPDATE api_keys SET calls_left = 170 WHERE session_id = ?1").bind(id).run();
      const dispute = (open: boolean) =>
        env.DB.prepare("UPDATE api_keys SET dispute_status = ?2 WHERE session_id = ?1")
          .bind(id, open ? "open" : null)
          .run();
      const db = new Proxy(env.DB, {
        get(target, prop) {
          if (prop !== "prepare") {
            const value = Reflect.get(target, prop);
            return typeof value === "function" ? value.bind(target) : value;
          }
          return (sql: string) => {
            const stmt = target.prepare(sql);
            if (!sql.includes("RETURNING skill_id, payload")) return stmt; // the claim
            return {
              bind: (...args: unknown[]) => {
                const bound = stmt.bind(...args);
                return {
                  first: async () => {
                    const claimed = await bound.first();
                    await dispute(true);
                    return claimed;
                  },
                };
              },
            };
          };
        },
      });
      await runFirstPayload({ ...bindings, DB: db }, id);
      expect(await sessionRow(id)).toMatchObject({ payload_result: null, payload_started_at: 0 });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
      expect(await firstCallText(id)).toBe("Not run: the payment is disputed.");

      await dispute(false);
      await runFirstPayload(bindings, id);
      expect(await firstCallResult(id, 0)).toMatchObject({ status: 200, body: { slug: "mid-run" } });
      expect((await keysFor(id)).results).toEqual([{ calls_left: 170 - spent, calls_total: 170 }]);
    });
  },
);
