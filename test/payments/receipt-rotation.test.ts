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
import { keyWith } from "../fixtures/credits";
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

/**
 * A stranger's check of a receipt, from docs/receipts-and-retries.md alone, with WebCrypto (not
 * our verifier): the did.json of the kid's did (served by the app under `e`), the verification
 * method whose id is the JWS kid, an Ed25519 signature over `header.payload`, and the body's SHA-256.
 * What it found wrong, or the claims.
 */
async function strangerCheck(jws: string, body: Uint8Array, e: object) {
  const [h, p, s] = jws.split(".") as [string, string, string];
  const b64 = (t: string) =>
    Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/")), (ch) => ch.charCodeAt(0));
  const header = JSON.parse(new TextDecoder().decode(b64(h))) as { alg: string; kid: string };
  const claims = JSON.parse(new TextDecoder().decode(b64(p))) as { bodySha256: string };
  const host = decodeURIComponent(header.kid.split("#")[0]?.slice("did:web:".length) ?? "");
  const doc = await (await app.fetch(new Request(`https://${host}/.well-known/did.json`), e)).json<{
    verificationMethod: { id: string; publicKeyJwk: JsonWebKey }[];
  }>();
  const method = doc.verificationMethod.find((m) => m.id === header.kid);
  if (!method) return { error: "no key" };
  const key = await crypto.subtle.importKey("jwk", method.publicKeyJwk, { name: "Ed25519" }, false, [
    "verify",
  ]);
  const signed = new TextEncoder().encode(`${h}.${p}`);
  if (header.alg !== "EdDSA" || !(await crypto.subtle.verify({ name: "Ed25519" }, key, b64(s), signed)))
    return { error: "bad signature" };
  const hash = [...new Uint8Array(await crypto.subtle.digest("SHA-256", body))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  return hash === claims.bodySha256 ? { claims } : { error: "another body" };
}

/** A card-credit call under `e`: its receipt (null if none) and the body bytes it was signed over. */
async function paidReceiptOrNot(e: object) {
  const key = await keyWith(env.DB, 1, "slugify");
  const res = await fetchApp("/api/skills/slugify", e, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ text: `Signed ${crypto.randomUUID()}` }), // each receipt its own body
  });
  expect(res.status).toBe(200);
  return { jws: res.headers.get("x-payment-receipt"), body: new Uint8Array(await res.arrayBuffer()) };
}

/** The same, for a deployment that signs: the receipt is there. */
async function paidReceipt(e: object) {
  const { jws, body } = await paidReceiptOrNot(e);
  expect(jws).toBeTruthy();
  return { jws: jws as string, body };
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
  it("a rotation that reuses the current kid leaves out only that entry: older keys' receipts still verify (WebCrypto), an unlisted key's do not", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const a = { ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("a") };
    const signedByA = await paidReceipt(a);
    const [keyA] = await jwks(a);
    const b = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: await newSigningKey("b"),
      RECEIPT_RETIRED_KEYS: JSON.stringify([keyA]),
    };
    const signedByB = await paidReceipt(b);
    const [keyB] = await jwks(b);
    expect(await strangerCheck(signedByA.jws, signedByA.body, b)).toHaveProperty("claims");

    // The next rotation with a key generated by the same command, so under the same kid "b".
    const reused = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: await newSigningKey("b"),
      RECEIPT_RETIRED_KEYS: JSON.stringify([keyA, keyB]),
    };
    expect((await jwks(reused)).map((k) => k.kid)).toEqual([
      "did:web:skills.test#b",
      "did:web:skills.test#a",
    ]);
    expect(await strangerCheck(signedByA.jws, signedByA.body, reused)).toHaveProperty("claims");
    // B's receipts name a kid that now selects another key: the log says how to bring them back.
    expect(await strangerCheck(signedByB.jws, signedByB.body, reused)).toEqual({ error: "bad signature" });
    expect(logged.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
      /entry 1 left out: did:web:skills.test#b is the current RECEIPT_SIGNING_KEY's kid.*new kid/,
    );

    // Put again with a kid of its own: every earlier receipt verifies once more.
    const fixed = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: await newSigningKey("c"),
      RECEIPT_RETIRED_KEYS: JSON.stringify([keyA, keyB]),
    };
    for (const r of [signedByA, signedByB])
      expect(await strangerCheck(r.jws, r.body, fixed)).toHaveProperty("claims");
    const fresh = await paidReceipt(fixed);
    expect(await strangerCheck(fresh.jws, fresh.body, fixed)).toHaveProperty("claims");
    expect(await strangerCheck(fresh.jws, signedByA.body, fixed)).toEqual({ error: "another body" });

    // A key never listed: its receipts find no key, or, under a listed kid, fail the signature.
    const unlisted = await paidReceipt({ ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("x") });
    expect(await strangerCheck(unlisted.jws, unlisted.body, fixed)).toEqual({ error: "no key" });
    const impostor = await paidReceipt({ ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("a") });
    expect(await strangerCheck(impostor.jws, impostor.body, fixed)).toEqual({ error: "bad signature" });
  });

  it("an entry that cannot be published (a private half) is left out alone: the other retired keys stay published", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const old = { ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("old") };
    const signed = await paidReceipt(old);
    const [oldKey] = await jwks(old);
    const leaked = JSON.parse(await newSigningKey("leaked"));
    const after = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: await newSigningKey("new"),
      RECEIPT_RETIRED_KEYS: JSON.stringify([oldKey, leaked]),
    };
    const keys = await jwks(after);
    expect(keys.map((k) => k.kid)).toEqual(["did:web:skills.test#new", "did:web:skills.test#old"]);
    expect(JSON.stringify(keys)).not.toContain(leaked.d);
    expect(await strangerCheck(signed.jws, signed.body, after)).toHaveProperty("claims");
    expect(logged.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
      /entry 1 left out: it holds a private key/,
    );
  });
  it("with the signing key unset or malformed (receipts off), the retired keys are still published: earlier receipts still verify", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const old = { ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("old") };
    const signed = await paidReceipt(old);
    const [oldKey] = await jwks(old);
    for (const secret of ["", '{"kty":"OKP"}']) {
      const off = { ...paidEnv, RECEIPT_SIGNING_KEY: secret, RECEIPT_RETIRED_KEYS: JSON.stringify([oldKey]) };
      expect(await jwks(off), secret).toEqual([oldKey]);
      expect(await strangerCheck(signed.jws, signed.body, off), secret).toHaveProperty("claims");
      // Nothing is signed meanwhile: the 402 has no offers, a paid answer no receipt.
      expect((await paidReceiptOrNot(off)).jws, secret).toBeNull();
    }
    expect(logged.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(/receipt signing key unusable/);
    // Nothing to publish at all: still the 503 that says receipts are off.
    const res = await fetchApp("/.well-known/did.json", { ...paidEnv, RECEIPT_SIGNING_KEY: "" });
    expect(res.status).toBe(503);
  });
});

