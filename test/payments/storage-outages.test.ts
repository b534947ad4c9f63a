import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// D1 or KV failing around a paid call, made to fail with triggers (D1) or a binding double (KV),
// against the facilitator double (test/fixtures/facilitator-double.mjs, which settles any ordinary
// payer: these end in none of its special suffixes). Nothing is charged for a call that cannot be
// guarded, and no storage failure of ours is answered as a 500, or as a settlement that never
// happened.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const triggers: string[] = [];

afterEach(async () => {
  for (const name of triggers.splice(0)) await env.DB.prepare(`DROP TRIGGER IF EXISTS ${name}`).run();
});

/** A trigger that refuses `when` on `table` (RAISE ABORT), dropped after the test. */
async function refuse(name: string, when: string) {
  triggers.push(name);
  await env.DB.prepare(
    `CREATE TRIGGER IF NOT EXISTS ${name} ${when} BEGIN SELECT RAISE(ABORT, 'd1 down'); END`,
  ).run();
}

const request = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  new Request(`https://skills.test${path}`, { method: "POST", headers, body: JSON.stringify(body) });
const post = (path: string, body: unknown, headers: Record<string, string> = {}, ctx?: ExecutionContext) =>
  app.fetch(request(path, body, headers), paidEnv, ctx);

/** A payment for `path` from `from`, with its nonce and its claim's key. */
async function payment(path: string, from: string) {
  const offer = await post(path, {});
  expect(offer.status).toBe(402);
  const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
  const { payload, nonce } = unsignedPayment(required, from);
  const { network, asset } = payload.accepted;
  return {
    header: encodePaymentSignatureHeader(payload),
    nonce,
    key: `${network}:${asset}:${from}:${nonce}`.toLowerCase(),
  };
}

const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1").bind(key).first<{ status: string }>();

describe("a claim D1 cannot free after an unpaid answer", () => {
  it("a 422 from the handler stays the 422, and the authorization is freed once D1 takes the release", async () => {
    const from = "0x00000000000000000000000000000000000c0001";
    await refuse("release_down", `BEFORE DELETE ON payment_nonces WHEN OLD.payer = '${from}'`);
    const path = "/api/skills/json-schema-validate";
    const pay = await payment(path, from);
    const ctx = createExecutionContext();
    // A lookahead RE2 cannot run: the handler's 422, after the claim (the body itself is valid).
    const res = await post(
      path,
      { instance: "a", schema: { pattern: "(?=a)a" } },
      { "payment-signature": pay.header },
      ctx,
    );
    expect(res.status).toBe(422);
    expect(res.headers.get("payment-response")).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
    // Still held while D1 refuses; never marked as an unconfirmed settlement.
    expect(await nonceRow(pay.key)).toEqual({ status: "running" });
    await env.DB.prepare("DROP TRIGGER IF EXISTS release_down").run();
    await waitOnExecutionContext(ctx);
    expect(await nonceRow(pay.key)).toBeNull();
    // The buyer's retry with the same authorization and a body that validates runs and pays.
    const retry = await post(
      path,
      { instance: "a", schema: { type: "string" } },
      { "payment-signature": pay.header },
    );
    expect(retry.status).toBe(200);
    expect(await nonceRow(pay.key)).toEqual({ status: "settled" });
  });
});

