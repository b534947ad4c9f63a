import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { signedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpToolCall, ORIGIN, type ToolResult } from "../helpers";

// A payment sent without a payment id is keyed by its own authorization
// (src/payments/idempotency-key.ts implicitKey): a client that gave up on a paid call (a timeout,
// an MCP cancel, a dropped connection) and sends the very same payment again gets the answer it
// paid for, never a refusal of a payment already settled. Payers sign for real: a replay is given
// only to the payer the signature proves. Against the facilitator double, which counts settles.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const post = (path: string, headers: Record<string, string>, body: unknown) =>
  app.fetch(
    new Request(`${ORIGIN}${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );
const settles = (nonce: string) => upstreamRequests(`facilitator-settle nonce=${nonce}`);
const ledgerRows = async (payer: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM payments WHERE payer = ?1")
    .bind(payer)
    .first<number>("n")) ?? 0;
const toolCall = async (args: unknown, meta?: Record<string, unknown>) =>
  (await (await app.fetch(mcpToolCall("sha256", args, meta), paidEnv)).json<{ result: ToolResult }>()).result;

describe("the same payment sent again, without a payment id", { timeout: 30_000 }, () => {
  it("over HTTP: the resend gets the stored answer, settled once; the authorization sent with another request is still refused as reused", async () => {
    const offer = await post("/api/skills/sha256", {}, {});
    const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
    const payer = privateKeyToAccount(generatePrivateKey());
    const { payload, nonce } = await signedPayment(required, payer);
    const header = { "payment-signature": encodePaymentSignatureHeader(payload) };
    const paid = await post("/api/skills/sha256", header, { text: "abc" });
    expect(paid.status).toBe(200);
    const answer = await paid.text();

    const again = await post("/api/skills/sha256", header, { text: "abc" });
    expect(again.status).toBe(200);
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    expect(await again.text()).toBe(answer);
    expect(await settles(nonce)).toBe(1);
    expect(await ledgerRows(payer.address)).toBe(1);

    // Another body under the same authorization is not this payment's retry: refused, not charged.
    const other = await post("/api/skills/sha256", header, { text: "abd" });
    expect(other.status).toBe(402);
    expect(await other.json()).toMatchObject({ reason: "payment_authorization_reused" });
    expect(await settles(nonce)).toBe(1);
  });

  it("over MCP: a tools/call whose client gave up (cancelled, timed out) gets its answer when the same payment is sent again", async () => {
    const unpaid = await toolCall({ text: "abc" });
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    const payer = privateKeyToAccount(generatePrivateKey());
    const { payload, nonce } = await signedPayment(required, payer);
    // The first call runs, settles and answers; its client has stopped listening.
    const first = await toolCall({ text: "abc" }, { "x402/payment": payload });
    expect(first.isError).toBeFalsy();
    expect(await settles(nonce)).toBe(1);

    const retry = await toolCall({ text: "abc" }, { "x402/payment": payload });
    expect(retry.isError).toBeFalsy();
    expect(retry.structuredContent).toEqual(first.structuredContent);
    expect(await settles(nonce)).toBe(1);
    expect(await ledgerRows(payer.address)).toBe(1);
  });
});