describe("receipt key rotation: the next key published ahead, and entries that are not public keys", () => {
  it("the next key listed before the switch: each key once before and after, and a did.json cached before the switch verifies the new key's receipts", async () => {
    const a = { ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey("next-a") };
    const signedByA = await paidReceipt(a);
    const [keyA] = await jwks(a);
    const nextSecret = await newSigningKey("next-b");
    const { d: _private, ...keyB } = JSON.parse(nextSecret);
    const list = JSON.stringify([keyA, keyB]);

    // Step 2 (docs/OPERATIONS.md): the current key and the next one's public half, deployed ahead.
    const ahead = { ...a, RECEIPT_RETIRED_KEYS: list };
    const before = await jwks(ahead);
    expect(before.map((k) => [k.kid, k.x])).toEqual([
      ["did:web:skills.test#next-a", keyA?.x],
      ["did:web:skills.test#next-b", keyB.x],
    ]);
    const cachedDoc = await (await fetchApp("/.well-known/did.json", ahead)).text();

    // Step 4: the switch, the list unchanged.
    const switched = { ...paidEnv, RECEIPT_SIGNING_KEY: nextSecret, RECEIPT_RETIRED_KEYS: list };
    expect((await jwks(switched)).map((k) => [k.kid, k.x])).toEqual([
      ["did:web:skills.test#next-b", keyB.x],
      ["did:web:skills.test#next-a", keyA?.x],
    ]);
    const signedByB = await paidReceipt(switched);
    // A verifier still holding the did.json of before the switch finds the new key in it.
    const servedCached = (url: string, init?: RequestInit) =>
      new URL(url).pathname === "/.well-known/did.json"
        ? Promise.resolve(new Response(cachedDoc, { headers: { "content-type": "application/did+json" } }))
        : fetchFrom(switched)(url, init);
    const found = await resolveKey(signedByB.jws, { baseUrl: BASE, fetchImpl: servedCached });
    expect(found.kid).toBe("did:web:skills.test#next-b");
    await verifyReceipt(signedByB.jws, { jwk: found.jwk, body: signedByB.body, did: found.did });
    for (const r of [signedByA, signedByB])
      expect(await strangerCheck(r.jws, r.body, switched)).toHaveProperty("claims");
  });

  it("an entry whose x is the current key's private d is left out, and the log names the mistake, not the value", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const secret = await newSigningKey("pasted");
    const { d } = JSON.parse(secret);
    const old = JSON.parse(await newSigningKey("pasted-old"));
    const e = {
      ...paidEnv,
      RECEIPT_SIGNING_KEY: secret,
      RECEIPT_RETIRED_KEYS: JSON.stringify([
        { kty: "OKP", crv: "Ed25519", x: old.x, kid: "pasted-old" },
        { kty: "OKP", crv: "Ed25519", x: d, kid: "pasted-private" },
      ]),
    };
    expect((await jwks(e)).map((k) => k.kid)).toEqual([
      "did:web:skills.test#pasted",
      "did:web:skills.test#pasted-old",
    ]);
    expect(await (await fetchApp("/.well-known/did.json", e)).text()).not.toContain(d);
    const lines = logged.mock.calls.map((c) => String(c[0])).join("\n");
    expect(lines).toMatch(/entry 1 left out: its x is the current RECEIPT_SIGNING_KEY's private half \(d\)/);
    expect(lines).not.toContain(d);
  });

  it("the same list under another signing key logs that key's own problem", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const stranger = (kid: string) => ({ kty: "OKP", crv: "Ed25519", x: "A".repeat(43), kid });
    // Each entry reuses one of the two signing keys' kids with another key.
    const list = JSON.stringify([stranger("same-list-a"), stranger("same-list-b")]);
    for (const kid of ["same-list-a", "same-list-b"])
      await jwks({ ...paidEnv, RECEIPT_SIGNING_KEY: await newSigningKey(kid), RECEIPT_RETIRED_KEYS: list });
    const lines = logged.mock.calls.map((c) => String(c[0])).join("\n");
    expect(lines).toMatch(/entry 0 left out: did:web:skills.test#same-list-a is the current/);
    expect(lines).toMatch(/entry 1 left out: did:web:skills.test#same-list-b is the current/);
  });
});
