import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { AppEnv, VerifiedPayment } from "../../src/env";
import { PendingAwareFacilitatorClient } from "../../src/payments/pending-settle";
import { RECEIPT_HEADER, signReceipt } from "../../src/payments/receipts";
import { transferWithAuthorization } from "../../src/payments/transfer-authorization";
import { encodePaymentResponseHeader } from "../../src/payments/x402-headers";
import { authorizationFor } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";

// Once the gate matched a payment, what it pays is the route's requirements the facilitator
// verified (x402Payment.requirements), not the payload's own `accepted`, which the payer writes:
// the receipt, the call statistics, the pending-settle memory and the idempotency key read them.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const OTHER_TOKEN = "0x0000000000000000000000000000000000000bad";
const hex = (n: number) =>
  [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`https://skills.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );

async function offer(path: string): Promise<PaymentRequired> {
  const res = await post(path, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** The claims of a receipt (compact JWS: header.payload.signature, payload base64url JSON). */
function receiptClaims(res: Response): Record<string, unknown> {
  const jws = res.headers.get(RECEIPT_HEADER);
  expect(jws).toBeTruthy();
  const payload = (jws as string).split(".")[1] as string;
  return JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/")));
}

describe("a receipt names the route's price, not the payload's accepted", () => {
  it("a payment whose accepted.extra holds more than the offer's (allowed) gets a receipt of the route's amount, asset and payee", async () => {
    const required = await offer("/api/skills/sha256");
    const route = required.accepts[0] as PaymentRequirements;
    const payment: PaymentPayload = {
      x402Version: 2,
      resource: required.resource,
      // The extra is matched as a subset: a payer may add to it, and the facilitator verifies.
      accepted: {
        ...route,
        extra: { ...route.extra, note: "the payer's own", amount: "1", asset: OTHER_TOKEN },
      },
      payload: {
        signature: `0x${"11".repeat(65)}`,
        authorization: authorizationFor(route, `0x${hex(16)}0000a001`),
      },
    };
    const res = await post(
      "/api/skills/sha256",
      { text: "abc" },
      { "payment-signature": encodePaymentSignatureHeader(payment) },
    );
    expect(res.status).toBe(200);
    expect(receiptClaims(res)).toMatchObject({
      paymentMethod: "x402",
      amount: route.amount,
      asset: USDC,
      payTo: env.PAY_TO,
    });
    expect(route.amount).toBe("3000");
  });

  const SIGNER = "0x00000000000000000000000000000000000051e5";
  it("signReceipt reads the requirements the gate matched, even where the claimed payload's accepted says otherwise", async () => {
    const route: PaymentRequirements = {
      scheme: "exact",
      network: "eip155:8453",
      asset: USDC,
      amount: "3000",
      payTo: env.PAY_TO,
      maxTimeoutSeconds: 300,
      extra: { name: "USD Coin", version: "2" },
    };
    const mini = new Hono<AppEnv>();
    mini.post("/paid", signReceipt("sha256"), (c) => {
      c.set("requestId", "req-matched");
      c.set("x402Payment", {
        requirements: route,
        payload: {
          x402Version: 2,
          accepted: route,
          payload: {
            signature: `0x${"11".repeat(65)}`,
            authorization: {
              from: SIGNER,
              to: route.payTo,
              value: "3000",
              validAfter: "0",
              validBefore: "9999999999",
              nonce: `0x${hex(32)}`,
            },
          },
        },
        v1: false,
      } as unknown as VerifiedPayment);
      c.set("paymentClaim", {
        key: "k",
        released: false,
        payment: {
          x402Version: 2,
          accepted: {
            ...route,
            amount: "1",
            asset: OTHER_TOKEN,
            payTo: "0x0000000000000000000000000000000000000bee",
          },
          payload: {},
        },
      });
      // The facilitator's answer names no amount: the receipt's is the requirements'.
      const settled = encodePaymentResponseHeader({
        success: true,
        transaction: `0x${hex(32)}`,
        network: "eip155:8453",
        payer: `0x${hex(20)}`,
      });
      return c.json({ ok: true }, 200, { "PAYMENT-RESPONSE": settled });
    });
    const res = await mini.request("https://skills.test/paid", { method: "POST" }, env);
    expect(res.status).toBe(200);
    // The payer is the authorization's signer, not the address the facilitator's answer names.
    expect(receiptClaims(res)).toMatchObject({
      amount: "3000",
      asset: USDC,
      payTo: env.PAY_TO,
      payer: SIGNER,
    });
  });
});

describe("a stored paid answer is handed back only to a signature under the route's own EIP-712 domain", () => {
  const account = privateKeyToAccount(generatePrivateKey());

  /** A payment of `route` by `account` with payment id `id`, signed under `accepted`'s domain. */
  async function paying(required: PaymentRequired, accepted: PaymentRequirements, id: string) {
    const route = required.accepts[0] as PaymentRequirements;
    const extensions = structuredClone(required.extensions ?? {}) as Record<string, unknown>;
    appendPaymentIdentifierToExtensions(extensions, id);
    const authorization = authorizationFor(route, account.address);
    const extra = accepted.extra as { name: string; version: string };
    const signature = await account.signTypedData(
      transferWithAuthorization(authorization, {
        name: extra.name,
        version: extra.version,
        chainId: Number(accepted.network.split(":")[1]),
        verifyingContract: accepted.asset as `0x${string}`,
      }),
    );
    const payment: PaymentPayload = {
      x402Version: 2,
      resource: required.resource,
      accepted,
      extensions,
      payload: { signature, authorization },
    };
    return encodePaymentSignatureHeader(payment);
  }

  it("the payer's signature for another token, with that token in accepted, proves nothing here: no replay, the gate refuses it", async () => {
    const required = await offer("/api/skills/uuid-mint");
    const route = required.accepts[0] as PaymentRequirements;
    const id = generatePaymentId();
    const body = { count: 2 };
    const paid = await post("/api/skills/uuid-mint", body, {
      "payment-signature": await paying(required, route, id),
    });
    expect(paid.status).toBe(200);
    const firstAnswer = await paid.text();
    // The same payer, id and body, signed for real under another contract's domain (as the payer
    // signs another token's transferWithAuthorization, published on chain once settled).
    const elsewhere = { ...route, asset: OTHER_TOKEN };
    const res = await post("/api/skills/uuid-mint", body, {
      "payment-signature": await paying(required, elsewhere, id),
    });
    expect(res.headers.get("x-idempotent-replay")).toBeNull();
    expect(res.status).toBe(402);
    expect(await res.text()).not.toBe(firstAnswer);
    // Signed under the route's domain, the same retry is the replay.
    const retry = await post("/api/skills/uuid-mint", body, {
      "payment-signature": await paying(required, route, id),
    });
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(firstAnswer);
  });
});

describe("a pending settlement is remembered under the requirements' network", () => {
  it("the retry after settlement_pending is answered as that pending answer whatever the payload's accepted names", async () => {
    // The facilitator double answers a payer ending in …0010 with settlement_pending, then (the
    // retry) a revert of a second broadcast: the pending transfer may still land.
    const client = new PendingAwareFacilitatorClient({ url: `${FIXTURE}/facilitator` });
    const requirements: PaymentRequirements = {
      scheme: "exact",
      network: "eip155:8453",
      asset: USDC,
      amount: "3000",
      payTo: env.PAY_TO,
      maxTimeoutSeconds: 300,
      extra: { name: "USD Coin", version: "2" },
    };
    const authorization = authorizationFor(requirements, "0x00000000000000000000000000000000000a0010");
    const payload = (accepted: PaymentRequirements): PaymentPayload => ({
      x402Version: 2,
      accepted,
      payload: { signature: `0x${"11".repeat(65)}`, authorization },
    });
    const first = await client.settle(payload({ ...requirements, network: "eip155:1" }), requirements);
    expect(first).toMatchObject({ success: false, errorReason: "settlement_pending" });
    const second = await client.settle(payload(requirements), requirements);
    expect(second).toEqual(first);
  });
});
