import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { unsettledSessions } from "../../src/payments/checkout-sessions";
import {
  keyMark,
  MISSING_IN_A_ROW_STOP,
  SWEEP_MAX_READS,
  sweepCheckouts,
} from "../../src/payments/checkout-sweep";
import { sessionRef } from "../../src/redact";
import { cronRun, preparedSql } from "../fixtures/cron";
import { untilReally } from "../fixtures/real-time";
import {
  createCheckout,
  credits,
  deliver,
  EMULATOR,
  emulatorEvents,
  emulatorPost,
  keyIn,
  keysFor,
  outcomeOf,
  pay,
  revealPost,
  revealTokenFromPage,
  sessionEvent,
  sessionRow,
  stripe,
} from "./checkout-helpers";

// A card checkout whose every webhook delivery was lost (a rotated webhook secret, an outage past
// Stripe's 3 days of retries) was granted only if its buyer opened the success page, and a session
// Stripe expired stayed `open` in D1 for ever (never deleted). The Cron now asks Stripe about the
// sessions that should have heard from it by now and settles them by the webhook's own rule.
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const payload = { text: "swept" };
const UNKNOWN = "cs_test_sweep_unknown_";
const LIVE = "cs_live_sweep_";
/** Sessions a test leaves due (paid or not): ended after it, so no later run of the sweep asks first. */
const leftDue: string[] = [];
/** First calls of packs a test's sweepCheckouts granted: finished before the next test. */
const firstCalls: Promise<void>[] = [];

afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await Promise.all(firstCalls.splice(0));
  for (const id of leftDue.splice(0)) {
    await env.DB.prepare(
      "UPDATE checkout_sessions SET status = 'expired' WHERE id = ?1 AND api_key_id IS NULL",
    )
      .bind(id)
      .run();
  }
  for (const prefix of [UNKNOWN, LIVE]) {
    await env.DB.prepare("DELETE FROM checkout_sessions WHERE id LIKE ?1").bind(`${prefix}%`).run();
  }
});

/**
 * The Cron's run with `bindings`: what it threw ("" if nothing), its log lines (console.log and
 * console.error), and its work handed to waitUntil finished.
 */
async function runCron(bindings: object = env) {
  const { thrown, lines } = await cronRun(bindings);
  const sweep = lines.find((l) => l.includes('"checkout_sweep"'));
  return {
    thrown,
    lines,
    sweep: (JSON.parse(sweep ?? "{}") as { checkout_sweep?: Record<string, unknown> }).checkout_sweep,
  };
}

/** Moves a session's creation back in time (Stripe's own clock is untouched). */
const age = (id: string, ago: number) =>
  env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2 WHERE id = ?1")
    .bind(id, Date.now() - ago)
    .run();

/**
 * `n` paid sessions, older than any the tests leave (in the order made), so the sweep asks about
 * them first; ended after the test if it left them due.
 */
async function paidOldest(n: number) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = await createCheckout("sha256", 170);
    await pay(id);
    await age(id, 3660 * DAY - i * MINUTE);
    ids.push(id);
    leftDue.push(id);
  }
  return ids;
}

/** How often the app has read this session from Stripe (the emulator counts every API request). */
const reads = async (id: string) =>
  (
    await (
      await fetch(
        `${EMULATOR}/_emulator/requests?match=${encodeURIComponent(`GET /v1/checkout/sessions/${id}`)}`,
      )
    ).json<{ count: number }>()
  ).count;

/** What a row says of its payment, the columns the sweep must not touch when Stripe is not read. */
const paymentState = async (id: string) => {
  const row = await sessionRow(id);
  return {
    status: row?.status,
    payload: row?.payload,
    payload_bytes: row?.payload_bytes,
    api_key_id: row?.api_key_id,
    payment_pending_at: row?.payment_pending_at,
    payment_failed_at: row?.payment_failed_at,
    updated_at: row?.updated_at,
  };
};

