import { env } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { recountPayloadTotal } from "../../src/payments/checkout-payload-total";
import { recordSession, UNPAID_PAYLOADS_MAX_BYTES } from "../../src/payments/checkout-sessions";
import { postJson } from "../helpers";
import { checkoutSeeingStripe, sessionRow } from "./checkout-helpers";

/**
 * What checkouts nobody paid may hold in D1. A session costs its creator nothing, and its
 * first-call payload (up to 1 MiB) was stored at creation and never cleared: 20 a minute from one
 * IPv6 /64 filled D1's 10 GB in about 8 hours, and a full D1 refuses every x402 claim. Now unpaid
 * sessions' payloads are capped together (256 MiB), a checkout past it is a 503 before Stripe is
 * asked, and one without a payload is still sold.
 */
// The documented bound, written out: it must not depend on the code under test.
const CAP = 256 * 1024 * 1024;
const PROBE = "cs_test_unpaid_probe_";

/** What unpaid sessions hold now, summed as the cap sums it. */
const held = async () =>
  (await env.DB.prepare(
    "SELECT coalesce(sum(payload_bytes), 0) AS n FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL",
  ).first<number>("n")) ?? 0;

/**
 * An unpaid session's row that says it holds `bytes` (its payload itself is one character: the
 * cap reads the recorded size, never the payload), so a test fills the cap without 256 MiB. Written
 * as a previous version would (the running total does not move), then counted as the Cron counts.
 */
async function holding(bytes: number) {
  await env.DB.prepare(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, created_at, updated_at)
     VALUES (?1, 'sha256', 170, 51, 'open', '{}', ?2, ?3, ?3)`,
  )
    .bind(`${PROBE}${crypto.randomUUID()}`, bytes, Date.now())
    .run();
  await recountPayloadTotal(env.DB);
}

/** Leaves exactly `room` bytes under the cap. */
const leaveRoom = async (room: number) => holding(CAP - room - (await held()));

/** The probes gone, and the total counted again (as the Cron's next run would). */
const dropProbes = async () => {
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${PROBE}%`).run();
  await recountPayloadTotal(env.DB);
};

afterEach(dropProbes);

const checkout = (body: unknown, headers: Record<string, string> = {}) =>
  postJson("/api/cardpay/checkout", body, headers);