describe("an Idempotency-Key D1 cannot free after an unpaid answer", () => {
  it("a 422 stays the 422, and the key is freed once D1 takes the release", async () => {
    const key = await keyWith(env.DB, 2, "uuid_mint");
    const cardEnv = { ...paidEnv, X402_ENABLED: "false" };
    const path = "/api/skills/uuid-mint?outage=release";
    await refuse("idem_release_down", `BEFORE DELETE ON idempotent_results WHEN OLD.path = '${path}'`);
    const send = (body: unknown, ctx?: ExecutionContext) =>
      app.fetch(
        request(path, body, { authorization: `Bearer ${key}`, "idempotency-key": "release-down" }),
        cardEnv,
        ctx,
      );
    const ctx = createExecutionContext();
    const res = await send({ count: "two" }, ctx);
    expect(res.status).toBe(422);
    await env.DB.prepare("DROP TRIGGER IF EXISTS idem_release_down").run();
    await waitOnExecutionContext(ctx);
    // Freed: the corrected request runs under the same key (a key still held would be a 409).
    const fixed = await send({ count: 2 });
    expect(fixed.status).toBe(200);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});

describe("a claim D1 cannot take: 503, nothing charged", () => {
  it("the authorization's claim fails: 503 payments_unavailable with Retry-After, no settlement, the handler not run", async () => {
    const from = "0x00000000000000000000000000000000000c0012";
    await refuse("claim_down", `BEFORE INSERT ON payment_nonces WHEN NEW.payer = '${from}'`);
    const pay = await payment("/api/skills/sha256", from);
    const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": pay.header });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeTruthy();
    const body = await res.json<{ reason: string; detail: string }>();
    expect(body.reason).toBe("payments_unavailable");
    expect(body.detail).toMatch(/Nothing was charged/);
    expect(body).not.toHaveProperty("hex");
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(0);
    // Once D1 is back, the same payment goes through.
    await env.DB.prepare("DROP TRIGGER IF EXISTS claim_down").run();
    const again = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": pay.header });
    expect(again.status).toBe(200);
    expect(await nonceRow(pay.key)).toEqual({ status: "settled" });
  });

  it("the Idempotency-Key's claim fails: the same 503, no credit spent", async () => {
    const key = await keyWith(env.DB, 2, "uuid_mint");
    const cardEnv = { ...paidEnv, X402_ENABLED: "false" };
    const path = "/api/skills/uuid-mint?outage=claim";
    await refuse("idem_claim_down", `BEFORE INSERT ON idempotent_results WHEN NEW.path = '${path}'`);
    const send = () =>
      app.fetch(
        request(path, { count: 2 }, { authorization: `Bearer ${key}`, "idempotency-key": "claim-down" }),
        cardEnv,
      );
    const res = await send();
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeTruthy();
    expect(await res.json()).toMatchObject({ reason: "payments_unavailable" });
    expect(await callsLeft(env.DB, key)).toBe(2);
    await env.DB.prepare("DROP TRIGGER IF EXISTS idem_claim_down").run();
    expect((await send()).status).toBe(200);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});

describe("a stored answer KV cannot read", () => {
  it("the retry gets 503 idempotent_result_unavailable with Retry-After, then the answer once KV reads again", async () => {
    const key = await keyWith(env.DB, 2, "uuid_mint");
    const cardEnv = { ...paidEnv, X402_ENABLED: "false" };
    const send = (e: object) =>
      app.fetch(
        request(
          "/api/skills/uuid-mint",
          { count: 2 },
          { authorization: `Bearer ${key}`, "idempotency-key": "kv-down" },
        ),
        e,
      );
    const first = await send(cardEnv);
    expect(first.status).toBe(200);
    const body = await first.text();
    // As an answer over 16 KiB is kept: its bytes in KV, the row naming them.
    const kvKey = `idempotent:test-${crypto.randomUUID()}`;
    await env.KV.put(kvKey, body);
    await env.DB.prepare("UPDATE idempotent_results SET body = NULL, body_kv = ?2 WHERE request_id = ?1")
      .bind(first.headers.get("x-request-id"), kvKey)
      .run();
    const kvDown = new Proxy(env.KV, {
      get(target, prop) {
        if (prop === "get") return () => Promise.reject(new Error("KV GET failed: 503 Service Unavailable"));
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const retry = await send({ ...cardEnv, KV: kvDown });
    expect(retry.status).toBe(503);
    expect(retry.headers.get("retry-after")).toBeTruthy();
    expect(await retry.json()).toMatchObject({
      reason: "idempotent_result_unavailable",
      request_id: first.headers.get("x-request-id"),
    });
    const later = await send(cardEnv);
    expect(later.status).toBe(200);
    expect(later.headers.get("x-idempotent-replay")).toBe("true");
    expect(await later.text()).toBe(body);
  });
});
