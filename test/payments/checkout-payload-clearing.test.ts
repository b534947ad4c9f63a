import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cronRun } from "../fixtures/cron";
import {
  createCheckout,
  deliver,
  emulatorEvents,
  grant,
  outcomeOf,
  pay,
  seedSession,
  sessionEvent,
  sessionRow,
  stripe,
} from "./checkout-helpers";

/**
 * A checkout's first-call payload is no longer kept for ever once no payment can run it: the Cron
 * clears those of sessions never paid once Stripe can no longer complete them (24 h, its default
 * session lifetime, plus an hour), an expired or failed session's goes when Stripe says so, and a
 * paid session keeps its payload. Before, every payload stayed in D1 from the session's creation.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const payload = { text: "Crème Brûlée 🍮" };
const stored = JSON.stringify(payload);
const bytes = new TextEncoder().encode(stored).length;
const LEGACY = "cs_test_legacy_payload_";

afterEach(async () => {
  vi.restoreAllMocks();
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${LEGACY}%`).run();
});

async function runCron() {
  const { thrown, lines } = await cronRun();
  expect(thrown).toBe("");
  const line = lines.find((l) => l.includes('"pruned"'));
  return JSON.parse(line ?? "{}") as { pruned?: Record<string, { deleted: number; more: boolean }> };
}

/** Moves a session's creation (and what Stripe said of its payment) back in time. */
const age = (id: string, createdAgo: number, pendingAgo?: number) =>
  env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2, payment_pending_at = ?3 WHERE id = ?1")
    .bind(id, Date.now() - createdAgo, pendingAgo === undefined ? null : Date.now() - pendingAgo)
    .run();

const payloadOf = async (id: string) => {
  const row = await sessionRow(id);
  return { payload: row?.payload, payload_bytes: row?.payload_bytes };
};
const kept = { payload: stored, payload_bytes: bytes };
const cleared = { payload: null, payload_bytes: null };

describe("the Cron clears the payloads no payment can still run", () => {
  it("clears a session nothing records as paid 4 days after it was created, and keeps a fresh one, a paid one and one whose completed webhook is still retrying", {
    timeout: 60_000,
  }, async () => {
    const stale = await createCheckout("sha256", 170, payload);
    const late = await createCheckout("sha256", 170, payload);
    const fresh = await createCheckout("sha256", 170, payload);
    const paid = await seedSession("sha256", 170, payload);
    await grant(paid);
    const ranFirst = await sessionRow(paid);
    expect(await payloadOf(stale)).toEqual(kept);
    await age(stale, 4 * DAY + 60_000);
    // Paid at Stripe a day ago, its completed webhook not through yet (Stripe retries for 3 days).
    await pay(late);
    await age(late, 25 * HOUR);
    await age(paid, 30 * DAY);

    const { pruned } = await runCron();
    expect(pruned?.checkout_payloads?.deleted).toBeGreaterThanOrEqual(1);
    expect(await payloadOf(stale)).toEqual(cleared);
    expect(await sessionRow(stale)).toMatchObject({ status: "open", calls: 170, api_key_id: null });
    expect(await payloadOf(late)).toEqual(kept);
    expect(await payloadOf(fresh)).toEqual(kept);
    // The Cron's sweep asked Stripe and granted the pack (paid, no webhook through in a day); the
    // late webhook finds it granted, and its first call still had what to run.
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", late)))).toBe(
      "already_granted",
    );
    expect((await sessionRow(late))?.payload).toBe(stored);
    // A paid session keeps its payload: its first call runs from it and the success page reads it.
    expect((await sessionRow(paid))?.payload).toBe(ranFirst?.payload);
    expect((await sessionRow(paid))?.payload).toBe(stored);
  });

  it("keeps a session Stripe completed with its bank debit pending for 14 days, then clears it", async () => {
    const id = await createCheckout("sha256", 170, payload);
    await pay(id, "async_succeeded");
    const completed = (await emulatorEvents("checkout.session.completed"))
      .filter((e) => e.data.object.id === id)
      .at(-1);
    expect(await outcomeOf(await deliver(completed))).toBe("not_paid");
    const marked = (await sessionRow(id))?.payment_pending_at as number;
    expect(Date.now() - marked).toBeLessThan(60_000);

    await age(id, 10 * DAY, 10 * DAY - HOUR);
    await runCron();
    expect(await payloadOf(id)).toEqual(kept);
    await age(id, 15 * DAY, 14 * DAY + HOUR);
    await runCron();
    expect(await payloadOf(id)).toEqual(cleared);
  });

  it("measures payloads stored before migration 0015 (UTF-8 bytes), then clears the stale ones", async () => {
    const insert = (id: string, at: number, status = "open", failedAt: number | null = null) =>
      env.DB.prepare(
        `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, created_at, updated_at, payment_failed_at)
         VALUES (?1, 'sha256', 170, 51, ?4, ?2, ?3, ?3, ?5)`,
      )
        .bind(id, stored, at, status, failedAt)
        .run();
    await insert(`${LEGACY}fresh`, Date.now());
    // That version marked no debit pending: a legacy row gets the pending grace from its creation.
    await insert(`${LEGACY}pending`, Date.now() - 5 * DAY);
    await insert(`${LEGACY}stale`, Date.now() - 15 * DAY);
    // Unless that version had seen it expire, or its payment fail: nothing can pay it any more.
    await insert(`${LEGACY}expired`, Date.now() - 5 * DAY, "expired");
    await insert(`${LEGACY}failed`, Date.now() - 5 * DAY, "open", Date.now() - 4 * DAY);
    expect(await payloadOf(`${LEGACY}fresh`)).toEqual({ payload: stored, payload_bytes: null });

    const first = await runCron();
    expect(first.pruned?.checkout_payloads_measured?.deleted).toBeGreaterThanOrEqual(2);
    expect(await payloadOf(`${LEGACY}fresh`)).toEqual(kept);
    await runCron();
    expect(await payloadOf(`${LEGACY}fresh`)).toEqual(kept);
    expect(await payloadOf(`${LEGACY}pending`)).toEqual(kept);
    expect(await payloadOf(`${LEGACY}stale`)).toEqual(cleared);
    expect(await payloadOf(`${LEGACY}expired`)).toEqual(cleared);
    expect(await payloadOf(`${LEGACY}failed`)).toEqual(cleared);
  });
});

describe("a session that can no longer be paid drops its payload when Stripe says so", () => {
  it("expired: the webhook that marks it clears it", async () => {
    const id = await createCheckout("sha256", 170, payload);
    await stripe.checkout.sessions.expire(id);
    const expired = (await emulatorEvents("checkout.session.expired")).find((e) => e.data.object.id === id);
    expect(await outcomeOf(await deliver(expired))).toBe("expired");
    expect(await sessionRow(id)).toMatchObject({ status: "expired", ...cleared });
  });

  it("a delayed payment that failed: the webhook that marks it clears it", async () => {
    const id = await createCheckout("sha256", 170, payload);
    await pay(id, "async_failed");
    const failed = (await emulatorEvents("checkout.session.async_payment_failed")).find(
      (e) => e.data.object.id === id,
    );
    expect(await outcomeOf(await deliver(failed))).toBe("payment_failed");
    expect(await sessionRow(id)).toMatchObject({ payment_failed_at: expect.any(Number), ...cleared });
  });

  it("a completed, paid session keeps it whatever event comes after", async () => {
    const id = await seedSession("sha256", 170, payload);
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
      "granted",
    );
    expect((await sessionRow(id))?.payload).toBe(stored);
  });
});
