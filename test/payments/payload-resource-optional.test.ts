import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpToolCall, ORIGIN } from "../helpers";

// PaymentPayload.resource is Optional in x402 v2 (specification §5.2.2): a client may leave it out.
// The EIP-3009 signature does not cover it either way, and the nonce claim is what stops a second
// use, so a payment without one is taken as made for the route it is sent to. A payment that names
// another resource is still refused (README, "Paying for a call", step 3).
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`${ORIGIN}${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );

async function offer(path: string): Promise<PaymentRequired> {
  const res = await post(path, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** A payment for `path`'s offer, with its `resource` left out. */
async function withoutResource(path: string) {
  const { payload, nonce } = unsignedPayment(await offer(path), SETTLES_OK);
  const { resource: _left, ...rest } = payload;
  const key = `${payload.accepted.network}:${payload.accepted.asset}:${SETTLES_OK}:${nonce}`.toLowerCase();
  return { payload: rest as PaymentPayload, nonce, key };
}

const ledgerRow = (key: string) =>
  env.DB.prepare("SELECT resource, amount_atomic FROM payments WHERE nonce = ?1").bind(key).first();

describe("a v2 payment without resource pays the route it is sent to", () => {
  it("over HTTP: the result, settled once, one ledger row", async () => {
    const pay = await withoutResource("/api/skills/sha256");
    const header = encodePaymentSignatureHeader(pay.payload);
    const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": header });
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await res.json<{ hex: string }>()).hex).toMatch(/^ba7816bf/);
    expect(res.headers.get("payment-response")).toBeTruthy();
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(1);
    expect(await ledgerRow(pay.key)).toMatchObject({ resource: "sha256", amount_atomic: 3000 });
    // The nonce claim still stops a second use, here or on another route at the same price.
    const again = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": header });
    expect((await again.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
    expect(await upstreamRequests(`facilitator-settle nonce=${pay.nonce}`)).toBe(1);
  });

  it("over MCP (_meta x402/payment): the result, ledger row mcp:<tool>", async () => {
    const pay = await withoutResource("/api/skills/sha256");
    const res = await app.fetch(
      mcpToolCall("sha256", { text: "abc" }, { "x402/payment": pay.payload }),
      paidEnv,
    );
    const { result } = await res.json<{ result: { isError?: boolean; structuredContent?: object } }>();
    expect(result.isError, JSON.stringify(result.structuredContent)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ hex: expect.stringMatching(/^ba7816bf/) });
    expect(await ledgerRow(pay.key)).toMatchObject({ resource: "mcp:sha256" });
  });

  it("a payment naming another resource is still refused: 402 resource_mismatch, not settled", async () => {
    const required = await offer("/api/skills/sha256");
    const { payload, nonce } = unsignedPayment(required, SETTLES_OK);
    for (const resource of [{ ...required.resource, url: `${ORIGIN}/api/skills/md5` }, {}]) {
      const header = encodePaymentSignatureHeader({ ...payload, resource } as PaymentPayload);
      const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": header });
      expect(res.status).toBe(402);
      expect((await res.json<{ reason: string }>()).reason).toBe("resource_mismatch");
    }
    expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(0);
  });
});
