import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { recountPayloadTotal } from "../../src/payments/checkout-payload-total";
import { expiredUnpaidSessions } from "../../src/payments/checkout-sessions";
import { cronRun, preparedSql } from "../fixtures/cron";
import { call } from "../helpers";
import { checkoutSeeingStripe, emulatorPost, sessionRow } from "../payments/checkout-helpers";

// The rows of checkout sessions that never granted a key: kept for ever before, a few hundred bytes
// each, bounded only by the checkout rate limit. Now the Cron deletes them 30 days after their
// creation (Stripe expired them at 24 h); a granted session is the money ledger and stays.
const DAY = 86_400_000;
// The documented retention, written out: it must not depend on the code under test.
const RETENTION_DAYS = 30;
const PROBE = "cs_test_retention_";
// The documented cap on unpaid payloads (payments/checkout-sessions.ts), for the retry below.
const CAP = 256 * 1024 * 1024;

afterEach(async () => {
  vi.restoreAllMocks();
  await env.DB.prepare("DELETE FROM api_keys WHERE id LIKE ?1").bind(`${PROBE}%`).run();
  await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${PROBE}%`).run();
});

interface Row {
  ageDays: number;
  status?: "open" | "complete" | "expired";
  granted?: boolean;
  pendingAt?: number;
  failedAt?: number;
  payload?: string;
  /** When the Cron's sweep last asked Stripe about it (migration 0019). */
  checkedAt?: number;
}

/** A session's row as the checkout, the webhook and the Cron leave it, created `ageDays` ago. */
async function session(name: string, r: Row) {
  const id = `${PROBE}${name}`;
  const created = Date.now() - r.ageDays * DAY;
  const keyId = r.granted ? `${PROBE}key_${name}` : null;
  if (keyId) {
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at) VALUES (?1, ?2, 'sha256', 170, 170, NULL, ?3)",
    )
      .bind(keyId, `h-${keyId}`, created)
      .run();
  }
  await env.DB.prepare(
    `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, api_key_id,
       payment_pending_at, payment_failed_at, checked_at, created_at, updated_at)
     VALUES (?1, 'sha256', 170, 51, ?2, ?3, ?4, ?5, ?6, ?7, ?9, ?8, ?8)`,
  )
    .bind(
      id,
      r.status ?? "open",
      r.payload ?? null,
      r.payload === undefined ? null : r.payload.length,
      keyId,
      r.pendingAt ?? null,
      r.failedAt ?? null,
      created,
      r.checkedAt ?? null,
    )
    .run();
  return id;
}

const kept = async () =>
  (
    await env.DB.prepare("SELECT id FROM checkout_sessions WHERE id LIKE ?1 ORDER BY id")
      .bind(`${PROBE}%`)
      .all<{ id: string }>()
  ).results.map((r) => r.id.slice(PROBE.length));

async function runCron() {
  const { thrown, lines } = await cronRun();
  expect(thrown).toBe("");
  return lines.join("\n");
}

describe("the Cron deletes the rows of checkouts Stripe ended unpaid, 30 days after their creation", () => {
  it("deletes an old session Stripe ended unpaid (expired, or its payment failed); keeps a young one, any paid one, one Stripe has not told us ended (still open) and one whose payment may still clear", async () => {
    const old = RETENTION_DAYS + 1;
    await session("old_expired", { ageDays: old, status: "expired" });
    // Stripe never told us its end: it may have been paid with every completed event lost. Only
    // ended sessions are deleted; this one the Cron's sweep asked Stripe about a minute ago (still
    // open there, so not asked again this run), and it stays until the sweep hears it ended (it is
    // then granted, or marked expired and deleted 30 days after its creation).
    await session("old_never_marked", { ageDays: old, checkedAt: Date.now() - 60_000 });
    await session("old_debit_failed", {
      ageDays: old,
      pendingAt: Date.now() - 30 * DAY,
      failedAt: Date.now(),
    });
    await session("young", { ageDays: RETENTION_DAYS - 1, status: "expired" });
    // Paid: credits, refunds and disputes read it, however old.
    await session("old_paid", { ageDays: 400, status: "complete", granted: true });
    // Completed by Stripe with a bank debit still clearing and no word since: it may have been paid.
    await session("old_debit_pending", { ageDays: old, pendingAt: Date.now() - 30 * DAY });

    const log = await runCron();
    expect(await kept()).toEqual(["old_debit_pending", "old_never_marked", "old_paid", "young"]);
    expect(log).toMatch(/"checkout_sessions":\{"deleted":[2-9]\d*,"more":false\}/);
    // The paid session's key still names it.
    expect(
      await env.DB.prepare(
        "SELECT 1 AS n FROM checkout_sessions s JOIN api_keys k ON k.id = s.api_key_id WHERE s.id = ?1",
      )
        .bind(`${PROBE}old_paid`)
        .first("n"),
    ).toBe(1);
  });

  it("never deletes a row still holding its payload (the payload goes first), and finds its rows through the index alone", async () => {
    await session("old_payload", { ageDays: RETENTION_DAYS + 1, payload: '{"text":"a"}' });
    expect((await expiredUnpaidSessions(env.DB, Date.now(), 1000).run()).meta.changes).toBe(0);
    expect(await kept()).toEqual(["old_payload"]);
    // The statement's own subquery, as the Cron sends it.
    const statement = preparedSql((db) => expiredUnpaidSessions(db, 0, 1));
    const sql = /SELECT rowid FROM checkout_sessions[\s\S]*?LIMIT \?2/.exec(statement)?.[0];
    expect(sql).toBeDefined();
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(Date.now(), 1000)
      .all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toEqual([
      "SEARCH checkout_sessions USING COVERING INDEX checkout_sessions_unpaid_ended (created_at<?)",
      "CORRELATED SCALAR SUBQUERY 1",
      expect.stringMatching(
        /^SEARCH api_keys USING COVERING INDEX sqlite_autoindex_api_keys_\d+ \(session_id=\?\)$/,
      ),
    ]);
  });

  it("a deleted session's page is an unknown checkout's, and a retry under its Idempotency-Key is a new checkout: checked for room before Stripe, then recorded anew", async () => {
    const payload = { text: "retry after retention" };
    const body = JSON.stringify({ skill_id: "sha256", payload });
    const key = { "idempotency-key": crypto.randomUUID() };
    const sold = await checkoutSeeingStripe(body, key);
    expect(sold.res.status).toBe(200);
    const id = (await sold.res.json<{ session_id: string }>()).session_id;
    // Its life: never paid, expired by Stripe (the webhook cleared its payload), 31 days ago.
    await env.DB.prepare(
      "UPDATE checkout_sessions SET status = 'expired', payload = NULL, payload_bytes = NULL, created_at = ?2 WHERE id = ?1",
    )
      .bind(id, Date.now() - (RETENTION_DAYS + 1) * DAY)
      .run();
    await runCron();
    expect(await sessionRow(id)).toBeNull();
    const page = await call(`/checkout/success?session_id=${id}`);
    expect(page.status).toBe(404);
    expect(await page.text()).toContain("We do not know this checkout");

    // Its key no longer names a recorded session: under a full cap the retry is refused before
    // Stripe like any new checkout with a payload (Stripe forgot the key after 24 h: a replay of the
    // old session would never be paid, and a new one would be given to nobody).
    const held =
      (await env.DB.prepare(
        "SELECT coalesce(sum(payload_bytes), 0) AS n FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL",
      ).first<number>("n")) ?? 0;
    await session("full", { ageDays: 0, payload: "{}" });
    await env.DB.prepare("UPDATE checkout_sessions SET payload_bytes = ?2 WHERE id = ?1")
      .bind(`${PROBE}full`, CAP - held)
      .run();
    // Written here as no writer of the Worker would: counted as the Cron's next run counts.
    await recountPayloadTotal(env.DB);
    const refused = await checkoutSeeingStripe(body, key);
    expect(refused.res.status).toBe(503);
    expect(await refused.res.json()).toMatchObject({ reason: "unpaid_payloads_full" });
    expect(refused.sent).toEqual([]);

    // With room, and the key forgotten by Stripe (24 h on), it is sold as a new checkout: a new
    // session, a row of today, which the Cron keeps 30 days.
    await env.DB.prepare("DELETE FROM checkout_sessions WHERE id = ?1").bind(`${PROBE}full`).run();
    await recountPayloadTotal(env.DB);
    expect(await emulatorPost("/_emulator/forget-idempotency", { session: id })).toEqual({ forgotten: 1 });
    const again = await checkoutSeeingStripe(body, key);
    expect(again.res.status).toBe(200);
    const retried = (await again.res.json<{ session_id: string }>()).session_id;
    expect(retried).not.toBe(id);
    const row = await sessionRow(retried);
    expect(row).toMatchObject({ status: "open", payload: JSON.stringify(payload), api_key_id: null });
    expect(Date.now() - Number(row?.created_at)).toBeLessThan(60_000);
    await env.DB.prepare("DELETE FROM checkout_sessions WHERE id = ?1").bind(retried).run();
  });
});
