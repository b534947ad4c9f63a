import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runFirstPayload } from "../../src/payments/checkout-first-call";
import { skills } from "../../src/skills/registry";
import { FIXTURE } from "../fixtures/upstream-requests";
import { cardEnv } from "./checkout-helpers";

/** A granted pack of 5 calls (slugify unless named) whose checkout carried this first call. */
async function grantedPack(payload: unknown, skill = "slugify") {
  const id = `cs_test_logged_${crypto.randomUUID().replaceAll("-", "")}`;
  const keyId = `k-${id}`;
  const now = Date.now();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, ?4, 5, 5, ?3)",
    ).bind(keyId, `h-${id}`, now, skill),
    env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, api_key_id, created_at, updated_at)
       VALUES (?1, ?5, 5, 500, 'complete', ?2, ?3, ?4, ?4)`,
    ).bind(id, JSON.stringify(payload), keyId, now, skill),
  ]);
  return { id, keyId };
}

const callsLeft = async (keyId: string) =>
  (
    await env.DB.prepare("SELECT calls_left FROM api_keys WHERE id = ?1")
      .bind(keyId)
      .first<{ calls_left: number }>()
  )?.calls_left;

const logged = (t0: number) =>
  env.DB.prepare(
    "SELECT skill, status, outcome, payment_method, amount_micro, transport FROM call_log WHERE transport = 'checkout' AND at >= ?1 ORDER BY id",
  )
    .bind(t0)
    .all();

describe("a card pack's first call is measured like any call", () => {
  it("a 2xx that took its credit is logged at the list price; a body refused before the run as paid by nothing, as the route logs it", async () => {
    const t0 = Date.now();
    const ok = await grantedPack({ text: "First Call!" });
    await runFirstPayload(cardEnv, ok.id);
    expect(await callsLeft(ok.keyId)).toBe(4);
    const bad = await grantedPack({ text: 5 });
    await runFirstPayload(cardEnv, bad.id);
    const price = Number(skills.find((s) => s.id === "slugify")?.price_atomic);
    expect((await logged(t0)).results).toEqual([
      {
        skill: "slugify",
        status: 200,
        outcome: "ok",
        payment_method: "card_credit",
        amount_micro: price,
        transport: "checkout",
      },
      {
        skill: "slugify",
        status: 422,
        outcome: "validation",
        payment_method: "none",
        amount_micro: 0,
        transport: "checkout",
      },
    ]);
  });

  it("with batched call-log writes, the record is in D1 when the run ends (the run keeps its write alive)", async () => {
    const t0 = Date.now();
    const pack = await grantedPack({ text: "Batched" });
    await runFirstPayload({ ...env, CALL_LOG_FLUSH_MS: "50" }, pack.id);
    expect((await logged(t0)).results).toHaveLength(1);
  });

  it("in free beta it takes no credit and is logged as free beta at 0, as recordCall logs any call then, a 422 too", async () => {
    const t0 = Date.now();
    const ok = await grantedPack({ text: "Free First Call" });
    await runFirstPayload(env, ok.id);
    expect(await callsLeft(ok.keyId)).toBe(5);
    const bad = await grantedPack({ text: 5 });
    await runFirstPayload(env, bad.id);
    const free = { skill: "slugify", payment_method: "free_beta", amount_micro: 0, transport: "checkout" };
    expect((await logged(t0)).results).toEqual([
      { ...free, status: 200, outcome: "ok" },
      { ...free, status: 422, outcome: "validation" },
    ]);
  });

  it("logs the answer it stored: the refusal when the buyer spent the credits meanwhile, at 0", async () => {
    const t0 = Date.now();
    const pack = await grantedPack({ text: "Spent Meanwhile" });
    await env.DB.prepare("UPDATE api_keys SET calls_left = 0 WHERE id = ?1").bind(pack.keyId).run();
    await runFirstPayload(cardEnv, pack.id);
    expect((await logged(t0)).results).toEqual([
      expect.objectContaining({
        status: 402,
        outcome: "payment_required",
        payment_method: "none",
        amount_micro: 0,
      }),
    ]);
  });

  it("a run that fails keeps the credit and is logged as the card's at 0; a skill no longer sold as paid by nothing", async () => {
    const t0 = Date.now();
    // Valid for the schema, refused by the run: an ASCII digest of a non-ASCII text.
    const failing = await grantedPack({ text: "é", encoding: "ascii" }, "sha256");
    await runFirstPayload(cardEnv, failing.id);
    expect(await callsLeft(failing.keyId)).toBe(5);
    const gone = await grantedPack({ text: "x" }, "no_such_skill");
    await runFirstPayload(cardEnv, gone.id);
    expect((await logged(t0)).results).toEqual([
      expect.objectContaining({
        skill: "sha256",
        status: 422,
        payment_method: "card_credit",
        amount_micro: 0,
      }),
      expect.objectContaining({ status: 404, payment_method: "none", amount_micro: 0 }),
    ]);
  });

  it("the skill is not handed the whole session id (it opens the success page): osint_graph keeps its request id for good", async () => {
    const example = skills.find((s) => s.id === "osint_graph")?.example_request;
    const pack = await grantedPack(example, "osint_graph");
    await runFirstPayload(cardEnv, pack.id);
    const row = await env.DB.prepare("SELECT request_id FROM osint_calls WHERE request_id LIKE ?1")
      .bind(`checkout:${pack.id.slice(0, 20)}%`)
      .first<{ request_id: string }>();
    expect(row?.request_id).toBe(`checkout:${pack.id.slice(0, 20)}…`);
  });

  it("a failure of the page the buyer named is theirs (target_error), not the skill's", async () => {
    const t0 = Date.now();
    const pack = await grantedPack({ url: `${FIXTURE}/pages/upstream-failure` }, "ai_detector");
    await runFirstPayload(env, pack.id);
    expect((await logged(t0)).results).toEqual([
      expect.objectContaining({
        skill: "ai_detector",
        status: 502,
        outcome: "target_error",
        amount_micro: 0,
      }),
    ]);
  });
});
