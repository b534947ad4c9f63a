import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { pruneExpired } from "../../src/ops/database";
import {
  CARD_SPEND_KEPT_MS,
  expiredSpends,
  hashKey,
  refundCredit,
  spendCredit,
} from "../../src/payments/credits";
import { callsLeft, keyWith } from "../fixtures/credits";
import { type FaultPlan, faultEnv, stepOf } from "../fixtures/storage-faults";
import { mcpCall } from "../helpers";
import { cardEnv } from "./checkout-helpers";

// D1 failing around a card-credit call (test/fixtures/storage-faults.ts): a refused write, or one
// that committed and then lost its answer. The call's own answer stands, or is the documented 503
// with nothing taken; a credit is never lost, and never given back twice.
const app = createApp();
const SPEND = "calls_left = calls_left - 1";
const GIVE_BACK = "revoke_debt = max(0, revoke_debt - 1)";
const CLAIM = "INSERT INTO idempotent_results";

const uuidMint = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  new Request("https://skills.test/api/skills/uuid-mint", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });

/**
 * A call that fails while running (sha256 refuses text its encoding cannot hold), after its credit
 * was taken: a body that fails validation spends nothing, so it has nothing to give back.
 */
const failingCall = (key: string) =>
  new Request("https://skills.test/api/skills/sha256", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ text: "é", encoding: "ascii" }),
  });

/**
 * One call under `plan`, its waitUntil work awaited: the answer, the D1 calls made, and the
 * `late` calls' commit (storage-faults.ts).
 */
async function send(req: () => Request, plan: FaultPlan) {
  const f = faultEnv(cardEnv, plan);
  const ctx = createExecutionContext();
  const res = await app.fetch(req(), f.env, ctx);
  await waitOnExecutionContext(ctx);
  return { res, log: f.log.db, commitLate: f.commitLate };
}

/**
 * A paid call of a new key (5 credits of 10) whose spend, D1 call n, fails as `plan(n)` says: it
 * answers the 503 payments_unavailable with Retry-After: 10 in the card path's words.
 */
async function refusedSpend(plan: (n: number) => FaultPlan) {
  const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
  const ok = () => uuidMint(key, { count: 2 });
  const n = await stepIn(ok, SPEND);
  const sent = await send(ok, plan(n));
  expect(sent.res.status).toBe(503);
  expect(sent.res.headers.get("retry-after")).toBe("10");
  const body = await sent.res.json<{ detail: string; reason: string }>();
  expect(body.reason).toBe("payments_unavailable");
  expect(body.detail).toContain("same key");
  expect(body.detail).not.toMatch(/sign a new one|Nothing was charged/);
  return { key, n, ...sent };
}

/** The number of the D1 call holding `sql` in a call that fails nowhere. */
async function stepIn(req: () => Request, sql: string) {
  const { log } = await send(req, {});
  const n = stepOf(log, sql);
  expect(n, log.join("\n")).toBeGreaterThan(0);
  return n;
}

const triggers: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const name of triggers.splice(0)) await env.DB.prepare(`DROP TRIGGER IF EXISTS ${name}`).run();
});
async function refuse(name: string, when: string) {
  triggers.push(name);
  await env.DB.prepare(`CREATE TRIGGER ${name} ${when} BEGIN SELECT RAISE(ABORT, 'd1 down'); END`).run();
}