describe("the Cron settles checkouts no webhook reached, by Stripe's own state", () => {
  it("grants a session paid at Stripe with no webhook delivered exactly once, runs its first call, and the success page then shows the key as usual", async () => {
    const id = await createCheckout("sha256", 170, payload);
    // Paid at Stripe; the unit tests' emulator has no webhook target, so no event reached us.
    await pay(id);
    await age(id, 2 * HOUR);

    const first = await runCron();
    expect(first.thrown).toBe("");
    expect(first.sweep).toMatchObject({ asked: expect.any(Number), granted: expect.any(Number) });
    expect(first.sweep?.granted).toBeGreaterThanOrEqual(1);
    expect(first.lines.some((l) => l.includes("granted a paid session") && l.includes(sessionRef(id)))).toBe(
      true,
    );
    // The whole id reveals the pack's key on the success page: no line of the run carries it.
    expect(first.lines.filter((l) => l.includes(id))).toEqual([]);
    const granted = await sessionRow(id);
    expect(granted).toMatchObject({ status: "complete", api_key_id: expect.any(String) });
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
    // Its first call ran after the grant, as the webhook runs it (free beta: no credit taken).
    expect(JSON.parse(granted?.payload_result as string)).toMatchObject({ status: 200 });
    expect(await reads(id)).toBe(1);

    // Again: nothing more is asked or granted.
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(1);
    expect((await keysFor(id)).results).toHaveLength(1);

    // The completed webhook, delivered at last, finds it granted and changes nothing.
    expect(await outcomeOf(await deliver(await sessionEvent("checkout.session.completed", id)))).toBe(
      "already_granted",
    );
    expect((await keysFor(id)).results).toHaveLength(1);
    expect((await sessionRow(id))?.api_key_id).toBe(granted?.api_key_id);

    // The buyer's success page reveals the key the Cron granted, once.
    const token = await revealTokenFromPage(id);
    expect(token).toBeDefined();
    const key = keyIn(await (await revealPost(id, token as string)).text());
    expect(key).toMatch(/^mk_/);
    expect((await credits(key as string)).calls_left).toBe(170);
  });

  it("marks a session Stripe expired `expired` and clears its payload; 30 days after its creation the Cron deletes it", async () => {
    const id = await createCheckout("sha256", 170, payload);
    await stripe.checkout.sessions.expire(id);
    // Stripe sent checkout.session.expired, and it never reached us.
    expect((await emulatorEvents("checkout.session.expired")).some((e) => e.data.object.id === id)).toBe(
      true,
    );
    await age(id, DAY + HOUR);
    expect((await sessionRow(id))?.status).toBe("open");

    const run = await runCron();
    expect(run.thrown).toBe("");
    expect(await sessionRow(id)).toMatchObject({
      status: "expired",
      payload: null,
      payload_bytes: null,
      api_key_id: null,
    });
    expect((await keysFor(id)).results).toEqual([]);

    // Now an ended session like any: its row goes 30 days after its creation.
    await age(id, 31 * DAY);
    expect((await runCron()).thrown).toBe("");
    expect(await sessionRow(id)).toBeNull();
  });

  it("does not ask about a young session, asks about an hour-old one once, and again only 6 hours later", async () => {
    const young = await createCheckout("sha256", 170, payload);
    // Paid, and its webhook still on its way: the webhook's and the page's, not the Cron's.
    await pay(young);
    await age(young, 50 * MINUTE);
    const open = await createCheckout("sha256", 170, payload);
    await age(open, 2 * HOUR);

    expect((await runCron()).thrown).toBe("");
    expect(await reads(young)).toBe(0);
    expect(await sessionRow(young)).toMatchObject({ status: "open", api_key_id: null });
    // Still open at Stripe (nobody paid): nothing changes but when it was asked.
    expect(await reads(open)).toBe(1);
    expect(await sessionRow(open)).toMatchObject({
      status: "open",
      api_key_id: null,
      payload: JSON.stringify(payload),
      checked_at: expect.any(Number),
    });

    expect((await runCron()).thrown).toBe("");
    expect(await reads(open)).toBe(1);
    await env.DB.prepare("UPDATE checkout_sessions SET checked_at = ?2 WHERE id = ?1")
      .bind(open, Date.now() - 6 * HOUR - MINUTE)
      .run();
    expect((await runCron()).thrown).toBe("");
    expect(await reads(open)).toBe(2);
  });

  it("asks at most SWEEP_MAX_READS sessions a run, and the next run reaches the one left", {
    timeout: 60_000,
  }, async () => {
    const ids: string[] = [];
    for (let i = 0; i <= SWEEP_MAX_READS; i++) ids.push(await createCheckout("sha256", 170));
    // Older than anything else the tests leave, oldest first in the order made: the sweep takes
    // never-asked sessions oldest first.
    for (const [i, id] of ids.entries()) await age(id, 3650 * DAY - i * MINUTE);
    const all = "GET /v1/checkout/sessions/";
    const count = async () =>
      (
        await (
          await fetch(`${EMULATOR}/_emulator/requests?match=${encodeURIComponent(all)}`)
        ).json<{ count: number }>()
      ).count;

    const before = await count();
    const first = await runCron();
    expect(first.thrown).toBe("");
    expect((await count()) - before).toBe(SWEEP_MAX_READS);
    expect(first.sweep).toMatchObject({ asked: SWEEP_MAX_READS, more: true });
    const asked = await Promise.all(ids.map(reads));
    expect(asked).toEqual([...Array(SWEEP_MAX_READS).fill(1), 0]);

    const second = await runCron();
    expect(second.thrown).toBe("");
    expect(second.sweep?.asked).toBeLessThanOrEqual(SWEEP_MAX_READS);
    expect(await reads(ids[SWEEP_MAX_READS] as string)).toBe(1);
    // Those asked in the first run wait their turn (an hour past Stripe's lifetime).
    expect(await Promise.all(ids.slice(0, SWEEP_MAX_READS).map(reads))).toEqual(
      Array(SWEEP_MAX_READS).fill(1),
    );
  });

  it("a bank debit's session: marked pending when Stripe says so, asked again once its outcome is overdue, and granted once it cleared", async () => {
    const id = await createCheckout("sha256", 170, payload);
    await pay(id, "async_succeeded");
    await age(id, 2 * HOUR);
    const setPending = (ago: number) =>
      env.DB.prepare("UPDATE checkout_sessions SET payment_pending_at = ?2, checked_at = ?2 WHERE id = ?1")
        .bind(id, Date.now() - ago)
        .run();

    expect((await runCron()).thrown).toBe("");
    const marked = await sessionRow(id);
    expect(marked).toMatchObject({
      status: "open",
      api_key_id: null,
      payment_pending_at: expect.any(Number),
    });
    expect(await reads(id)).toBe(1);
    // The debit clears at Stripe; its async_payment_succeeded event never reaches us.
    await emulatorPost(`/_emulator/sessions/${id}/async_payment_succeeded`, {});
    // Not overdue yet (a US bank debit takes up to 4 business days): left to its event.
    await setPending(3 * DAY);
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(1);
    // Past 14 days no debit is still out: not asked any more.
    await setPending(15 * DAY);
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(1);
    // Overdue: asked, and Stripe says paid.
    await setPending(5 * DAY);
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(2);
    expect(await sessionRow(id)).toMatchObject({ status: "complete", api_key_id: expect.any(String) });
    expect((await keysFor(id)).results).toHaveLength(1);
  });

  it("chooses its sessions through the index alone, in the index's order", async () => {
    const statement = preparedSql((db) => unsettledSessions(db, 0, 1, "mark"));
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${statement}`)
      .bind(...Array(7).fill(Date.now()), 20, "mark", "cs_live_")
      .all<{ detail: string }>();
    const reads = plan.results.map((r) => r.detail).filter((d) => /^(SCAN|SEARCH) checkout_sessions/.test(d));
    // Never asked sessions, then those asked before: each an ordered range of the index, no sort.
    expect(reads).toEqual([
      expect.stringMatching(
        /^SEARCH checkout_sessions USING COVERING INDEX checkout_sessions_sweep \(checked_at=\?/,
      ),
      expect.stringMatching(
        /^SEARCH checkout_sessions USING COVERING INDEX checkout_sessions_sweep \(checked_at<\?/,
      ),
    ]);
    expect(plan.results.some((r) => r.detail.includes("TEMP B-TREE"))).toBe(false);
  });

  it.each([
    ["by the version before 0022 (no key named)", null],
    ["under a key since rolled", "0123456789abcdef"],
  ])(
    "sessions marked %s lead the queue and answer 404 again: marked under today's key, the run stays green",
    async (_, oldMark) => {
      // Long ago, so that as of `now` nothing else the tests made is due: these three lead the run.
      const created = Date.now() - 4000 * DAY;
      const now = created + 2 * DAY;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const id = `${UNKNOWN}${crypto.randomUUID().replaceAll("-", "")}`;
        await env.DB.prepare(
          `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at,
                                        checked_at, stripe_missing_at, stripe_missing_key)
         VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?2, ?3, ?3, ?4)`,
        )
          .bind(id, created, created + HOUR + i, oldMark)
          .run();
        ids.push(id);
      }
      vi.spyOn(console, "error").mockImplementation(() => {});
      const first = await sweepCheckouts(env, () => {}, now);
      expect(first.error).toBeUndefined();
      expect(first).toMatchObject({ asked: 3, unknown: 3 });
      for (const id of ids) expect((await sessionRow(id))?.stripe_missing_key).not.toBe(oldMark);
      // Marked under today's key: not asked again.
      expect(await sweepCheckouts(env, () => {}, now + DAY)).toMatchObject({ asked: 0 });
    },
  );

  it("two sessions marked before and two never marked, all 404 under a key that reads none of them: the never-marked ones are not marked", async () => {
    const created = Date.now() - 4000 * DAY;
    const now = created + 2 * DAY;
    const insert = async (i: number, marked: boolean) => {
      const id = `${UNKNOWN}${crypto.randomUUID().replaceAll("-", "")}`;
      await env.DB.prepare(
        `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at,
                                        checked_at, stripe_missing_at, stripe_missing_key)
         VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?2, ?3, ?4, ?5)`,
      )
        .bind(
          id,
          created,
          created + HOUR + i,
          marked ? created + HOUR : null,
          marked ? "fedcba9876543210" : null,
        )
        .run();
      return id;
    };
    await insert(0, true);
    await insert(1, true);
    const never = [await insert(2, false), await insert(3, false)];
    vi.spyOn(console, "error").mockImplementation(() => {});
    const run = await sweepCheckouts(env, () => {}, now);
    expect(run).toMatchObject({ asked: 4, unknown: 4 });
    for (const id of never) expect((await sessionRow(id))?.stripe_missing_at).toBeNull();
  });

  it("a session Stripe does not know (404) is logged, marked under this key and not asked again; under another key, or cleared by a person, it is asked again", async () => {
    const id = `${UNKNOWN}${crypto.randomUUID().replaceAll("-", "")}`;
    const created = Date.now() - 3650 * DAY;
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?2)`,
    )
      .bind(id, created)
      .run();

    const run = await runCron();
    expect(run.thrown).toBe("");
    expect(run.sweep?.unknown).toBeGreaterThanOrEqual(1);
    expect(
      run.lines.some((l) => l.includes("does not know this session") && l.includes(sessionRef(id))),
    ).toBe(true);
    const mark = await keyMark(env.STRIPE_SECRET_KEY as string);
    expect(await sessionRow(id)).toMatchObject({
      status: "open",
      stripe_missing_at: expect.any(Number),
      stripe_missing_key: mark,
      updated_at: created,
    });
    // A short hash, never the key.
    expect(mark).toMatch(/^[0-9a-f]{16}$/);
    expect(await reads(id)).toBe(1);
    // Not asked again under this key, however long it waits.
    await env.DB.prepare("UPDATE checkout_sessions SET checked_at = 0 WHERE id = ?1").bind(id).run();
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(1);
    // A mark made under another key (or before marks named theirs) counts for nothing.
    for (const other of ["0123456789abcdef", null]) {
      await env.DB.prepare(
        "UPDATE checkout_sessions SET checked_at = 0, stripe_missing_key = ?2 WHERE id = ?1",
      )
        .bind(id, other)
        .run();
      const before = await reads(id);
      expect((await runCron()).thrown).toBe("");
      expect(await reads(id)).toBe(before + 1);
      expect((await sessionRow(id))?.stripe_missing_key).toBe(mark);
    }
    // A person clears a mark as OPERATIONS says: asked again on the next run.
    await env.DB.prepare(
      "UPDATE checkout_sessions SET stripe_missing_at = NULL, stripe_missing_key = NULL, checked_at = NULL WHERE id = ?1",
    )
      .bind(id)
      .run();
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(4);
  });
});

