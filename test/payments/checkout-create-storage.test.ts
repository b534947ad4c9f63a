import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type FaultPlan, faultEnv } from "../fixtures/storage-faults";
import { callIn, cardEnv, sessionRow } from "./checkout-helpers";

// A card checkout D1 fails (the unpaid payloads' total read before Stripe, the session's recording
// after it): a 503 that says to send it again, never a bare 500, and the resend is sold.
const TOTAL_READ = /SELECT bytes FROM checkout_payload_total/;
const RECORD = /INSERT INTO checkout_sessions/;
/** `{"count":1}` as stored. */
const PAYLOAD_BYTES = 11;
const held = async () =>
  (await env.DB.prepare("SELECT bytes FROM checkout_payload_total WHERE id = 1").first<number>("bytes")) ?? 0;

/** A checkout with a first-call payload under `key`, D1 failing as `plan` says. */
async function checkout(key: string, plan: FaultPlan = {}) {
  const { env: faulty } = faultEnv(cardEnv, plan);
  const { res, after } = await callIn(faulty, "/api/cardpay/checkout", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ skill_id: "uuid_mint", quantity: 20, payload: { count: 1 } }),
  });
  await after();
  return res;
}

async function expectRetryLater(res: Response) {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("10");
  const body = await res.json<{ reason: string; detail: string }>();
  expect(body.reason).toBe("checkout_unavailable");
  expect(body.detail).toMatch(/Nothing was charged/);
}

const sessionOf = async (res: Response) => {
  expect(res.status).toBe(200);
  return (await res.json<{ session_id: string }>()).session_id;
};

describe("a checkout D1 fails", () => {
  it("reading what unpaid payloads hold: 503 with Retry-After, and the resend is sold", async () => {
    const key = crypto.randomUUID();
    await expectRetryLater(await checkout(key, { db: { n: 1, mode: "throw", match: TOTAL_READ } }));
    expect(await sessionRow(await sessionOf(await checkout(key)))).toMatchObject({ status: "open" });
  });

  it("recording the session: 503, and the resend under the same key records Stripe's same session", async () => {
    const key = crypto.randomUUID();
    await expectRetryLater(await checkout(key, { db: { n: 1, mode: "throw", match: RECORD } }));
    const id = await sessionOf(await checkout(key));
    expect(await sessionRow(id)).toMatchObject({ status: "open", payload: '{"count":1}' });
  });

  it("recording the session, committed before the error: the resend gets that session, recorded once", async () => {
    const key = crypto.randomUUID();
    const before = await held();
    await expectRetryLater(await checkout(key, { db: { n: 1, mode: "after", match: RECORD } }));
    const id = await sessionOf(await checkout(key));
    expect(await sessionRow(id)).toMatchObject({ status: "open", payload_bytes: PAYLOAD_BYTES });
    // Its payload counted against the cap once, not once per try.
    expect((await held()) - before).toBe(PAYLOAD_BYTES);
  });
});

describe("a keyed checkout whose recording D1 committed before its error, with the cap then full", () => {
  // The documented bound, written out (checkout-unpaid-payloads.test.ts).
  const CAP = 256 * 1024 * 1024;
  const setHeld = (bytes: number) =>
    env.DB.prepare("UPDATE checkout_payload_total SET bytes = ?1 WHERE id = 1").bind(bytes).run();

  it("the resend under the same key is not refused by its own bytes: it gets that session", async () => {
    const before = await held();
    // Room for this payload and nothing more: the committed batch fills the cap.
    await setHeld(CAP - PAYLOAD_BYTES);
    try {
      const key = crypto.randomUUID();
      await expectRetryLater(await checkout(key, { db: { n: 1, mode: "after", match: RECORD } }));
      expect(await held()).toBe(CAP);
      const id = await sessionOf(await checkout(key));
      expect(await sessionRow(id)).toMatchObject({ status: "open", payload_bytes: PAYLOAD_BYTES });
      expect(await held()).toBe(CAP);
    } finally {
      await setHeld(before);
    }
  });
});
