import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
// @ts-expect-error plain JS helper shared with scripts/verify-receipt.mjs
import { verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";
import { createApp } from "../../src/app";
import { ORIGIN } from "../helpers";
import { FACILITATOR, PARTNER_HOSTS, stubNetwork } from "./network";

// Partner try calls get the same idempotent retries and receipts as skills. Partners and the
// facilitator are answered inside the isolate by the stand-in network of test/partners/network.ts.
const tryEnv = {
  ...env,
  FACILITATOR_URL: FACILITATOR,
  PARTNER_BASE_URLS: JSON.stringify({ pricefeed: PARTNER_HOSTS.pricefeed }),
};
const pricefeed = () => Response.json({ prices: { btc: 1, eth: 2 }, nonce: crypto.randomUUID() });

afterEach(() => {
  vi.restoreAllMocks();
});

const send = (path: string, headers: Record<string, string> = {}) =>
  createApp().fetch(new Request(`${ORIGIN}${path}`, { headers }), tryEnv);

describe("partner try calls: receipts and idempotent retries", { timeout: 30_000 }, () => {
  it("a paid try call is signed over its body; a retry with the same payment id is replayed, paid once", async () => {
    const { partnerCalls, settled } = stubNetwork(pricefeed);
    const path = "/api/partners/pricefeed/try/price";
    const signer = privateKeyToAccount(generatePrivateKey());
    const paymentId = generatePaymentId();
    const pay = async () => {
      const challenge = await send(path);
      expect(challenge.status).toBe(402);
      const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
      const client = registerExactEvmScheme(new x402Client(), { signer });
      const payload = await client.createPaymentPayload(required);
      appendPaymentIdentifierToExtensions(payload.extensions ?? {}, paymentId);
      return send(path, { "payment-signature": encodePaymentSignatureHeader(payload) });
    };
    const first = await pay();
    expect(first.status).toBe(200);
    const body = new Uint8Array(await first.arrayBuffer());
    const did = await (await send("/.well-known/did.json")).json<{
      verificationMethod: { publicKeyJwk: JsonWebKey }[];
    }>();
    const claims = await verifyReceipt(first.headers.get("x-payment-receipt"), {
      jwk: did.verificationMethod[0]?.publicKeyJwk,
      body,
    });
    expect(claims).toMatchObject({
      resource: "partner:pricefeed/price",
      paymentMethod: "x402",
      payer: signer.address,
      resourceUrl: `${ORIGIN}${path}`,
    });

    const retry = await pay();
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(new Uint8Array(await retry.arrayBuffer())).toEqual(body);
    expect(partnerCalls).toHaveLength(1);
    expect(settled).toHaveLength(1);
  });
});
