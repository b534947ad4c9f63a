import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { cached } from "../../src/skills/lib/cache";
import { unique, upstreamRequests } from "../fixtures/upstream-requests";
import { callIn, seedSession, sessionEvent, sessionRow, signed } from "../payments/checkout-helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

const app = createApp();

/**
 * The worker's KV, but a network skill's cache write (`skill:` keys) is held until the test lets it
 * go, and `events` records when it started and when it ended. A held write lets itself go after
 * `fallbackMs`, 10 s short of the test's timeout, only so that code which waits for it (the old
 * code did) ends and fails on `events`' order instead of hanging: nothing here waits on that time,
 * and code that does not wait for the write never meets it, however slow the machine.
 */
function heldCacheWrites(fallbackMs = SKILL_TEST_TIMEOUT - 10_000) {
  const events: string[] = [];
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  const kv = new Proxy(env.KV, {
    get(t, p) {
      const v = Reflect.get(t, p);
      if (typeof v !== "function") return v;
      if (p !== "put") return v.bind(t);
      return async (key: string, ...rest: unknown[]) => {
        if (!key.startsWith("skill:"))
          return (v as (...a: unknown[]) => Promise<void>).apply(t, [key, ...rest]);
        events.push("write started");
        const fallback = setTimeout(release, fallbackMs);
        await released;
        clearTimeout(fallback);
        await (v as (...a: unknown[]) => Promise<void>).apply(t, [key, ...rest]);
        events.push("write done");
      };
    },
  });
  return { bindings: { ...env, KV: kv }, events, release };
}

const researchRequest = (query: string) =>
  new Request("https://skills.test/api/skills/research", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });

describe("a network skill's cache write happens after its answer", () => {
  it(
    "a miss answers while its KV write is still pending; the write lands after, and the next call is a hit",
    async () => {
      const query = unique("cache after answer");
      const held = heldCacheWrites();
      const ctx = createExecutionContext();
      const res = await app.fetch(researchRequest(query), held.bindings, ctx);
      held.events.push("answered");
      expect(res.status).toBe(200);
      expect((await res.json<{ cache: string }>()).cache).toBe("miss");
      // The answer did not wait for the write (it waited for it before: write started, done, answered).
      expect(held.events).toEqual(["write started", "answered"]);
      held.release();
      await waitOnExecutionContext(ctx);
      expect(held.events).toEqual(["write started", "answered", "write done"]);
      const second = await app.fetch(researchRequest(query), env, createExecutionContext());
      expect((await second.json<{ cache: string }>()).cache).toBe("hit");
      expect(await upstreamRequests(`srsearch=${query}&`)).toBe(1);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "without an execution context (app.fetch in tests) the write is awaited, so the next call is a hit",
    async () => {
      const query = unique("cache no context");
      const held = heldCacheWrites();
      const answered = app.fetch(researchRequest(query), held.bindings);
      // Let the write go once it started: the answer then waits for it to end.
      while (held.events.length === 0) await new Promise((r) => setTimeout(r, 10));
      held.release();
      const res = await answered;
      held.events.push("answered");
      expect((await res.json<{ cache: string }>()).cache).toBe("miss");
      expect(held.events).toEqual(["write started", "write done", "answered"]);
      const second = await app.fetch(researchRequest(query), env);
      expect((await second.json<{ cache: string }>()).cache).toBe("hit");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a write KV refuses after the answer fails nothing: the call was a 200 miss, and the next computes again",
    async () => {
      const query = unique("cache write refused");
      const refusing = new Proxy(env.KV, {
        get(t, p) {
          const v = Reflect.get(t, p);
          if (p === "put")
            return (key: string, ...rest: unknown[]) =>
              key.startsWith("skill:")
                ? Promise.reject(new Error("KV PUT failed: 500 Internal Server Error"))
                : (v as (...a: unknown[]) => Promise<void>).apply(t, [key, ...rest]);
          return typeof v === "function" ? v.bind(t) : v;
        },
      });
      const ctx = createExecutionContext();
      const res = await app.fetch(researchRequest(query), { ...env, KV: refusing }, ctx);
      expect(res.status).toBe(200);
      expect((await res.json<{ cache: string }>()).cache).toBe("miss");
      await waitOnExecutionContext(ctx);
      const again = await app.fetch(researchRequest(query), env, createExecutionContext());
      expect((await again.json<{ cache: string }>()).cache).toBe("miss");
    },
    SKILL_TEST_TIMEOUT,
  );

  it("a waitUntil that refuses the write gets it awaited instead: the call answers, the next is a hit", async () => {
    const input = unique("cache waitUntil refused");
    const refusing = () => {
      throw new Error("waitUntil refused");
    };
    const first = await cached({ env, waitUntil: refusing }, "test_skill", input, async () => ({ n: 1 }));
    expect(first).toEqual({ value: { n: 1 }, cache: "miss" });
    const second = await cached({ env }, "test_skill", input, async () => ({ n: 2 }));
    expect(second).toEqual({ value: { n: 1 }, cache: "hit" });
  });

  it(
    "a card checkout's first call stores its answer for the success page before its cache write ends",
    async () => {
      const query = unique("cache first call");
      const id = await seedSession("research", 170, { query });
      const held = heldCacheWrites();
      const { payload, header } = await signed(await sessionEvent("checkout.session.completed", id));
      const init = { method: "POST", headers: { "stripe-signature": header }, body: payload };
      // The webhook runs the first call past its own answer; its result is stored in the row.
      const { res, after } = await callIn(held.bindings, "/api/cardpay/webhook", init);
      expect(res.status).toBe(200);
      while (!(await sessionRow(id))?.payload_result) await new Promise((r) => setTimeout(r, 50));
      held.events.push("stored");
      expect(held.events).toEqual(["write started", "stored"]);
      held.release();
      await after();
      expect(held.events).toEqual(["write started", "stored", "write done"]);
      const row = await sessionRow(id);
      expect(JSON.parse(row?.payload_result as string)).toMatchObject({
        status: 200,
        body: { cache: "miss" },
      });
      const second = await app.fetch(researchRequest(query), env, createExecutionContext());
      expect((await second.json<{ cache: string }>()).cache).toBe("hit");
    },
    SKILL_TEST_TIMEOUT,
  );
});
