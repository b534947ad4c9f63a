import { env } from "cloudflare:test";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpToolCall, ORIGIN, type ToolResult } from "../helpers";

// A v1 payload in MCP's v2 field (`_meta["x402/payment"]`, sent on as PAYMENT-SIGNATURE) was told
// to go in X-PAYMENT, a header an MCP client cannot send. It is told to sign the v2 PaymentRequired
// its result holds, or to send a v1 X-PAYMENT value in x402-mcp's `_meta["x402.payment"]`; an HTTP
// caller still gets the X-PAYMENT advice.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

async function callTool(name: string, args: unknown, meta?: Record<string, unknown>) {
  const res = await app.fetch(mcpToolCall(name, args, meta), paidEnv);
  expect(res.status).toBe(200);
  return (await res.json<{ result: ToolResult }>()).result;
}

describe("a v1 payload sent over MCP", () => {
  it("is refused with advice an MCP client can follow, and the v2 offer to sign", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    const { payload, nonce } = unsignedPayment(required, SETTLES_OK);
    const v1 = { ...payload, x402Version: 1 } as PaymentPayload;
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": v1 });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2, reason: "invalid_x402_version" });
    const error = String(result.structuredContent?.error);
    expect(error).toMatch(/^Payment rejected: _meta\["x402\/payment"\] takes x402 v2 payloads only/);
    // Not sent to a header an MCP client cannot set: to x402-mcp's v1 key, or to sign the v2 offer.
    expect(error).toMatch(/or send an x402 v1 X-PAYMENT value in _meta\["x402\.payment"\]$/);
    expect(error).not.toMatch(/in X-PAYMENT/);
    expect(result.structuredContent?.accepts).toEqual(required.accepts);
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(0);
  });

  it("the same payload over HTTP is still pointed at X-PAYMENT", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const { payload } = unsignedPayment(unpaid.structuredContent as unknown as PaymentRequired, SETTLES_OK);
    const header = encodePaymentSignatureHeader({ ...payload, x402Version: 1 } as PaymentPayload);
    const res = await app.fetch(
      new Request(`${ORIGIN}/api/skills/sha256`, {
        method: "POST",
        headers: { "payment-signature": header },
        body: JSON.stringify({ text: "abc" }),
      }),
      paidEnv,
    );
    expect(res.status).toBe(402);
    const body = await res.json<{ reason: string; error: string }>();
    expect(body.reason).toBe("invalid_x402_version");
    expect(body.error).toMatch(/send v1 payloads in X-PAYMENT/);
  });
});
