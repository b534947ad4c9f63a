import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { signedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpCall, ORIGIN } from "../helpers";

// Retried tools/call that never pay twice (docs/receipts-and-retries.md, "Over MCP"): a tool call
// runs the tool's HTTP route in-process (src/mcp/call.ts), so it is keyed and replayed as that
// route's call is. Against the facilitator double, which counts settles by nonce.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

/** A tools/call over /mcp, with the connection's headers `extra`. */
const callTool = async (name: string, args: unknown, meta?: Record<string, unknown>, extra = {}) =>
  (await mcpCall(app, paidEnv, name, args, meta, extra)).result;

/** A fresh authorization (new nonce) of `account` for the offer, carrying `paymentId`. */
const signed = (required: PaymentRequired, account: PrivateKeyAccount, paymentId: string) =>
  signedPayment(required, account, paymentId);

const settles = async (...nonces: string[]) => {
  let n = 0;
  for (const nonce of nonces) n += await upstreamRequests(`facilitator-settle nonce=${nonce}`);
  return n;
};

describe("retried MCP tool calls", { timeout: 30_000 }, () => {
  it("an x402 payment id is honoured when the connection also sends a card key (with no credits left)", async () => {
    const key = await keyWith(env.DB, 0, "sha256");
    const connection = { authorization: `Bearer ${key}` };
    const unpaid = await callTool("sha256", { text: "abc" }, undefined, connection);
    expect(unpaid.isError).toBe(true);
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    const account = privateKeyToAccount(generatePrivateKey());
    const id = generatePaymentId();

    const first = await signed(required, account, id);
    const paid = await callTool("sha256", { text: "abc" }, { "x402/payment": first.payload }, connection);
    expect(paid.isError).toBeFalsy();
    expect(paid._meta?.["x402/payment-response"]).toBeTruthy();

    const retry = await signed(required, account, id);
    const again = await callTool("sha256", { text: "abc" }, { "x402/payment": retry.payload }, connection);
    expect(again.isError).toBeFalsy();
    // The stored answer: the call that ran, its settlement and receipt; nothing more settled.
    expect(again._meta?.["marketplace/request-id"]).toBe(paid._meta?.["marketplace/request-id"]);
    expect(again._meta?.["marketplace/receipt"]).toBe(paid._meta?.["marketplace/receipt"]);
    expect(await settles(first.nonce, retry.nonce)).toBe(1);
    expect(again._meta?.["marketplace/idempotent-replay"]).toBe(true);
    expect(paid._meta).not.toHaveProperty("marketplace/idempotent-replay");
  });

  it('a card-credit call with _meta["marketplace/idempotency-key"]: the retry gets the stored answer, marked, and spends no second credit', async () => {
    const key = await keyWith(env.DB, 5, "uuid_mint");
    const connection = { authorization: `Bearer ${key}` };
    const meta = { "marketplace/idempotency-key": "order-42" };
    const first = await callTool("uuid_mint", { count: 2 }, meta, connection);
    expect(first.isError).toBeFalsy();
    expect(first._meta).not.toHaveProperty("marketplace/idempotent-replay");
    expect(await callsLeft(env.DB, key)).toBe(4);

    const retry = await callTool("uuid_mint", { count: 2 }, meta, connection);
    expect(retry.isError).toBeFalsy();
    // uuid_mint answers fresh ids each run: the same text proves the handler did not run again.
    expect(retry.content[0]?.text).toBe(first.content[0]?.text);
    expect(retry._meta?.["marketplace/idempotent-replay"]).toBe(true);
    expect(retry._meta?.["marketplace/request-id"]).toBe(first._meta?.["marketplace/request-id"]);
    expect(retry._meta?.["marketplace/receipt"]).toBe(first._meta?.["marketplace/receipt"]);
    expect(await callsLeft(env.DB, key)).toBe(4);

    // The same key over HTTP is the same call: the stored answer, no credit.
    const http = await app.fetch(
      new Request(`${ORIGIN}/api/skills/uuid-mint`, {
        method: "POST",
        headers: { ...connection, "idempotency-key": "order-42" },
        body: JSON.stringify({ count: 2 }),
      }),
      paidEnv,
    );
    expect(http.headers.get("x-idempotent-replay")).toBe("true");
    expect(await http.text()).toBe(first.content[0]?.text);

    // Another body under the same key is refused, not charged; another key, or none, is a new call.
    const mismatch = await callTool("uuid_mint", { count: 3 }, meta, connection);
    expect(mismatch.isError).toBe(true);
    expect(mismatch.structuredContent).toMatchObject({ reason: "idempotency_key_mismatch", status: 409 });
    expect(await callsLeft(env.DB, key)).toBe(4);
    const fresh = await callTool(
      "uuid_mint",
      { count: 2 },
      { "marketplace/idempotency-key": "order-43" },
      connection,
    );
    expect(fresh._meta).not.toHaveProperty("marketplace/idempotent-replay");
    expect(await callsLeft(env.DB, key)).toBe(3);
    // An Idempotency-Key header on the MCP POST is the connection's, not a call's: not read.
    for (let i = 0; i < 2; i++) {
      const plain = await callTool("uuid_mint", { count: 2 }, undefined, {
        ...connection,
        "idempotency-key": "conn",
      });
      expect(plain._meta).not.toHaveProperty("marketplace/idempotent-replay");
    }
    expect(await callsLeft(env.DB, key)).toBe(1);
  });

  it.each([
    ["empty", ""],
    ["256 characters", "x".repeat(256)],
    ["with a space", "order 42"],
    ["not ASCII", "commande-é"],
    ["a line break", "a\nb"],
    ["a number", 42],
    // Named, so not absent: a client sending null must not be charged again on each retry.
    ["null", null],
  ])(
    "an idempotency key that is %s is a tool error with the HTTP header's message, not charged",
    async (_n, value) => {
      const key = await keyWith(env.DB, 2, "slugify");
      const result = await callTool(
        "slugify",
        { text: "Hello" },
        { "marketplace/idempotency-key": value },
        { authorization: `Bearer ${key}` },
      );
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toEqual({
        detail: "Idempotency-Key must be 1 to 255 visible ASCII characters",
        reason: "invalid_idempotency_key",
      });
      expect(result.content[0]?.text).toContain('_meta["marketplace/idempotency-key"]');
      expect(await callsLeft(env.DB, key)).toBe(2);
    },
  );
});
