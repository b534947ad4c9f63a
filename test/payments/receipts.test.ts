import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import {
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  type JWSSignedOffer,
  verifyOfferSignatureJWS,
} from "@x402/extensions/offer-receipt";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with scripts/verify-receipt.mjs
import { findReceipt, verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { FIXTURE } from "../fixtures/upstream-requests";

// Signed offers in the 402 and signed receipts on paid answers (src/payments/receipts.ts), against
// the facilitator double; the CLI on the real chain is in test/e2e/receipts.test.ts.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const hex = (n: number) =>
  [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");
const KID = "did:web:skills.test#test-1";

const fetchApp = (path: string, init?: RequestInit, e: object = paidEnv) =>
  app.fetch(new Request(`https://skills.test${path}`, init), e);

async function publishedKey(): Promise<JsonWebKey> {
  const res = await fetchApp("/.well-known/did.json");
  expect(res.status).toBe(200);
  const doc = await res.json<{
    id: string;
    verificationMethod: { id: string; publicKeyJwk: JsonWebKey }[];
  }>();
  expect(doc.id).toBe("did:web:skills.test");
  const method = doc.verificationMethod.find((m) => m.id === KID);
  expect(method?.publicKeyJwk).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA" });
  expect(method?.publicKeyJwk).not.toHaveProperty("d");
  return method?.publicKeyJwk as JsonWebKey;
}

async function paidCall(path: string, body: unknown, version: 1 | 2 = 2) {
  const unpaid = await fetchApp(path, { method: "POST", body: "{}" });
  const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
  const accepted = required.accepts[0] as PaymentRequirements;
  const payload: PaymentPayload = {
    x402Version: 2,
    accepted,
    resource: required.resource,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: `0x${hex(16)}0000a001`,
        to: accepted.payTo,
        value: accepted.amount,
        nonce: `0x${hex(32)}`,
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 600),
      },
    },
  };
  const res = await fetchApp(path, {
    method: "POST",
    headers:
      version === 2
        ? { "payment-signature": encodePaymentSignatureHeader(payload) }
        : {
            "x-payment": btoa(
              JSON.stringify({ x402Version: 1, scheme: "exact", network: "base", payload: payload.payload }),
            ),
          },
    body: JSON.stringify(body),
  });
  return { res, payer: (payload.payload.authorization as { from: string }).from, accepted };
}

const sha256Hex = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