describe("a key that cannot read this deployment's sessions marks nothing for good", () => {
  /**
   * `bindings` with another account's key: Stripe knows none of this deployment's sessions under it
   * (the emulator knows one account, so its answer is made here).
   */
  function anotherAccount() {
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.startsWith(`${EMULATOR}/v1/checkout/sessions/`)) {
        const sid = new URL(req.url).pathname.split("/").pop();
        return Response.json(
          {
            error: {
              code: "resource_missing",
              param: "id",
              type: "invalid_request_error",
              message: `No such checkout.session: '${sid}'`,
            },
          },
          { status: 404 },
        );
      }
      return real(input, init);
    });
    // A base of its own builds a client with this fetch (payments/stripe.ts keeps one per base).
    return {
      ...env,
      STRIPE_SECRET_KEY: "sk_test_another_account_key_0000000",
      STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}`,
    } as typeof env;
  }

  it("a run under another account's key that marked a paid session: once the key is put right, it is asked again and granted", async () => {
    const [id] = (await paidOldest(1)) as [string];
    // Only it due (at a time nothing else is): one 404, fewer than MISSING_IN_A_ROW_STOP, so marked.
    const wrong = await sweepCheckouts(anotherAccount(), () => {}, Date.now(), 1);
    vi.restoreAllMocks();
    expect(wrong).toMatchObject({ asked: 1, unknown: 1 });
    expect(wrong.error).toBeUndefined();
    expect((await sessionRow(id))?.stripe_missing_at).toEqual(expect.any(Number));

    // The key is put right: its marks count for nothing under it.
    await env.DB.prepare("UPDATE checkout_sessions SET checked_at = 0 WHERE id = ?1").bind(id).run();
    const before = await reads(id);
    expect((await runCron()).thrown).toBe("");
    expect(await reads(id)).toBe(before + 1);
    expect(await sessionRow(id)).toMatchObject({ status: "complete", api_key_id: expect.any(String) });
    expect((await keysFor(id)).results).toHaveLength(1);
  });

  it(`MISSING_IN_A_ROW_STOP 404s and no other answer: a configuration error that fails the Cron naming checkout_sweep, nothing marked`, async () => {
    const ids = await paidOldest(MISSING_IN_A_ROW_STOP + 1);
    const run = await runCron(anotherAccount());
    vi.restoreAllMocks();
    expect(run.thrown).toMatch(
      new RegExp(
        `checkout_sweep: configuration error: Stripe does not know any of the first ${MISSING_IN_A_ROW_STOP} sessions`,
      ),
    );
    expect(run.sweep).toMatchObject({ unknown: MISSING_IN_A_ROW_STOP, more: true });
    for (const id of ids) expect((await sessionRow(id))?.stripe_missing_at).toBeNull();

    // The key of the day reads them: all granted.
    for (const id of ids) {
      await env.DB.prepare("UPDATE checkout_sessions SET checked_at = 0 WHERE id = ?1").bind(id).run();
    }
    expect((await runCron()).thrown).toBe("");
    for (const id of ids) expect((await keysFor(id)).results).toHaveLength(1);
  });

  it("a key of the other mode than STRIPE_MODE's fails the Cron naming checkout_sweep (refunds and disputes would reach only the webhook); no key set is a skip", async () => {
    const wrong = await runCron({
      ...env,
      STRIPE_MODE: "live",
      STRIPE_SECRET_KEY: "sk_test_sweep_wrong_mode",
    });
    vi.restoreAllMocks();
    expect(wrong.thrown).toMatch(
      /checkout_sweep: configuration error: STRIPE_SECRET_KEY is a test-mode key and STRIPE_MODE is \\"live\\"/,
    );
    expect(wrong.lines.find((l) => l.includes('"checkout_sweep"'))).toMatch(/^\{[^}]*"level":"error"/);
    expect(wrong.sweep).toMatchObject({ asked: 0, error: expect.stringContaining("test-mode key") });
    const unset = await runCron({ ...env, STRIPE_SECRET_KEY: "" });
    expect(unset.thrown).toBe("");
    expect(unset.sweep).toMatchObject({ asked: 0, skipped: "STRIPE_SECRET_KEY is not set" });
  });

  it("a session of the other mode than the key's is never asked nor marked, and the run goes on: a key of its mode asks it", async () => {
    const id = `${LIVE}${crypto.randomUUID().replaceAll("-", "")}`;
    const created = Date.now() - 3670 * DAY;
    await env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'open', ?2, ?2)`,
    )
      .bind(id, created)
      .run();
    // A due session of the key's own mode, beside it, is swept as usual.
    const [own] = await paidOldest(1);
    const run = await runCron();
    expect(run.thrown).toBe("");
    expect(await reads(id)).toBe(0);
    expect(await sessionRow(id)).toMatchObject({
      checked_at: null,
      stripe_missing_at: null,
      updated_at: created,
    });
    expect((await keysFor(own as string)).results).toHaveLength(1);
    // Under a live key it is due again (and, unknown to this emulator's account, asked).
    const live = await sweepCheckouts(
      { ...env, STRIPE_MODE: "live", STRIPE_SECRET_KEY: "sk_live_sweep_other_mode" },
      () => {},
    );
    expect(live.asked).toBeGreaterThanOrEqual(1);
    expect(await reads(id)).toBe(1);
  });
});