describe("the cap on what unpaid checkouts hold", () => {
  it("is 256 MiB; the Cron's recount of the running total sums the recorded sizes through the index alone", async () => {
    expect(UNPAID_PAYLOADS_MAX_BYTES).toBe(CAP);
    const plan = await env.DB.prepare(
      "EXPLAIN QUERY PLAN SELECT coalesce(sum(payload_bytes), 0) FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL",
    ).all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toEqual([
      "SCAN checkout_sessions USING COVERING INDEX checkout_sessions_unpaid_payload",
    ]);
  });

  it("refuses a payload past it with a 503 before Stripe is asked, and still sells a checkout without one", async () => {
    const payload = { text: "x".repeat(100) };
    const bytes = JSON.stringify(payload).length;
    await leaveRoom(bytes - 1);
    const refused = await checkoutSeeingStripe(JSON.stringify({ skill_id: "sha256", payload }));
    expect(refused.res.status).toBe(503);
    expect(refused.res.headers.get("retry-after")).toBe("900");
    expect(await refused.res.json()).toEqual({
      detail: `Checkouts not yet paid hold all the first-call payloads we keep (${CAP} bytes). Buy without a payload and make the first call with the key, or retry later. Nothing was charged.`,
      reason: "unpaid_payloads_full",
    });
    expect(refused.sent).toEqual([]);

    // The same purchase without its payload is sold.
    const bare = await checkoutSeeingStripe(JSON.stringify({ skill_id: "sha256" }));
    expect(bare.res.status).toBe(200);
    expect(bare.sent).toEqual(["POST /v1/checkout/sessions"]);
    const id = (await bare.res.json<{ session_id: string }>()).session_id;
    expect(await sessionRow(id)).toMatchObject({ payload: null, payload_bytes: null });

    // A payload that fits the room left is sold, exactly up to the cap.
    const fits = await checkout({ skill_id: "sha256", payload: { text: "x".repeat(99) } });
    expect(fits.status).toBe(200);
    expect(await held()).toBe(CAP);
    expect((await checkout({ skill_id: "sha256", payload: { text: "" } })).status).toBe(503);
  });

  it("concurrent checkouts past the check are refused by the INSERT itself; the session is left unreturned and a retry records it", async () => {
    // The check before Stripe sees room (as two checkouts at once both can); the INSERT does not.
    const seesRoom = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare")
          return (sql: string) =>
            target.prepare(/^SELECT bytes FROM checkout_payload_total/.test(sql) ? "SELECT 0 AS bytes" : sql);
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const payload = { text: "x".repeat(100) };
    await leaveRoom(50);
    const idem = { "idempotency-key": crypto.randomUUID() };
    const send = (e: object) =>
      createApp().fetch(
        new Request("https://skills.test/api/cardpay/checkout", {
          method: "POST",
          headers: { "content-type": "application/json", ...idem },
          body: JSON.stringify({ skill_id: "sha256", payload }),
        }),
        e,
      );
    const before = await env.DB.prepare("SELECT count(*) AS n FROM checkout_sessions").first<number>("n");
    const refused = await send({ ...env, DB: seesRoom });
    expect(refused.status).toBe(503);
    expect((await refused.json<{ reason: string }>()).reason).toBe("unpaid_payloads_full");
    expect(await env.DB.prepare("SELECT count(*) AS n FROM checkout_sessions").first<number>("n")).toBe(
      before,
    );
    // Room again (the probe gone): the same key gets the session Stripe made, recorded once.
    await dropProbes();
    const retried = await send(env);
    expect(retried.status).toBe(200);
    const id = (await retried.json<{ session_id: string }>()).session_id;
    expect(await sessionRow(id)).toMatchObject({ payload: JSON.stringify(payload), payload_bytes: 111 });
    // A session already recorded (a replay that passed the check) is recorded, even with the cap full.
    await leaveRoom(0);
    // So the buyer's retry under the same key gets its session back (its bytes are in the sum already).
    const again = await send(env);
    expect(again.status).toBe(200);
    expect((await again.json<{ session_id: string }>()).session_id).toBe(id);
    expect(await recordSession(env.DB, { id, skillId: "sha256", calls: 170, amountCents: 51, payload })).toBe(
      true,
    );
    expect(
      await recordSession(env.DB, {
        id: `${PROBE}new`,
        skillId: "sha256",
        calls: 170,
        amountCents: 51,
        payload,
      }),
    ).toBe(false);
    expect(await sessionRow(`${PROBE}new`)).toBeNull();
  });

  it("a checkout under an Idempotency-Key is checked before Stripe too: under a full cap no session is made; a retry of the session its key recorded still gets it", async () => {
    const payload = { text: "y".repeat(100) };
    const body = JSON.stringify({ skill_id: "sha256", payload });
    const key = { "idempotency-key": crypto.randomUUID() };
    const sessionsNow = async () =>
      (await env.DB.prepare("SELECT count(*) AS n FROM checkout_sessions").first<number>("n")) ?? 0;
    const before = await sessionsNow();
    await leaveRoom(JSON.stringify(payload).length - 1);
    // Before, a keyed checkout skipped the check: Stripe made a session, the INSERT refused it, and
    // the buyer got this 503 for a session nobody was given.
    const refused = await checkoutSeeingStripe(body, key);
    expect(refused.res.status).toBe(503);
    expect(refused.res.headers.get("retry-after")).toBe("900");
    expect(await refused.res.json()).toMatchObject({ reason: "unpaid_payloads_full" });
    expect(refused.sent).toEqual([]);
    expect(await sessionsNow()).toBe(before + 1); // the probe's row only

    // Room again: the same key gets its session, recorded once.
    await dropProbes();
    const sold = await checkoutSeeingStripe(body, key);
    expect(sold.res.status).toBe(200);
    expect(sold.sent).toEqual(["POST /v1/checkout/sessions"]);
    const id = (await sold.res.json<{ session_id: string }>()).session_id;

    // Full again: the key's retry is of that session (its bytes in the sum already), so it gets it
    // back as Stripe replays it, and no other session is made or recorded.
    await leaveRoom(0);
    const again = await checkoutSeeingStripe(body, key);
    expect(again.res.status).toBe(200);
    expect((await again.res.json<{ session_id: string }>()).session_id).toBe(id);
    expect(await sessionsNow()).toBe(before + 2);
    // The same key with another body is another checkout: refused before Stripe, not a 409 after.
    const other = await checkoutSeeingStripe(
      JSON.stringify({ skill_id: "sha256", payload: { text: "z" } }),
      key,
    );
    expect(other.res.status).toBe(503);
    expect(other.sent).toEqual([]);
    // Where the key's record is not readable (KV not there yet), the retry is checked like a new
    // checkout: a 503 to retry later, still no session made.
    const remembered = (await env.KV.list({ prefix: "checkout-keyed:" })).keys.map((k) => k.name);
    for (const name of remembered) {
      if ((await env.KV.get(name)) === id) await env.KV.delete(name);
    }
    const unknown = await checkoutSeeingStripe(body, key);
    expect(unknown.res.status).toBe(503);
    expect(unknown.sent).toEqual([]);
  });

  it("counts a payload's UTF-8 bytes as D1 stores them, not its characters", async () => {
    const payload = { text: "Crème Brûlée, 寿司 and 🍮" };
    const res = await checkout({ skill_id: "sha256", payload });
    expect(res.status).toBe(200);
    const id = (await res.json<{ session_id: string }>()).session_id;
    const text = JSON.stringify(payload);
    // 2 bytes for è, û and é, 3 for each kanji, 4 for the emoji (two UTF-16 units).
    expect(text.length).toBe(34);
    const row = await env.DB.prepare(
      "SELECT payload_bytes, length(CAST(payload AS BLOB)) AS stored FROM checkout_sessions WHERE id = ?1",
    )
      .bind(id)
      .first<{ payload_bytes: number; stored: number }>();
    expect(row).toEqual({ payload_bytes: 43, stored: 43 });
  });
});
