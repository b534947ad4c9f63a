import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { receiptKey } from "../../src/payments/receipt-key";
import { FIXTURE } from "../fixtures/upstream-requests";

// RECEIPT_SIGNING_KEY is checked when it is parsed (src/payments/receipt-key.ts): a key whose
// public half is not its private half's, or whose kid is not one we can publish, is malformed: no
// did.json, no offers, no receipts, and a logged configuration error; never receipts that fail.
const app = createApp();
const good = JSON.parse(env.RECEIPT_SIGNING_KEY as string) as { d: string; x: string; kid: string };
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };

async function otherPublicX() {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  return ((await crypto.subtle.exportKey("jwk", pair.publicKey)) as JsonWebKey).x as string;
}

const secret = (fields: Record<string, unknown>) =>
  JSON.stringify({ kty: "OKP", crv: "Ed25519", d: good.d, x: good.x, kid: good.kid, ...fields });

const fetchApp = (path: string, e: object, init?: RequestInit) =>
  app.fetch(new Request(`https://skills.test${path}`, init), e);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("RECEIPT_SIGNING_KEY is checked, not only its shape", { timeout: 30_000 }, () => {
  it("a pair whose x is another key's, or a kid that cannot be published, is malformed", async () => {
    const base = "https://skills.test";
    expect(receiptKey(secret({}), base)).toMatchObject({ kid: "did:web:skills.test#test-1" });
    const { kid: _kid, ...withoutKid } = JSON.parse(secret({}));
    expect(receiptKey(JSON.stringify(withoutKid), base)).toMatchObject({
      kid: "did:web:skills.test#receipts-1",
    });
    expect(receiptKey(secret({ x: await otherPublicX() }), base)).toEqual({
      error: expect.stringMatching(/x is not the public key of d/),
    });
    for (const kid of ["has space", "a#b", "", "k".repeat(65), 7]) {
      expect(receiptKey(secret({ kid }), base), JSON.stringify(kid)).toEqual({
        error: expect.stringMatching(/kid/),
      });
    }
  });

  it("a mismatched key: did.json and jwks.json are 503 with a logged error, the 402 has no offers, a paid answer no receipt", async () => {
    const broken = { ...paidEnv, RECEIPT_SIGNING_KEY: secret({ x: await otherPublicX() }) };
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    for (const path of ["/.well-known/did.json", "/.well-known/jwks.json"]) {
      const res = await fetchApp(path, broken);
      expect(res.status, path).toBe(503);
    }
    expect(logged.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(/x is not the public key of d/);

    const unpaid = await fetchApp("/api/skills/sha256", broken, { method: "POST", body: "{}" });
    expect(unpaid.status).toBe(402);
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    expect(required.extensions).not.toHaveProperty("offer-receipt");

    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 1, 1, 0)",
    )
      .bind(crypto.randomUUID(), await hashKey(key))
      .run();
    const paid = await fetchApp("/api/skills/slugify", broken, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ text: "Unsigned" }),
    });
    expect(paid.status).toBe(200);
    expect(paid.headers.get("x-payment-receipt")).toBeNull();
  });

  it("a key that cannot sign is logged once per isolate and value, not once per unauthenticated GET", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const lines = () =>
      logged.mock.calls
        .map((c) => JSON.parse(String(c[0])) as Record<string, unknown>)
        .filter((l) => /kid/.test(String(l.error)));
    const broken = { ...paidEnv, RECEIPT_SIGNING_KEY: secret({ kid: `bad kid ${crypto.randomUUID()}` }) };
    for (let i = 0; i < 3; i++) {
      for (const path of ["/.well-known/did.json", "/.well-known/jwks.json"]) {
        expect((await fetchApp(path, broken)).status, path).toBe(503);
      }
    }
    expect(lines()).toEqual([
      expect.objectContaining({
        level: "error",
        request_id: expect.any(String),
        error: expect.stringMatching(/kid/),
      }),
    ]);
    // Another value (a new secret put) is logged again, once.
    const other = { ...paidEnv, RECEIPT_SIGNING_KEY: secret({ kid: `bad kid ${crypto.randomUUID()}` }) };
    for (let i = 0; i < 3; i++) expect((await fetchApp("/.well-known/did.json", other)).status).toBe(503);
    expect(lines()).toHaveLength(2);
    // The same for a list of retired keys that cannot be read (left out of every answer).
    const retired = { ...paidEnv, RECEIPT_RETIRED_KEYS: `not json ${crypto.randomUUID()}` };
    for (let i = 0; i < 3; i++) expect((await fetchApp("/.well-known/jwks.json", retired)).status).toBe(200);
    const unreadable = logged.mock.calls.filter((c) =>
      String(c[0]).includes("retired receipt keys unreadable"),
    );
    expect(unreadable).toHaveLength(1);
  });

  it("RECEIPT_RETIRED_KEYS as a TOML table or array is logged as unreadable (not text), never dropped in silence", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    // An element of its own so the once-per-value line is this test's.
    const tables = [[crypto.randomUUID()], [{ kid: crypto.randomUUID() }]];
    for (const value of tables) {
      const res = await fetchApp("/.well-known/jwks.json", { ...paidEnv, RECEIPT_RETIRED_KEYS: value });
      expect(res.status).toBe(200);
    }
    const lines = logged.mock.calls
      .map((c) => String(c[0]))
      .filter((l) => l.includes("retired receipt keys unreadable"));
    logged.mockRestore();
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const l of lines)
      expect(JSON.parse(l).error).toBe("RECEIPT_RETIRED_KEYS: not text (write it as a JSON string)");
  });

  it("JSON that is no object (`null`, as `jq -r` prints a missing field) is malformed: no 500 on /health, did.json, the 402 or a paid call", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    for (const value of ["null", " null ", "7", '"text"', "[]"]) {
      expect(receiptKey(value, "https://skills.test"), value).toEqual({
        error: expect.stringMatching(/RECEIPT_SIGNING_KEY/),
      });
      const broken = { ...paidEnv, RECEIPT_SIGNING_KEY: value };
      const health = await fetchApp("/health", broken);
      expect(health.status, value).toBe(200);
      const problems = ((await health.json()) as { checks: { config: { problems: { var: string }[] } } })
        .checks.config.problems;
      expect(problems.map((p) => p.var)).toContain("RECEIPT_SIGNING_KEY");
      expect((await fetchApp("/.well-known/did.json", broken)).status, value).toBe(503);
      expect((await fetchApp("/api/skills/sha256", broken, { method: "POST", body: "{}" })).status).toBe(402);
      // A card-paid call: its answer and its one credit, no receipt (a 500 here kept the credit).
      const key = newApiKey();
      await env.DB.prepare(
        "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 2, 2, 0)",
      )
        .bind(crypto.randomUUID(), await hashKey(key))
        .run();
      const paid = await fetchApp("/api/skills/slugify", broken, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: JSON.stringify({ text: "No receipt" }),
      });
      expect(paid.status, value).toBe(200);
      expect(paid.headers.get("x-credits-remaining")).toBe("1");
      expect(paid.headers.get("x-payment-receipt")).toBeNull();
    }
  });

  it("an invalid kid is the same 503, not a key quietly published as receipts-1", async () => {
    const badKid = { ...paidEnv, RECEIPT_SIGNING_KEY: secret({ kid: "k1 (2025)" }) };
    vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await fetchApp("/.well-known/did.json", badKid);
    expect(res.status).toBe(503);
    // The configured key again: published as before.
    expect((await fetchApp("/.well-known/did.json", paidEnv)).status).toBe(200);
  });
});
