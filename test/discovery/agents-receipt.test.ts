import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { MCP_TEXT_COPY_MAX, RECEIPT_NOTE_META } from "../../src/mcp/limits";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { didWebOf } from "../../src/payments/receipt-key";
import { paidEnv } from "../helpers";

// An agent that reads only the served guides must be able to check the receipt of what it paid
// for: AGENTS.md never named X-Payment-Receipt, nor where its key is or what it binds. This walks
// its "Check the receipt" steps as written, on a card-credit call, and its card section's promise
// about an empty key.
const app = createApp();
const fetchApp = (path: string, init?: RequestInit) =>
  app.fetch(new Request(`https://skills.test${path}`, init), paidEnv());
const b64url = (s: string) =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const hex = (b: ArrayBuffer) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");

describe("AGENTS.md: a paid answer's receipt, checked as the guide says", () => {
  it("names the header, the key document and the fields, and those steps verify a real receipt", async () => {
    const guide = await (await fetchApp("/AGENTS.md")).text();
    const section = /## 4c\. Check the receipt\n([\s\S]*?)\n## /.exec(guide)?.[1] ?? "";
    for (const needle of [
      "`X-Payment-Receipt`",
      "https://skills.test/.well-known/did.json",
      "`verificationMethod`",
      "`bodySha256`",
      "`kid`",
    ])
      expect(section).toContain(needle);

    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?, ?, 'slugify', 2, 2, 0)",
    )
      .bind(`agents-receipt-${crypto.randomUUID()}`, await hashKey(key))
      .run();
    const res = await fetchApp("/api/skills/slugify", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: '{"text":"Checked Receipt"}',
    });
    expect(res.status).toBe(200);
    const body = await res.arrayBuffer();
    const jws = res.headers.get("x-payment-receipt") ?? "";
    const [h = "", p = "", s = ""] = jws.split(".");
    const { kid } = JSON.parse(new TextDecoder().decode(b64url(h))) as { kid: string };
    const payload = JSON.parse(new TextDecoder().decode(b64url(p))) as {
      resourceUrl: string;
      bodySha256: string;
    };
    // The kid's did is the did:web of resourceUrl's host.
    expect(kid.split("#")[0]).toBe(`did:web:${new URL(payload.resourceUrl).host.replace(":", "%3A")}`);
    const did = await (await fetchApp("/.well-known/did.json")).json<{
      verificationMethod: { id: string; publicKeyJwk: JsonWebKey }[];
    }>();
    const jwk = did.verificationMethod.find((m) => m.id === kid)?.publicKeyJwk;
    expect(jwk).toBeDefined();
    const verifyKey = await crypto.subtle.importKey("jwk", jwk as JsonWebKey, { name: "Ed25519" }, false, [
      "verify",
    ]);
    const signed = new TextEncoder().encode(`${h}.${p}`);
    expect(await crypto.subtle.verify({ name: "Ed25519" }, verifyKey, b64url(s), signed)).toBe(true);
    expect(payload.bodySha256).toBe(hex(await crypto.subtle.digest("SHA-256", body)));
  });

  it("names its exceptions as the code draws them: MCP's big results, no signing key, a base URL's path", async () => {
    const guide = await (await fetchApp("/AGENTS.md")).text();
    const section = /## 4c\. Check the receipt\n([\s\S]*?)\n## /.exec(guide)?.[1] ?? "";
    expect(section).toContain(`over ${MCP_TEXT_COPY_MAX} characters`);
    expect(section).toContain(`\`_meta["${RECEIPT_NOTE_META}"]\``);
    expect(section).toContain(
      `\`https://h.example:8443/m\` gives \`${didWebOf("https://h.example:8443/m")}\``,
    );
    expect(section).toContain("(did.json answers 503 or lists only retired keys)");
    // Without a signing key, as it says: did.json answers 503 and a paid answer has no receipt.
    const unsigned = { ...paidEnv(), RECEIPT_SIGNING_KEY: undefined, RECEIPT_RETIRED_KEYS: undefined };
    const did = await app.fetch(new Request("https://skills.test/.well-known/did.json"), unsigned);
    expect(did.status).toBe(503);
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?, ?, 'slugify', 2, 2, 0)",
    )
      .bind(`agents-receipt-${crypto.randomUUID()}`, await hashKey(key))
      .run();
    const res = await app.fetch(
      new Request("https://skills.test/api/skills/slugify", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: '{"text":"No Receipt"}',
      }),
      unsigned,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("x-payment-receipt")).toBeNull();
  });

  it("says a key cannot be topped up: a checkout sells a new pack with a new key", async () => {
    const guide = await (await fetchApp("/AGENTS.md")).text();
    expect(guide).toContain(
      "A key cannot be topped up: once it runs out, a new checkout sells a new pack with a new key.",
    );
  });
});
