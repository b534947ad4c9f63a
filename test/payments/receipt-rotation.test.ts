import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  extractOffersFromPaymentRequired,
  type JWSSignedOffer,
  verifyOfferSignatureJWS,
} from "@x402/extensions/offer-receipt";
import { afterEach, describe, expect, it, vi } from "vitest";
// @ts-expect-error plain JS helper shared with scripts/verify-receipt.mjs
import { resolveKey, verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { FIXTURE } from "../fixtures/upstream-requests";

// Key rotation (RECEIPT_RETIRED_KEYS, src/payments/receipt-key.ts): receipts signed before a
// rotation, including idempotent replays served after it, still verify against the live did.json.
const app = createApp();
const BASE = "https://skills.test";
const paidEnv = { ...env, FREE_BETA: "false" };

async function newSigningKey(kid: string) {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const { d, x } = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  return JSON.stringify({ kty: "OKP", crv: "Ed25519", d, x, kid });
}

const fetchApp = (path: string, e: object, init?: RequestInit) =>
  app.fetch(new Request(`${BASE}${path}`, init), e);

/** The shipped verifier, reading did.json from the app under `e`. */
const fetchFrom = (e: object) => (url: string, init?: RequestInit) => app.fetch(new Request(url, init), e);

async function jwks(e: object) {
  const res = await fetchApp("/.well-known/jwks.json", e);
  expect(res.status).toBe(200);
  return (await res.json<{ keys: (JsonWebKey & { kid: string; x: string })[] }>()).keys;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("receipt key rotation", { timeout: 30_000 }, () => {
  it("after a rotation the old key is still published, so a receipt it signed (and its replay) still verifies", async () => {
    const before = paidEnv;
    const [oldKey] = await jwks(before);
    expect(oldKey?.kid).toBe("did:web:skills.test#test-1");

    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 3, 3, 0)",
    )
      .bind(crypto.randomUUID(), await hashKey(key))
      .run();
    const call = (e: object) =>
      fetchApp("/api/skills/slugify", e, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "idempotency-key": `rotation-${crypto.randomUUID()}` },
        body: JSON.stringify({ text: "Before Rotation" }),
      });
    const idempotencyKey = `rotation-${crypto.randomUUID()}`;
    const paidBefore = await fetchApp("/api/skills/slugify", before, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "idempotency-key": idempotencyKey },
      body: JSON.stringify({ text: "Before Rotation" }),
    });
    expect(paidBefore.status).toBe(200);
    const oldReceipt = paidBefore.headers.get("x-payment-receipt") as string;
    const body = new Uint8Array(await paidBefore.arrayBuffer());

    // The rotation: a new signing key, the old public key (as jwks.json published it) retired.
    const after = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: await newSigningKey("test-2"),
      RECEIPT_RETIRED_KEYS: JSON.stringify([oldKey]),
    };
    const keys = await jwks(after);
    expect(keys.map((k) => k.kid)).toEqual(["did:web:skills.test#test-2", "did:web:skills.test#test-1"]);
    const doc = await (await fetchApp("/.well-known/did.json", after)).json<{
      verificationMethod: { id: string }[];
      assertionMethod: string[];
    }>();
    expect(doc.verificationMethod.map((m) => m.id)).toEqual(keys.map((k) => k.kid));
    expect(doc.assertionMethod).toEqual(keys.map((k) => k.kid));

    const found = await resolveKey(oldReceipt, { baseUrl: BASE, fetchImpl: fetchFrom(after) });
    await expect(verifyReceipt(oldReceipt, { jwk: found.jwk, body, did: found.did })).resolves.toMatchObject({
      paymentMethod: "card_credit",
    });

    // The retry served after the rotation carries the receipt of the call that ran: it verifies too.
    const replay = await fetchApp("/api/skills/slugify", after, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "idempotency-key": idempotencyKey },
      body: JSON.stringify({ text: "Before Rotation" }),
    });
    expect(replay.headers.get("x-idempotent-replay")).toBe("true");
    expect(replay.headers.get("x-payment-receipt")).toBe(oldReceipt);

    // New answers are signed with the new key, found in the same document.
    const fresh = await call(after);
    const freshReceipt = fresh.headers.get("x-payment-receipt") as string;
    const freshKey = await resolveKey(freshReceipt, { baseUrl: BASE, fetchImpl: fetchFrom(after) });
    expect(freshKey.kid).toBe("did:web:skills.test#test-2");
    await verifyReceipt(freshReceipt, {
      jwk: freshKey.jwk,
      body: new Uint8Array(await fresh.arrayBuffer()),
      did: freshKey.did,
    });
  });

  it("a new key under the same fragment signs the 402's offers at once (the isolate's gate is not kept for the old key)", async () => {
    const facilitated = { ...paidEnv, FACILITATOR_URL: `${FIXTURE}/facilitator` };
    const offerUnder = async (e: object) => {
      const res = await fetchApp("/api/skills/sha256", e, { method: "POST", body: "{}" });
      expect(res.status).toBe(402);
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
      return extractOffersFromPaymentRequired(required)[0] as JWSSignedOffer;
    };
    const before = { ...facilitated, RECEIPT_SIGNING_KEY: await newSigningKey("same") };
    const after = { ...facilitated, RECEIPT_SIGNING_KEY: await newSigningKey("same") };
    const [oldKey] = await jwks(before);
    await verifyOfferSignatureJWS(await offerUnder(before), oldKey as JsonWebKey);
    const [newKey] = await jwks(after);
    expect(newKey?.kid).toBe(oldKey?.kid);
    expect(newKey?.x).not.toBe(oldKey?.x);
    await expect(
      verifyOfferSignatureJWS(await offerUnder(after), newKey as JsonWebKey),
    ).resolves.toMatchObject({
      resourceUrl: `${BASE}/api/skills/sha256`,
    });
  });

  it("the list may name the current key (set before the rotation): it is listed once", async () => {
    const [current] = await jwks(paidEnv);
    const fragmentOnly = { kty: "OKP", crv: "Ed25519", x: current?.x, kid: "test-1" };
    expect(await jwks({ ...paidEnv, RECEIPT_RETIRED_KEYS: JSON.stringify([fragmentOnly, current]) })).toEqual(
      [current],
    );
  });

  it("a list that cannot be published is logged and left out; the current key is still published", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const [current] = await jwks(paidEnv);
    const other = JSON.parse(await newSigningKey("old"));
    const bad = [
      "not json",
      JSON.stringify({ keys: [] }),
      JSON.stringify([other]), // a private key: never published
      JSON.stringify([{ ...current, x: other.x }]), // the current kid with another key
      JSON.stringify([{ kty: "OKP", crv: "Ed25519", x: other.x, kid: "did:web:elsewhere.example#old" }]),
    ];
    for (const value of bad) {
      expect(await jwks({ ...paidEnv, RECEIPT_RETIRED_KEYS: value }), value).toEqual([current]);
    }
    const errors = logged.mock.calls.map((c) => String(c[0]));
    expect(errors).toHaveLength(bad.length);
    expect(errors.join("\n")).toMatch(/holds a private key/);
  });
});