describe("the sweep's time", () => {
  it("a read Stripe does not answer costs one attempt of 10 s, not three of 15 s, and stops the run", {
    timeout: 90_000,
  }, async () => {
    const [id] = (await paidOldest(1)) as [string];
    let attempts = 0;
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.startsWith(`${EMULATOR}/v1/checkout/sessions/`)) {
        attempts++;
        return new Promise<Response>((_, reject) => {
          const signal = init?.signal ?? req.signal;
          signal?.addEventListener("abort", () => reject(signal.reason ?? new Error("aborted")));
        });
      }
      return real(input, init);
    });
    // Stripe's client times its read with setTimeout: run out on a fake clock, not waited for.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let done = false;
    const run = sweepCheckouts(
      { ...env, STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}` } as typeof env,
      () => {},
      Date.now(),
      2,
    ).finally(() => {
      done = true;
    });
    await untilReally(() => attempts === 1, "the read");
    // One attempt of 10 s: still waiting just before, over at 10 s, and no second attempt.
    await vi.advanceTimersByTimeAsync(9_999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    // A longer timeout or a retry would leave a fake timer behind: fail here, by name, not at the
    // test's own timeout.
    await untilReally(() => done, "the run's end at 10 s");
    vi.useRealTimers();
    const summary = await run;
    expect(summary).toMatchObject({ asked: 1, more: true, error: expect.stringContaining(sessionRef(id)) });
    expect(attempts).toBe(1);
  });

  it("reads that answer slowly: no read starts once the time budget is spent, and the run says so", async () => {
    const ids = await paidOldest(4);
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.startsWith(`${EMULATOR}/v1/checkout/sessions/`)) {
        await new Promise((r) => setTimeout(r, 300));
      }
      return real(input, init);
    });
    // A budget of 500 ms instead of SWEEP_TIME_BUDGET_MS's 60 s: reads start at 0 and ~300 ms,
    // none at ~600 ms.
    const summary = await sweepCheckouts(
      { ...env, STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}` } as typeof env,
      (run) => firstCalls.push(run),
      Date.now(),
      4,
      500,
    );
    vi.restoreAllMocks();
    expect(summary.error).toBeUndefined();
    expect(summary).toMatchObject({ asked: 2, more: true, stopped: expect.stringContaining("time budget") });
    // The oldest first (a session asked before, if one is due, may take the other read).
    expect(await Promise.all(ids.map(reads))).toEqual([1, expect.any(Number), 0, 0]);
  });
});