describe("a failed card call's give-back that D1 refuses", () => {
  it("refused once: the handler's 422 stands and the credit comes back after the answer", async () => {
    const key = await keyWith(env.DB, 5, "sha256", { total: 10 });
    const bad = () => failingCall(key);
    const n = await stepIn(bad, GIVE_BACK);
    expect(await callsLeft(env.DB, key)).toBe(5);
    const { res } = await send(bad, { db: { [n]: "throw" } });
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: unknown }>()).detail).toEqual([
      expect.objectContaining({ loc: ["body", "text"] }),
    ]);
    expect(await callsLeft(env.DB, key)).toBe(5);
  });

  it("refused every time: the last retry's line names the key's hash and the request", async () => {
    const key = await keyWith(env.DB, 5, "sha256", { total: 10 });
    await refuse("give_back_down", "BEFORE UPDATE OF given_back ON card_spends");
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { res } = await send(() => failingCall(key), {});
    expect(res.status).toBe(422);
    const lines = errors.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
    const final = lines.filter((l) => l.final === true);
    expect(final).toHaveLength(1);
    expect(final[0]).toMatchObject({
      level: "error",
      request_id: res.headers.get("x-request-id"),
      attempt: 4,
    });
    expect(String(final[0]?.error)).toContain(`card credit give-back (key_hash ${await hashKey(key)})`);
    expect(await callsLeft(env.DB, key)).toBe(4); // a maintainer gives it back (OPERATIONS.md)
  }, 15_000);
});

// The spend's lost answer is read back; the give-back's is retried, and gives nothing twice.
it.each([
  ["spend", SPEND],
  ["give-back", GIVE_BACK],
])(
  "a failed call whose %s D1 committed but lost the answer of: the 422, and the credit back once",
  async (_, sql) => {
    const key = await keyWith(env.DB, 5, "sha256", { total: 10 });
    const bad = () => failingCall(key);
    const n = await stepIn(bad, sql);
    const { res } = await send(bad, { db: { [n]: "after" } });
    expect(res.status).toBe(422);
    expect(await callsLeft(env.DB, key)).toBe(5);
  },
);

describe("a card-credit spend D1 fails", () => {
  it("refused: the documented 503 payments_unavailable with Retry-After: 10, nothing taken", async () => {
    const { key } = await refusedSpend((n) => ({ db: { [n]: "throw" } }));
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });

  it("refused over MCP: the tool's error is the 503 payments_unavailable, nothing taken", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const bearer = { authorization: `Bearer ${key}` };
    const clean = faultEnv(cardEnv, {});
    await mcpCall(app, clean.env, "uuid_mint", { count: 1 }, undefined, bearer);
    const n = stepOf(clean.log.db, SPEND);
    expect(n).toBeGreaterThan(0);
    const f = faultEnv(cardEnv, { db: { [n]: "throw" } });
    const { result } = await mcpCall(app, f.env, "uuid_mint", { count: 1 }, undefined, bearer);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ reason: "payments_unavailable", status: 503 });
    expect(await callsLeft(env.DB, key)).toBe(4);
  });

  it("committed but its answer lost: read back by the request, the call runs as paid", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const ok = () => uuidMint(key, { count: 2 });
    const n = await stepIn(ok, SPEND);
    const { res } = await send(ok, { db: { [n]: "after" } });
    expect(res.status).toBe(200);
    expect((await res.json<{ ids: string[] }>()).ids).toHaveLength(2);
    expect(res.headers.get("x-credits-remaining")).toBe("3");
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("committed, and not even the read back answers: 503, and the credit is given back", async () => {
    const { key, n, log } = await refusedSpend((n) => ({ db: { [n]: "after", [n + 1]: "throw" } }));
    expect(stepOf(log, GIVE_BACK)).toBeGreaterThan(n + 1);
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });

  it("a full database (every card_spends insert refused): 503, one give-back tried, no final line", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    await refuse("card_spends_full", "BEFORE INSERT ON card_spends");
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const { res, log } = await send(() => uuidMint(key, { count: 2 }), {});
    expect(res.status).toBe(503);
    expect((await res.json<{ reason: string }>()).reason).toBe("payments_unavailable");
    // The give-back after the answer is sent once (its marker is refused too) and is no final line.
    expect(
      log.filter((l) => l.includes(GIVE_BACK)),
      log.join("\n"),
    ).toHaveLength(1);
    const lines = errors.mock.calls.map((args) => String(args[0]));
    expect(
      lines.some((l) => l.includes('"final":true')),
      lines.join("\n"),
    ).toBe(false);
    expect(await callsLeft(env.DB, key)).toBe(5);
  });
});

