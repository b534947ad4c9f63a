import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { redactSecrets } from "../../src/config";
import { withFirstResult } from "../../src/payments/checkout-first-call";
import type { SessionRow } from "../../src/payments/checkout-sessions";
import { publishableUrl, redactUrl, sessionRef } from "../../src/redact";

// What a maintainer may share (a log line) or anyone may read (a published document) must carry no
// credential: docs/PRIVACY.md, "Secrets".
const app = createApp();

describe("the facilitator is published without the key its URL may carry", () => {
  it("/api/partners names the facilitator's endpoint, not its query or userinfo", async () => {
    const keyed = "https://user:FACILITATOR-PASSWORD@facilitator.example/x402?apikey=FACILITATOR-KEY";
    const res = await app.fetch(new Request("https://skills.test/api/partners"), {
      ...env,
      FACILITATOR_URL: keyed,
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain("FACILITATOR-PASSWORD");
    expect(text).not.toContain("FACILITATOR-KEY");
    const { partners } = JSON.parse(text) as { partners: { facilitator: string }[] };
    expect(partners.map((p) => p.facilitator)).toContain("https://facilitator.example/x402");
  });

  it("a key in the path (the only place one reaches @x402/core's <url>/verify) is not published: the origin is", async () => {
    const res = await app.fetch(new Request("https://skills.test/api/partners"), {
      ...env,
      FACILITATOR_URL: "https://x402.alchemy.example/v2/PATHKEY0123456789",
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain("PATHKEY0123456789");
    const { partners } = JSON.parse(text) as { partners: { facilitator: string }[] };
    expect(partners.map((p) => p.facilitator)).toContain("https://x402.alchemy.example");
    for (const keyed of [
      "https://f.example/0f8fad5b-d9cb-469f-a165-70867728950e", // a UUID
      "https://f.example/v2/abcdefghijklmnopqrstuvwxyzABCDEF", // letters only, 32
      "https://f.example/x402/k1a2b3c4d5e6", // letters and digits
      "https://f.example/v2/1234567890123456789", // digits only, longer than a figure
      "https://f.example/k/ABCDEF-123456-abcdef", // plain words joined into a key
    ])
      expect(publishableUrl(keyed)).toBe("https://f.example");
  });

  it("a key sent as a bare query name is hidden where an RPC error quotes it alone", () => {
    const key = "ABCDEF0123456789abcdef";
    for (const rpc of [`https://rpc.example/base?${key}`, `https://rpc.example/base?k=1&${key}`])
      expect(redactSecrets(`no answer for ${key} at block 12345678`, { ...env, RPC_URL: rpc })).toBe(
        "no answer for <redacted> at block 12345678",
      );
  });

  it("a URL without a key is published as configured: the known facilitators' paths are plain words", () => {
    for (const url of [
      "https://x402.org/facilitator",
      "https://api.cdp.coinbase.com/platform/v2/x402",
      "https://facilitator.example",
      "http://127.0.0.1:8787/f/",
    ])
      expect(publishableUrl(url)).toBe(url);
    expect(publishableUrl("not a url?key=1")).toBe("");
  });
});

describe("redaction hides the key, not the words around it", () => {
  const key = "PATHKEY0123456789";
  it("a self-hosted facilitator's plain path, its query names and a network id stay readable", () => {
    const e = {
      ...env,
      FACILITATOR_URL: `https://f.example/x402-facilitator/${key}?access_token=TOKEN-words-only&network=eip155:8453`,
    };
    const out = redactSecrets(
      `payment_facilitator x402-facilitator: Cannot POST /x402-facilitator/${key}/settle (access_token TOKEN-words-only, network eip155:8453)`,
      e,
    );
    expect(out).toBe(
      "payment_facilitator x402-facilitator: Cannot POST /x402-facilitator/<redacted>/settle (access_token <redacted>, network eip155:8453)",
    );
    const plain = { ...env, FACILITATOR_URL: "https://f.example/payment_facilitator?network=eip155:8453" };
    expect(redactSecrets("payment_facilitator on eip155:8453 failed", plain)).toBe(
      "payment_facilitator on eip155:8453 failed",
    );
  });

  it("an RPC URL's words and numbers stay in every line; its key and the URL do not", () => {
    const e = { ...env, RPC_URL: "https://rpc.example/base_mainnet/12345678/k1a2b3c4d5e6f7?chain_id=8453" };
    const out = redactSecrets(
      `block 12345678, amount 84530000 on base_mainnet (chain_id 8453): key k1a2b3c4d5e6f7; URL: ${e.RPC_URL}`,
      e,
    );
    expect(out).toBe(
      "block 12345678, amount 84530000 on base_mainnet (chain_id 8453): key <redacted>; URL: <RPC_URL>",
    );
  });

  it("a plain self-hosted facilitator path is published; a key-like one is not", () => {
    for (const url of ["https://f.example/x402-facilitator", "https://f.example/payment_facilitator"])
      expect(publishableUrl(url)).toBe(url);
    expect(publishableUrl(`https://f.example/x402-facilitator/${key}`)).toBe("https://f.example");
  });
});

describe("log text loses every secret it quotes", () => {
  const secrets = {
    STRIPE_SECRET_KEY: "sk_live_51SecretStripeKeyValue0000",
    STRIPE_WEBHOOK_SECRET: "whsec_SecretWebhookSigningValue00",
    ADMIN_TOKEN: "admin-token-secret-value-0123456789",
    CDP_API_KEY_SECRET: "cdp-secret-value-abcdefghijklmnop",
    PARTNER_PAYER_KEY: `0x${"ab".repeat(32)}`,
    RECEIPT_SIGNING_KEY: JSON.stringify({
      kty: "OKP",
      crv: "Ed25519",
      d: "PrivateHalfOfTheReceiptKey0123456789abcdefgh",
      x: "pub",
    }),
    RPC_URL: "https://base-mainnet.g.alchemy.com/v2/RpcProviderKey123",
    FACILITATOR_URL: "https://facilitator.example/x402?apikey=FacilitatorKey456",
  };
  const e = { ...env, ...secrets };

  it("each secret, and the keyed URLs, are replaced; the providers' hosts stay", () => {
    const text = [
      `Error: Invalid API Key provided: ${secrets.STRIPE_SECRET_KEY}`,
      `signature with ${secrets.STRIPE_WEBHOOK_SECRET}`,
      `Bearer ${secrets.ADMIN_TOKEN}`,
      `cdp ${secrets.CDP_API_KEY_SECRET}`,
      `key ${secrets.PARTNER_PAYER_KEY}`,
      'jwk "d":"PrivateHalfOfTheReceiptKey0123456789abcdefgh"',
      `HTTP request failed. URL: ${secrets.RPC_URL}`,
      `fetch ${secrets.FACILITATOR_URL} failed`,
    ].join("\n");
    const out = redactSecrets(text, e);
    for (const needle of [
      "SecretStripeKeyValue",
      "SecretWebhookSigningValue",
      "admin-token-secret-value",
      "cdp-secret-value",
      "ab".repeat(32),
      "PrivateHalfOfTheReceiptKey",
      "RpcProviderKey123",
      "FacilitatorKey456",
    ])
      expect(out).not.toContain(needle);
    expect(out).toContain("<RPC_URL>");
    expect(out).toContain("https://facilitator.example/<redacted>");
  });

  it("a secret that contains another is hidden whole, not left as its prefix", () => {
    const webhook = "whsec_SecretWebhookSigningValue00";
    const e2 = { ...env, STRIPE_WEBHOOK_SECRET: webhook, ADMIN_TOKEN: `ADMINPREFIX-${webhook}` };
    expect(redactSecrets(`token ADMINPREFIX-${webhook} and ${webhook}`, e2)).toBe(
      "token <redacted> and <redacted>",
    );
  });

  it("a multi-line secret is hidden inside JSON text too, where its newlines are \\n", () => {
    const pem =
      "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPemBodyOfTheCdpKey0123456789\n-----END EC PRIVATE KEY-----";
    const e2 = { ...env, CDP_API_KEY_SECRET: pem };
    const line = JSON.stringify({ level: "error", error: `bad key ${pem}` });
    const out = redactSecrets(line, e2);
    expect(out).not.toContain("PemBodyOfTheCdpKey");
    expect(JSON.parse(out).error).toBe("bad key <redacted>");
  });

  it("a URL for a log line keeps scheme and host only", () => {
    expect(redactUrl("https://base-mainnet.g.alchemy.com/v2/KEY")).toBe(
      "https://base-mainnet.g.alchemy.com/<redacted>",
    );
    expect(redactUrl("https://u:p@rpc.example:8545/?apikey=K")).toBe("https://rpc.example:8545/<redacted>");
    expect(redactUrl("https://rpc.example")).toBe("https://rpc.example");
    expect(redactUrl("no url KEY")).toBe("<redacted URL>");
  });

  it("a session id is cut to a prefix that finds its row but opens no success page", () => {
    const id = "cs_live_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ0123456789abcdefghijklmn";
    expect(sessionRef(id)).toBe("cs_live_a1B2c3D4e5F6…");
    expect(id.startsWith(sessionRef(id).slice(0, -1))).toBe(true);
  });
});

describe("no log line carries a whole checkout session id", () => {
  it("a first-call answer KV cannot give back is logged with the session cut to its prefix", async () => {
    const id = "cs_test_firstcall_unreadable_0123456789abcdefghijklmnopqrstuvwxyz";
    const row = {
      id,
      payload_result: JSON.stringify({ status: 200, body_kv: `first-call:${id}:1700000000000` }),
      updated_at: 1,
    } as SessionRow;
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const kv = { get: () => Promise.reject(new Error("KV down")) } as unknown as KVNamespace;
    const shown = await withFirstResult({ ...env, KV: kv }, row);
    const lines = error.mock.calls.map((args) => String(args[0]));
    error.mockRestore();
    expect(shown?.payload_result).toBeNull();
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(id);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      msg: "first-call answer unreadable",
      key: `first-call:${sessionRef(id)}:1700000000000`,
    });
  });
});