describe("first looks and re-checks share a run's reads", () => {
  it("while never-asked sessions keep coming at more than the budget, a session asked before is still asked again (paid since: granted)", async () => {
    const now = Date.now();
    const set = (id: string, created: number, checked: number | null) =>
      env.DB.prepare("UPDATE checkout_sessions SET created_at = ?2, checked_at = ?3 WHERE id = ?1")
        .bind(id, created, checked)
        .run();
    // Asked before (open then), paid at Stripe since, its webhook lost: first of those asked before.
    const paidLater = await createCheckout("sha256", 170);
    await pay(paidLater);
    await set(paidLater, now - 3690 * DAY, 0);
    // More never-asked checkouts than the run's budget (here 2), older than any the tests leave.
    const flood: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await createCheckout("sha256", 170);
      await set(id, now - 3700 * DAY + i, null);
      flood.push(id);
      leftDue.push(id);
    }
    const s = await sweepCheckouts(env, (run) => firstCalls.push(run), now, 2);
    expect(s).toMatchObject({ asked: 2, granted: 1, more: true });
    expect((await keysFor(paidLater)).results).toHaveLength(1);
    // The other read was the oldest first look.
    expect(await Promise.all(flood.map(reads))).toEqual([1, 0, 0]);
  });
});

describe("a Stripe that cannot be read fails the sweep alone", () => {
  /**
   * A paid session, older than any the tests leave, so the sweep asks about it first (no payload:
   * at that age the Cron's clearing would take it, whatever Stripe says).
   */
  async function paidFirstInLine() {
    const id = await createCheckout("sha256", 170);
    await pay(id);
    await age(id, 3650 * DAY);
    return id;
  }

  /** The outage's run: it throws naming the part, and the Cron's other parts still ran. */
  async function expectSweepFailed(run: Awaited<ReturnType<typeof runCron>>) {
    expect(run.thrown).toMatch(/checkout_sweep: Stripe could not be read about cs_/);
    expect(run.sweep).toMatchObject({ error: expect.stringContaining("Stripe could not be read") });
    for (const part of ['"reconcile"', '"stats"', '"pruned"', '"database"']) {
      expect(run.lines.some((l) => l.includes(part))).toBe(true);
    }
  }

  it("Stripe unreachable: the rows keep their payment state, and the session goes to the back of the sweep", async () => {
    const id = await paidFirstInLine();
    const before = await paymentState(id);
    const run = await runCron({ ...env, STRIPE_API_BASE: "http://127.0.0.1:9" });
    await expectSweepFailed(run);
    expect(await paymentState(id)).toEqual(before);
    expect((await keysFor(id)).results).toEqual([]);
    // Asked (at the back now): the next run starts with the others, and asks it again an hour on
    // (it is past Stripe's lifetime).
    expect((await sessionRow(id))?.checked_at).toEqual(expect.any(Number));
    expect((await runCron()).thrown).toBe("");
    expect((await sessionRow(id))?.api_key_id).toBeNull();
    await env.DB.prepare("UPDATE checkout_sessions SET checked_at = ?2 WHERE id = ?1")
      .bind(id, Date.now() - HOUR - MINUTE)
      .run();
    expect((await runCron()).thrown).toBe("");
    expect((await keysFor(id)).results).toHaveLength(1);
  });

  it("Stripe answering 500: the same", { timeout: 60_000 }, async () => {
    const id = await paidFirstInLine();
    const before = await paymentState(id);
    // payments/stripe.ts keeps one client per STRIPE_API_BASE, holding the fetch it was built
    // with: a base of its own (a fragment the client ignores) builds one with this fetch.
    const real = globalThis.fetch;
    const failing = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (req.url.startsWith(`${EMULATOR}/v1/`)) {
        return Response.json(
          { error: { type: "api_error", message: "An unknown error occurred." } },
          { status: 500 },
        );
      }
      return real(input, init);
    });
    const run = await runCron({ ...env, STRIPE_API_BASE: `${EMULATOR}/#${crypto.randomUUID()}` });
    failing.mockRestore();
    await expectSweepFailed(run);
    expect(await paymentState(id)).toEqual(before);
    expect((await keysFor(id)).results).toEqual([]);
  });
});