// Paid calls build the x402 middleware and talk to the double: generous on a busy machine.
describe("signed offers and receipts", { timeout: 30_000 }, () => {
  it("the 402 carries a signed offer for its price, verifiable with the did:web key", async () => {
    const res = await fetchApp("/api/skills/sha256", { method: "POST", body: "{}" });
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
    const offers = extractOffersFromPaymentRequired(required);
    expect(offers).toHaveLength(1);
    const offer = await verifyOfferSignatureJWS(offers[0] as JWSSignedOffer, await publishedKey());
    const accepted = required.accepts[0] as PaymentRequirements;
    expect(offer).toMatchObject({
      version: 1,
      resourceUrl: "https://skills.test/api/skills/sha256",
      scheme: "exact",
      network: accepted.network,
      asset: accepted.asset,
      payTo: accepted.payTo,
      amount: accepted.amount,
    });
    expect(offer.validUntil).toBeGreaterThan(Date.now() / 1000);
    expect(extractJWSHeader((offers[0] as JWSSignedOffer).signature)).toEqual({ alg: "EdDSA", kid: KID });
  });

  it("a settled answer carries a receipt over its exact bytes, in X-Payment-Receipt and in PAYMENT-RESPONSE", async () => {
    const { res, payer, accepted } = await paidCall("/api/skills/sha256", { text: "abc" });
    expect(res.status).toBe(200);
    const body = new Uint8Array(await res.arrayBuffer());
    const jws = res.headers.get("x-payment-receipt") as string;
    expect(extractReceiptFromResponse(res)).toEqual({ format: "jws", signature: jws });
    const claims = await verifyReceipt(jws, { jwk: await publishedKey(), body });
    expect(claims).toMatchObject({
      version: 1,
      paymentMethod: "x402",
      network: accepted.network,
      resourceUrl: "https://skills.test/api/skills/sha256",
      resource: "sha256",
      payer,
      amount: accepted.amount,
      asset: accepted.asset,
      payTo: accepted.payTo,
      status: 200,
      contentType: "application/json",
      requestId: res.headers.get("x-request-id"),
      bodySha256: await sha256Hex(body),
    });
    expect(claims.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Math.abs(claims.issuedAt - Date.now() / 1000)).toBeLessThan(60);

    // One byte changed in the body: the receipt no longer vouches for it.
    const tampered = body.slice();
    tampered[10] = (tampered[10] as number) ^ 0x01;
    await expect(verifyReceipt(jws, { jwk: await publishedKey(), body: tampered })).rejects.toThrow(
      /body does not match/,
    );
    // A receipt edited to claim another body fails the signature.
    const [h, p, s] = jws.split(".");
    const forged = JSON.parse(atob((p as string).replace(/-/g, "+").replace(/_/g, "/")));
    forged.bodySha256 = await sha256Hex(tampered);
    const forgedPayload = btoa(JSON.stringify(forged))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    await expect(verifyReceipt(`${h}.${forgedPayload}.${s}`, { jwk: await publishedKey() })).rejects.toThrow(
      /bad signature/,
    );
    // The CLI finds the receipt in a saved header dump or in the PAYMENT-RESPONSE value.
    expect(findReceipt(`HTTP/1.1 200 OK\nx-payment-receipt: ${jws}\n`)).toBe(jws);
    expect(findReceipt(res.headers.get("payment-response") as string)).toBe(jws);
  });

  it("an x402 v1 (X-PAYMENT) call gets the same receipt", async () => {
    const { res, payer, accepted } = await paidCall("/api/skills/sha256", { text: "v1" }, 1);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-payment-response")).toBeTruthy();
    const body = new Uint8Array(await res.arrayBuffer());
    const claims = await verifyReceipt(res.headers.get("x-payment-receipt"), {
      jwk: await publishedKey(),
      body,
    });
    expect(claims).toMatchObject({
      paymentMethod: "x402",
      network: accepted.network,
      payer,
      amount: accepted.amount,
    });
  });

  it("a card-credit call gets a card_credit receipt: same key, no transaction", async () => {
    const key = newApiKey();
    const keyHash = await hashKey(key);
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 2, 2, 0)",
    )
      .bind(crypto.randomUUID(), keyHash)
      .run();
    const res = await fetchApp("/api/skills/slugify", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ text: "Hello Receipts" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("payment-response")).toBeNull();
    const body = new Uint8Array(await res.arrayBuffer());
    const claims = await verifyReceipt(res.headers.get("x-payment-receipt"), {
      jwk: await publishedKey(),
      body,
    });
    expect(claims).toMatchObject({
      paymentMethod: "card_credit",
      network: "card_credit",
      payer: `mk_sha256:${keyHash}`,
      credits: 1,
      resource: "slugify",
      requestId: res.headers.get("x-request-id"),
    });
    expect(claims).not.toHaveProperty("transaction");
  });

  it("unpaid and failed answers carry no receipt", async () => {
    const free = await fetchApp("/api/skills/sha256", { method: "POST", body: '{"text":"abc"}' }, env);
    expect(free.status).toBe(200);
    expect(free.headers.get("x-payment-receipt")).toBeNull();
    const { res } = await paidCall("/api/skills/sha256", { text: 5 });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-payment-receipt")).toBeNull();
  });

  it("the key is also a JWKS; without a configured key there are no offers or receipts and did.json says so", async () => {
    const jwks = await (await fetchApp("/.well-known/jwks.json")).json<{ keys: JsonWebKey[] }>();
    expect(jwks.keys).toEqual([await publishedKey()]);

    const keyless = { ...paidEnv, RECEIPT_SIGNING_KEY: "" };
    const did = await fetchApp("/.well-known/did.json", undefined, keyless);
    expect(did.status).toBe(503);
    expect((await did.json<{ detail: string }>()).detail).toMatch(/not configured/);
    const res = await fetchApp("/api/skills/sha256", { method: "POST", body: "{}" }, keyless);
    const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
    expect(required.extensions).not.toHaveProperty("offer-receipt");
    expect(required.extensions).toHaveProperty("payment-identifier");
  });
});
