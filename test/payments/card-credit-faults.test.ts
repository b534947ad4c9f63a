import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { CARD_SPEND_KEPT_MS, hashKey } from "../../src/payments/credits";
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

/** One call under `plan`, its waitUntil work awaited: the answer and the D1 calls made. */
async function send(req: () => Request, plan: FaultPlan) {
  const f = faultEnv(cardEnv, plan);
  const ctx = createExecutionContext();
  const res = await app.fetch(req(), f.env, ctx);
  await waitOnExecutionContext(ctx);
  return { res, log: f.log.db };
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
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const bad = () => uuidMint(key, { count: "x" });
    const n = await stepIn(bad, GIVE_BACK);
    expect(await callsLeft(env.DB, key)).toBe(5);
    const { res } = await send(bad, { db: { [n]: "throw" } });
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: unknown }>()).detail).toEqual([
      expect.objectContaining({ loc: ["body", "count"] }),
    ]);
    expect(await callsLeft(env.DB, key)).toBe(5);
  });

  it("refused every time: the last retry's line names the key's hash and the request", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
    await refuse("give_back_down", "BEFORE UPDATE OF given_back ON card_spends");
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { res } = await send(() => uuidMint(key, { count: "x" }), {});
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
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const bad = () => uuidMint(key, { count: "x" });
    const n = await stepIn(bad, sql);
    const { res } = await send(bad, { db: { [n]: "after" } });
    expect(res.status).toBe(422);
    expect(await callsLeft(env.DB, key)).toBe(5);
  },
);

describe("a card-credit spend D1 fails", () => {
  it("refused: the documented 503 payments_unavailable with Retry-After: 10, nothing taken", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const ok = () => uuidMint(key, { count: 2 });
    const n = await stepIn(ok, SPEND);
    const { res } = await send(ok, { db: { [n]: "throw" } });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(await res.json()).toMatchObject({ reason: "payments_unavailable" });
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });

  it("refused over MCP: the tool's error is the 503 payments_unavailable, nothing taken", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
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
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const ok = () => uuidMint(key, { count: 2 });
    const n = await stepIn(ok, SPEND);
    const { res } = await send(ok, { db: { [n]: "after" } });
    expect(res.status).toBe(200);
    expect((await res.json<{ ids: string[] }>()).ids).toHaveLength(2);
    expect(res.headers.get("x-credits-remaining")).toBe("3");
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("committed, and not even the read back answers: 503, and the credit is given back", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const ok = () => uuidMint(key, { count: 2 });
    const n = await stepIn(ok, SPEND);
    const { res, log } = await send(ok, { db: { [n]: "after", [n + 1]: "throw" } });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ reason: "payments_unavailable" });
    expect(stepOf(log, GIVE_BACK)).toBeGreaterThan(n + 1);
    expect(await callsLeft(env.DB, key)).toBe(4); // the clean call's credit only
  });
});

describe("the spends' record", () => {
  it("keeps a row per spend an hour: each spend deletes older ones", async () => {
    await env.DB.prepare(
      "INSERT INTO card_spends (request_id, key_hash, spent_at) VALUES ('faults:old', 'x', ?1), ('faults:recent', 'x', ?2)",
    )
      .bind(Date.now() - CARD_SPEND_KEPT_MS - 1, Date.now() - CARD_SPEND_KEPT_MS + 60_000)
      .run();
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const { res } = await send(() => uuidMint(key, { count: 1 }), {});
    expect(res.status).toBe(200);
    const rows = await env.DB.prepare(
      "SELECT request_id FROM card_spends WHERE request_id IN ('faults:old', 'faults:recent', ?1)",
    )
      .bind(res.headers.get("x-request-id"))
      .all<{ request_id: string }>();
    expect(rows.results.map((r) => r.request_id).sort()).toEqual(
      ["faults:recent", res.headers.get("x-request-id")].sort(),
    );
  });
});

describe("a card call's Idempotency-Key claim D1 committed but lost the answer of", () => {
  it("carries on as claimed: the call runs once, and its retry gets the stored answer", async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
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

describe("the expired answers' delete after a store, refused", () => {
  it("is logged, and hands waitUntil no rejected promise", async () => {
    await env.DB.prepare(
      `INSERT INTO idempotent_results (key, method, path, body_sha256, principal, request_id, status, created_at, updated_at)
       VALUES ('faults:expired', 'POST', '/x', '', '', 'old', 'done', 0, 0)`,
    ).run();
    await refuse("expiry_down", "BEFORE DELETE ON idempotent_results WHEN OLD.key = 'faults:expired'");
    const key = await keyWith(env.DB, 5, "uuid_mint");
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