describe("a give-back of a request that spent nothing", () => {
  it("gives nothing, and a spend of that request D1 commits later takes nothing", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const keyHash = await hashKey(key);
    expect(await refundCredit(env.DB, keyHash, "faults:never-spent")).toBe(5);
    expect(await refundCredit(env.DB, keyHash, "faults:never-spent")).toBe(5);
    expect(await callsLeft(env.DB, key)).toBe(5);
    await expect(
      spendCredit(env.DB, keyHash, { id: "uuid_mint" } as never, "faults:never-spent"),
    ).rejects.toThrow(/UNIQUE constraint failed/);
    expect(await callsLeft(env.DB, key)).toBe(5);
  });
});

describe("a spend batch D1 refused at first, then committed late", () => {
  it("after the 503: the marker makes it fail on the request id, and it takes nothing", async () => {
    const { key, commitLate } = await refusedSpend((n) => ({ db: { [n]: "late" } }));
    const [late] = await commitLate();
    expect(String(late)).toMatch(/UNIQUE constraint failed/);
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });

  it("after a refused marker: the give-back sent after the answer makes it fail, nothing taken", async () => {
    // n: the spend (refused, committed later); n + 1: its read back ("not spent"); n + 2: the marker.
    const { key, commitLate } = await refusedSpend((n) => ({ db: { [n]: "late", [n + 2]: "throw" } }));
    const [late] = await commitLate();
    expect(String(late)).toMatch(/UNIQUE constraint failed/);
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });

  it("before the marker: the marker loses, the spend is read back, the call runs as paid", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const ok = () => uuidMint(key, { count: 2 });
    const n = await stepIn(ok, SPEND);
    // n: the spend (refused); n + 1: its read back ("not spent"); the spend commits; n + 2: the marker.
    const { res, log } = await send(ok, { db: { [n]: "late" }, lateBefore: n + 2 });
    expect(log[n + 1]).toContain("ON CONFLICT (request_id) DO NOTHING");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-remaining")).toBe("3");
    expect(await callsLeft(env.DB, key)).toBe(3);
  });
});

