import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { expiredEvents } from "../../src/payments/webhook-events";
import { cronRun, preparedSql } from "../fixtures/cron";
import { deliver, keysFor, outcomeOf, seedSession, sessionEvent } from "../payments/checkout-helpers";

// The ids of handled Stripe events (webhook_events): kept for ever before, one row for every
// checkout created (its expired event, when nobody paid). Now the Cron deletes them 35 days after
// their receipt, well past Stripe's 3 days of redelivery and the 30 days it lists events for.
const DAY = 86_400_000;
// The documented retention, written out: it must not depend on the code under test.
const RETENTION_DAYS = 35;
const PROBE = "evt_retention_probe_";

afterEach(async () => {
  vi.restoreAllMocks();
  await env.DB.prepare("DELETE FROM webhook_events WHERE event_id LIKE ?1").bind(`${PROBE}%`).run();
});

/** `n` handled events received `ageDays` ago, named `<PROBE><name>_<i>`. */
const seedEvents = (name: string, n: number, ageDays: number) =>
  env.DB.prepare(
    `INSERT INTO webhook_events (event_id, type, received_at)
     SELECT ?1 || key, 'checkout.session.expired', ?2 FROM json_each(?3)`,
  )
    .bind(`${PROBE}${name}_`, Date.now() - ageDays * DAY, JSON.stringify(Array(n).fill(0)))
    .run();

const probeEvents = async (name: string) =>
  env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE event_id LIKE ?1")
    .bind(`${PROBE}${name}_%`)
    .first<number>("n");

async function runCron() {
  const { thrown, lines } = await cronRun();
  expect(thrown).toBe("");
  return lines.join("\n");
}

describe(`the Cron deletes handled Stripe event ids ${RETENTION_DAYS} days after their receipt`, () => {
  it("deletes the old ones in chunks and keeps the young ones", { timeout: 60_000 }, async () => {
    await seedEvents("old", 2500, RETENTION_DAYS + 1);
    await seedEvents("young", 3, RETENTION_DAYS - 1);
    await seedEvents("today", 2, 0);
    const log = await runCron();
    expect(await probeEvents("old")).toBe(0);
    expect(await probeEvents("young")).toBe(3);
    expect(await probeEvents("today")).toBe(2);
    // Three chunks of at most 1,000 (D1 has no DELETE … LIMIT).
    expect(log).toMatch(/"webhook_events":\{"deleted":2500,"more":false\}/);
  });

  it("at most 10 chunks of 1,000 a run; the next run takes the rest", { timeout: 60_000 }, async () => {
    await seedEvents("backlog", 10_500, RETENTION_DAYS + 10);
    expect(await runCron()).toMatch(/"webhook_events":\{"deleted":10000,"more":true\}/);
    expect(await probeEvents("backlog")).toBe(500);
    await runCron();
    expect(await probeEvents("backlog")).toBe(0);
  });

  it("finds the rows to delete through an index, not by reading the table", async () => {
    const statement = preparedSql((db) => expiredEvents(db, 0, 1));
    const sql = /SELECT rowid FROM webhook_events[\s\S]*?LIMIT \?2/.exec(statement)?.[0];
    expect(sql).toBeDefined();
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(Date.now(), 1000)
      .all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toEqual([
      "SEARCH webhook_events USING COVERING INDEX webhook_events_received_at (received_at<?)",
    ]);
  });

  it("a completed event delivered again after its id was deleted grants nothing more", async () => {
    const id = await seedSession("sha256", 170);
    const event = await sessionEvent("checkout.session.completed", id);
    expect(await outcomeOf(await deliver(event))).toBe("granted");
    // Its id received 36 days ago, then the Cron's prune.
    await env.DB.prepare("UPDATE webhook_events SET received_at = ?2 WHERE event_id = ?1")
      .bind(event.id, Date.now() - (RETENTION_DAYS + 1) * DAY)
      .run();
    await runCron();
    expect(
      await env.DB.prepare("SELECT 1 AS n FROM webhook_events WHERE event_id = ?1").bind(event.id).first("n"),
    ).toBeNull();
    // The same event again (a person resending it, say): the session holds its key already.
    expect(await outcomeOf(await deliver(event))).toBe("already_granted");
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
    // And it is recorded again, so a third delivery is the duplicate it always was.
    expect(await outcomeOf(await deliver(event))).toBe("duplicate_event");
  });
});
