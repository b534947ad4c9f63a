import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";

// A card-credit call that fails gives its credit back (payments/gate.ts). On Cloudflare a client
// that disconnects cancels its request's pending work except what waitUntil holds; workerd tests
// cannot cut a connection, so this shows the give-back is inside the work handed to waitUntil:
// once the promises the call handed over have settled, the credit is back, whether or not anyone
// awaited or read the answer.

const app = createApp();

/** A key holding `calls` sha256 credits. */
async function cardKey(calls: number) {
  const key = newApiKey();
  await env.DB.prepare(
    "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'sha256', ?3, ?3, ?4)",
  )
    .bind(crypto.randomUUID(), await hashKey(key), calls, Date.now())
    .run();
  return key;
}

const callsLeft = async (key: string) =>
  (
    await env.DB.prepare("SELECT calls_left FROM api_keys WHERE key_hash = ?1")
      .bind(await hashKey(key))
      .first<{ calls_left: number }>()
  )?.calls_left;

/** An ExecutionContext that only records what it is handed (the runtime would keep it alive). */
function recordingContext() {
  const handed: Promise<unknown>[] = [];
  const ctx = {
    waitUntil: (p: Promise<unknown>) => void handed.push(p),
    passThroughOnException: () => undefined,
    props: {},
  } as unknown as ExecutionContext;
  return { ctx, handed };
}

/**
 * D1 whose statement matching `sql` (run with `method`, or sent in a batch) waits until `release`
 * is called: the call is held in flight at that step, where a disconnect used to cut it off.
 */
function holding(sql: string, method: "first" | "run" | "batch") {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const reachedStep = new Promise<void>((r) => (reached = r));
  const held = new WeakSet<D1PreparedStatement>();
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch" && method === "batch") {
        return async (stmts: D1PreparedStatement[]) => {
          if (stmts.some((s) => held.has(s))) {
            reached();
            await released;
          }
          return target.batch(stmts);
        };
      }
      if (prop !== "prepare") {
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (text: string) => {
        const stmt = target.prepare(text);
        if (!text.includes(sql)) return stmt;
        if (method === "batch") {
          return {
            bind: (...args: unknown[]) => {
              const bound = stmt.bind(...args);
              held.add(bound);
              return bound;
            },
          };
        }
        return {
          bind: (...args: unknown[]) => ({
            [method]: async () => {
              reached();
              await released;
              return stmt.bind(...args)[method]();
            },
          }),
        };
      };
    },
  });
  return { db, release, reachedStep };
}

/** The credit give-back (refundCredit's UPDATE) held. */
const holdingGiveBack = () => holding("revoke_debt = max(0, revoke_debt - 1)", "batch");

/** sha256 refuses text its encoding cannot hold while running: a 422 after the credit was taken. */
const failingCall = (key: string) =>
  new Request("https://skills.test/api/skills/sha256", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ text: "é", encoding: "ascii" }),
  });

describe("a card-credit call that fails after its client went away", () => {
  it("gives the credit back within the work handed to waitUntil, the answer never awaited", async () => {
    const key = await cardKey(3);
    const { ctx, handed } = recordingContext();
    const { db, release, reachedStep: reachedGiveBack } = holdingGiveBack();
    // The answer is neither awaited nor read here (as after a disconnect) until the end.
    const answer = app.fetch(
      failingCall(key),
      { ...env, FREE_BETA: "false", X402_ENABLED: "false", DB: db },
      ctx,
    );
    await reachedGiveBack;
    expect(await callsLeft(key)).toBe(2);
    // What the call had handed to waitUntil by the time its skill failed waits for the give-back
    // (before, nothing was handed over: a disconnect cancelled the give-back with the request).
    const kept = Promise.all(handed);
    const pause = new Promise((r) => setTimeout(() => r("still waiting"), 100));
    expect(await Promise.race([kept.then(() => "settled"), pause])).toBe("still waiting");
    release();
    await kept;
    expect(await callsLeft(key)).toBe(3);

    const res = await answer;
    expect(res.status).toBe(422);
    expect(res.headers.get("x-credits-remaining")).toBe("3");
  });

  it("a call that succeeds keeps its credit, as before", async () => {
    const key = await cardKey(3);
    const { ctx, handed } = recordingContext();
    const res = await app.fetch(
      new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ text: "abc" }),
      }),
      { ...env, FREE_BETA: "false", X402_ENABLED: "false" },
      ctx,
    );
    await Promise.all(handed);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-credits-remaining")).toBe("2");
    expect(await callsLeft(key)).toBe(2);
  });
});

/** The store of an idempotent answer (`status = 'done'`) held. */
const holdingStore = () => holding("UPDATE idempotent_results SET status = 'done'", "run");

describe("a call made under an Idempotency-Key outlasts its client", () => {
  it("its paid answer is stored within the work handed to waitUntil, so the retry gets it", async () => {
    const key = await cardKey(3);
    const { ctx, handed } = recordingContext();
    const { db, release, reachedStep: reachedStore } = holdingStore();
    const idemKey = `outlast-${crypto.randomUUID()}`;
    const call = () =>
      new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "idempotency-key": idemKey,
        },
        body: JSON.stringify({ text: "abc" }),
      });
    const e = { ...env, FREE_BETA: "false", X402_ENABLED: "false" };
    const answer = app.fetch(call(), { ...e, DB: db }, ctx);
    await reachedStore;
    // Before, the store ran after everything handed to waitUntil had settled: a disconnect there
    // cancelled it, the key stayed running, and the paid answer was lost to the retry.
    const kept = Promise.all(handed);
    const pause = new Promise((r) => setTimeout(() => r("still waiting"), 100));
    expect(await Promise.race([kept.then(() => "settled"), pause])).toBe("still waiting");
    release();
    await kept;
    const first = await answer;
    expect(first.status).toBe(200);

    const retry = await app.fetch(call(), e);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(await first.text());
    expect(await callsLeft(key)).toBe(2);
  });
});
