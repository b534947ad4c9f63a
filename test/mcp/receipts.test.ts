import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with scripts/verify-receipt.mjs
import { verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";
import { createApp } from "../../src/app";
import { hashKey } from "../../src/payments/credits";
import { signedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";
import { mcpCall, ORIGIN } from "../helpers";

// Receipts of MCP tool calls (src/mcp/call.ts, src/payments/receipts.ts): every paid result holds
// one a buyer can check, naming what the ledger and the result name. Against the facilitator double.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

/** A tools/call over /mcp: the result, and the X-Request-Id of the MCP POST itself. */
const callTool = (name: string, args: unknown, meta?: Record<string, unknown>, extra = {}) =>
  mcpCall(app, paidEnv, name, args, meta, extra);

async function publishedKey(): Promise<JsonWebKey> {
  const doc = await (await app.fetch(new Request(`${ORIGIN}/.well-known/did.json`), paidEnv)).json<{
    verificationMethod: { publicKeyJwk: JsonWebKey }[];
  }>();
  return doc.verificationMethod[0]?.publicKeyJwk as JsonWebKey;
}

async function cardKey(skill: string) {
  const key = `mk_${crypto.randomUUID().replaceAll("-", "")}`;
  const hash = await hashKey(key);
  await env.DB.prepare(
    "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, ?3, 5, 5, 0)",
  )
    .bind(crypto.randomUUID(), hash, skill)
    .run();
  return { key, hash };
}

const utf8 = (text: string) => new TextEncoder().encode(text);

describe("receipts of MCP tool calls", { timeout: 30_000 }, () => {
  it("a card-credit call carries its receipt in _meta, over the bytes of its text, as over HTTP", async () => {
    const { key, hash } = await cardKey("slugify");
    const { result, outerRequestId } = await callTool("slugify", { text: "Hello MCP" }, undefined, {
      authorization: `Bearer ${key}`,
    });
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    const jws = result._meta?.["marketplace/receipt"];
    expect(typeof jws).toBe("string");
    const text = result.content[0]?.text as string;
    const claims = await verifyReceipt(jws, { jwk: await publishedKey(), body: utf8(text) });
    expect(claims).toMatchObject({
      paymentMethod: "card_credit",
      payer: `mk_sha256:${hash}`,
      resourceUrl: `${ORIGIN}/api/skills/slugify`,
      // The ledger's resource and a request id the result shows (not the MCP POST's own).
      resource: "mcp:slugify",
      requestId: result._meta?.["marketplace/request-id"],
    });
    expect(claims.requestId).not.toBe(outerRequestId);
    expect(result._meta).not.toHaveProperty("marketplace/receipt-note");
  });

  it("an x402 call: the same receipt in _meta and in x402/payment-response; resource and request id are the ledger row's; a replay names the call that ran", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const paymentId = generatePaymentId();
    const unpaid = await callTool("sha256", { text: "abc" });
    const required = unpaid.result.structuredContent as unknown as PaymentRequired;
    const pay = await signedPayment(required, account, paymentId);
    const { result } = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload });
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    const jws = result._meta?.["marketplace/receipt"] as string;
    const settle = result._meta?.["x402/payment-response"] as {
      extensions?: Record<string, { info: { receipt: { signature: string } } }>;
    };
    expect(settle.extensions?.["offer-receipt"]?.info.receipt.signature).toBe(jws);
    const claims = await verifyReceipt(jws, {
      jwk: await publishedKey(),
      body: utf8(result.content[0]?.text as string),
    });
    const row = await env.DB.prepare("SELECT request_id, resource FROM payments WHERE nonce = ?1")
      .bind(pay.key)
      .first<{ request_id: string; resource: string }>();
    expect(row).toEqual({ request_id: result._meta?.["marketplace/request-id"], resource: "mcp:sha256" });
    expect(claims).toMatchObject({ resource: row?.resource, requestId: row?.request_id });

    // A retry with the same payment id gets the stored answer and receipt: the request id shown is
    // the call that ran (the one the receipt and the ledger name), not the retry's.
    const retry = await signedPayment(required, account, paymentId);
    const replayed = await callTool("sha256", { text: "abc" }, { "x402/payment": retry.payload });
    expect(replayed.result._meta?.["marketplace/receipt"]).toBe(jws);
    expect(replayed.result._meta?.["marketplace/request-id"]).toBe(row?.request_id);
  });

  it("agents.json names the _meta keys tools/call really reads and writes, for x402 and for card credits", async () => {
    const doc = await (await app.fetch(new Request(`${ORIGIN}/agents.json`), paidEnv)).json<{
      mcp: {
        payment: {
          x402: { request_meta: string; response_meta: string };
          receipt_meta: string;
          request_id_meta: string;
        };
      };
    }>();
    const { x402, receipt_meta, request_id_meta } = doc.mcp.payment;
    // The payment is read under the published key: paid, not offered again.
    const account = privateKeyToAccount(generatePrivateKey());
    const unpaid = await callTool("sha256", { text: "names" });
    const required = unpaid.result.structuredContent as unknown as PaymentRequired;
    const pay = await signedPayment(required, account);
    const { result } = await callTool("sha256", { text: "names" }, { [x402.request_meta]: pay.payload });
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    // The result is written under the published keys, and under no other.
    expect(result._meta?.[x402.response_meta]).toMatchObject({ success: true });
    const jws = result._meta?.[receipt_meta] as string;
    const claims = await verifyReceipt(jws, {
      jwk: await publishedKey(),
      body: utf8(result.content[0]?.text as string),
    });
    expect(claims.requestId).toBe(result._meta?.[request_id_meta]);
    expect(Object.keys(result._meta ?? {}).sort()).toEqual(
      [x402.response_meta, receipt_meta, request_id_meta].sort(),
    );
    // A card-credit call: the same receipt and request id keys.
    const { key } = await cardKey("slugify");
    const card = await callTool("slugify", { text: "names" }, undefined, { authorization: `Bearer ${key}` });
    expect(card.result._meta?.[receipt_meta]).toEqual(expect.any(String));
    expect(card.result._meta?.[request_id_meta]).toEqual(expect.any(String));
  });

  it("a result over 1 MiB says in _meta and in its text that its receipt cannot be checked on it, and how to get one that can", async () => {
    const { key } = await cardKey("json_sort");
    const data = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`key${i}`, "v".repeat(10)]));
    const { result } = await callTool("json_sort", { data }, undefined, { authorization: `Bearer ${key}` });
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    expect(result._meta?.["marketplace/receipt"]).toEqual(expect.any(String));
    const note = result._meta?.["marketplace/receipt-note"] as string;
    expect(note).toMatch(
      /this result cannot be checked against its receipt\. .* call POST \/api\/skills\/json-sort over HTTP/,
    );
    expect(result.content[0]?.text).toMatch(
      /^The result \(\d+ characters of JSON\) is in structuredContent\. /,
    );
    expect(result.content[0]?.text).toContain(note);
  });
});
