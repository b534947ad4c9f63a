import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { skills } from "../../src/skills/registry";
import { ADMITTED } from "../../src/stats/record";

const app = createApp();

async function fetchApp(path: string, init: RequestInit, e: object) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`https://skills.test${path}`, init), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a retry whose stored answer cannot be given back now is a replay, not the skill's failure", () => {
  it("one paid call and four retries while KV is down: 1 ok + 4 replays paid by nothing (free beta or not), no admitted failure", async () => {
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'uuid_mint', 1, 1, ?3)",
    )
      .bind(crypto.randomUUID(), await hashKey(key), Date.now())
      .run();
    const paid = { ...env, FREE_BETA: "false" };
    const init = {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${key}`,
        "idempotency-key": `kv-down-${crypto.randomUUID()}`,
      },
      body: JSON.stringify({ count: 1 }),
    };
    const t0 = Date.now();
    const first = await fetchApp("/api/skills/uuid-mint", init, paid);
    expect(first.status).toBe(200);
    const requestId = first.headers.get("x-request-id") as string;
    // Its stored answer lives in KV (an answer over 16 KiB would), and KV cannot be read now.
    await env.DB.prepare("UPDATE idempotent_results SET body = NULL, body_kv = 'x' WHERE request_id = ?1")
      .bind(requestId)
      .run();
    const kvDown = {
      ...paid,
      KV: {
        get: () => Promise.reject(new Error("KV unavailable")),
        put: () => Promise.resolve(),
        delete: () => Promise.resolve(),
      },
    };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (let i = 0; i < 3; i++) {
        const retry = await fetchApp("/api/skills/uuid-mint", init, kvDown);
        expect(retry.status).toBe(503);
        expect(await retry.json()).toMatchObject({ reason: "idempotent_result_unavailable" });
      }
      // Free beta switched on meanwhile: a replay still passed no gate, so nothing paid for it.
      const freeBeta = await fetchApp("/api/skills/uuid-mint", init, { ...kvDown, FREE_BETA: "true" });
      expect(freeBeta.status).toBe(503);
    } finally {
      errors.mockRestore();
    }
    const { results } = await env.DB.prepare(
      "SELECT status, outcome, payment_method, amount_micro FROM call_log WHERE skill = 'uuid_mint' AND at >= ?1 ORDER BY id",
    )
      .bind(t0)
      .all<{ status: number; outcome: string; payment_method: string; amount_micro: number }>();
    const price = Number(skills.find((s) => s.id === "uuid_mint")?.price_atomic);
    expect(results).toEqual([
      { status: 200, outcome: "ok", payment_method: "card_credit", amount_micro: price },
      ...Array(4).fill({ status: 503, outcome: "replay", payment_method: "none", amount_micro: 0 }),
    ]);
    // The published success rate reads 1 of 1 admitted, not 1 of 4.
    const admitted = results.filter((r) => ADMITTED.includes(r.outcome as (typeof ADMITTED)[number]));
    expect(admitted).toHaveLength(1);
  });
});