describe("the spends' record", () => {
  const row = (id: string, age: number, givenBack: 0 | 1) =>
    env.DB.prepare(
      "INSERT INTO card_spends (request_id, key_hash, spent_at, given_back) VALUES (?1, 'x', ?2, ?3)",
    )
      .bind(id, Date.now() - age, givenBack)
      .run();
  const left = async (ids: string[]) =>
    (
      await env.DB.prepare(
        `SELECT request_id FROM card_spends WHERE request_id IN (${ids.map(() => "?").join(", ")})`,
      )
        .bind(...ids)
        .all<{ request_id: string }>()
    ).results
      .map((r) => r.request_id)
      .sort();
  const DAY = 86_400_000;
  const rows = async () => {
    const [backOld, backRecent, kept, keptOld] = ["back-old", "back-recent", "kept", "kept-old"].map(
      (n) => `faults:${n}:${crypto.randomUUID()}`,
    ) as [string, string, string, string];
    await row(backOld, CARD_SPEND_KEPT_MS + 1, 1); // given back an hour ago: gone
    await row(backRecent, CARD_SPEND_KEPT_MS - 60_000, 1);
    await row(kept, 30 * DAY, 0); // not given back: a maintainer may still need it
    await row(keptOld, 35 * DAY + 1, 0);
    return { all: [backOld, backRecent, kept, keptOld], left: [backRecent, kept] };
  };

  it("each spend deletes rows given back an hour ago, and rows not given back after 35 days", async () => {
    const r = await rows();
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const { res } = await send(() => uuidMint(key, { count: 1 }), {});
    expect(res.status).toBe(200);
    const id = String(res.headers.get("x-request-id"));
    expect(await left([...r.all, id])).toEqual([...r.left, id].sort());
  });

  it("the Cron deletes them too, each kind by its index", async () => {
    const r = await rows();
    const pruned = await pruneExpired(env.DB);
    // Over the whole shared D1: this test's two expired rows, and any other file left.
    expect(pruned.card_spends.deleted).toBeGreaterThanOrEqual(2);
    expect(pruned.card_spends.more).toBe(false);
    expect(await left(r.all)).toEqual(r.left.sort());
    // The statement's SQL, as expiredSpends writes it.
    const sql = expiredSpends({ prepare: (q: string) => ({ bind: () => q }) } as never, 0, 10, true);
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql as unknown as string}`)
      .bind(0, 10, 1)
      .all<{ detail: string }>();
    const lines = plan.results.map((r) => r.detail).join("\n");
    expect(lines).not.toMatch(/SCAN card_spends\b/);
    expect(lines).toMatch(/card_spends_given_back_spent_at \(given_back=\? AND spent_at<\?\)/);
  });
});

describe("a card call's Idempotency-Key claim D1 committed but lost the answer of", () => {
  it("carries on as claimed: the call runs once, and its retry gets the stored answer", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    await stepIn(() => uuidMint(key, { count: 1 }, { "idempotency-key": crypto.randomUUID() }), CLAIM);
    const n = await stepIn(
      () => uuidMint(key, { count: 1 }, { "idempotency-key": crypto.randomUUID() }),
      CLAIM,
    );
    const ik = { "idempotency-key": crypto.randomUUID() };
    const { res } = await send(() => uuidMint(key, { count: 1 }, ik), { db: { [n]: "after" } });
    expect(res.status).toBe(200);
    const body = await res.text();
    const retry = await send(() => uuidMint(key, { count: 1 }, ik), {});
    expect(retry.res.status).toBe(200);
    expect(retry.res.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.res.text()).toBe(body);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });
});

describe("a card call's Idempotency-Key claim D1 refused as overloaded", () => {
  it("is one D1 call on the claims: no read back, no release, no final line, and the 503", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const overloaded = [1, 2, 3, 4, 5, 6].map((n) => ({
      n,
      mode: "overloaded" as const,
      match: /idempotent_results/,
    }));
    const ik = { "idempotency-key": crypto.randomUUID() };
    const { res, log } = await send(() => uuidMint(key, { count: 1 }, ik), { db: overloaded });
    expect(res.status).toBe(503);
    expect((await res.json<{ reason: string }>()).reason).toBe("payments_unavailable");
    expect(
      log.filter((l) => l.includes("idempotent_results")),
      log.join("\n"),
    ).toHaveLength(1);
    const lines = errors.mock.calls.map((args) => String(args[0]));
    expect(lines.filter((l) => l.includes("idempotency key release"))).toEqual([]);
    expect(
      lines.some((l) => l.includes('"final":true')),
      lines.join("\n"),
    ).toBe(false);
    expect(await callsLeft(env.DB, key)).toBe(5);
  });
});

describe("the expired answers' delete after a store, refused", () => {
  it("is logged, and hands waitUntil no rejected promise", async () => {
    await env.DB.prepare(
      `INSERT INTO idempotent_results (key, method, path, body_sha256, principal, request_id, status, created_at, updated_at)
       VALUES ('faults:expired', 'POST', '/x', '', '', 'old', 'done', 0, 0)`,
    ).run();
    await refuse("expiry_down", "BEFORE DELETE ON idempotent_results WHEN OLD.key = 'faults:expired'");
    const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const f = faultEnv(cardEnv, {});
    const ctx = createExecutionContext();
    const res = await app.fetch(
      uuidMint(key, { count: 1 }, { "idempotency-key": crypto.randomUUID() }),
      f.env,
      ctx,
    );
    expect(res.status).toBe(200);
    await expect(waitOnExecutionContext(ctx)).resolves.toBeUndefined();
    expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).toContain(
      "expired idempotent answers delete",
    );
    await env.DB.prepare("DROP TRIGGER expiry_down").run();
    await env.DB.prepare("DELETE FROM idempotent_results WHERE key = 'faults:expired'").run();
  });
});
