import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";

/** The documents that print the x402 pay-to address or asset. */
const PAY_TO_DOCUMENTS = [
  "/llms.txt",
  "/AGENTS.md",
  "/.well-known/x402",
  "/.well-known/agents.json",
  "/openapi.json",
  "/services/sha256.json",
  "/docs/sha256",
];
const ASSET_DOCUMENTS = [...PAY_TO_DOCUMENTS, "/contracts/humanless.json"];

async function body(bindings: object, path: string) {
  const res = await createApp().fetch(new Request(`https://skills.test${path}`), bindings);
  expect(res.status, path).toBe(200);
  return res.text();
}

// A private key pasted into PAY_TO or USDC_ADDRESS: the x402 gate answers 503 without quoting it.
const KEY_IN_PAY_TO = `0x${"ab12".repeat(16)}`;
const KEY_IN_USDC = `0x${"cd34".repeat(16)}`;

describe("discovery documents publish the x402 addresses only while both are shaped as addresses", () => {
  it("leaves out a 64-hex PAY_TO and USDC_ADDRESS and says payments are misconfigured", async () => {
    const bindings = { ...env, PAY_TO: KEY_IN_PAY_TO, USDC_ADDRESS: KEY_IN_USDC };
    for (const path of ASSET_DOCUMENTS) {
      const text = await body(bindings, path);
      expect(text.toLowerCase(), path).not.toContain(KEY_IN_PAY_TO.slice(2));
      expect(text.toLowerCase(), path).not.toContain(KEY_IN_USDC.slice(2));
    }
    for (const path of ["/llms.txt", "/AGENTS.md", "/openapi.json"])
      expect(await body(bindings, path), path).toContain("x402 payments are misconfigured");
  });

  it("leaves out a valid USDC_ADDRESS too while PAY_TO is not shaped as an address", async () => {
    const bindings = { ...env, PAY_TO: KEY_IN_PAY_TO };
    for (const path of ASSET_DOCUMENTS)
      expect(await body(bindings, path), path).not.toContain(env.USDC_ADDRESS);
  });

  it("publishes an address-shaped PAY_TO the gate refuses (a placeholder; its paid calls answer 503: test/payments/config.test.ts)", async () => {
    const placeholder = `0x${"1".repeat(40)}`;
    const bindings = { ...env, PAY_TO: placeholder };
    for (const path of PAY_TO_DOCUMENTS) {
      const text = await body(bindings, path);
      expect(text, path).toContain(placeholder);
      expect(text, path).not.toContain("x402 payments are misconfigured");
    }
  });

  it("says payments are misconfigured while PAY_TO is empty, as the gate's 503 does", async () => {
    const bindings = { ...env, PAY_TO: "" };
    for (const path of ["/llms.txt", "/AGENTS.md", "/openapi.json"])
      expect(await body(bindings, path), path).toContain("x402 payments are misconfigured");
    expect(await body(bindings, "/.well-known/agents.json")).not.toContain('"pay_to"');
  });

  it("on a free beta with PAY_TO empty, says no x402 payment is taken, not that paid calls answer 503 (they answer unpaid)", async () => {
    const bindings = { ...env, FREE_BETA: "true", PAY_TO: "" };
    const sha = await createApp().fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
      bindings,
    );
    expect(sha.status).toBe(200);
    for (const path of ["/llms.txt", "/AGENTS.md", "/openapi.json"]) {
      const text = await body(bindings, path);
      expect(text, path).toContain("no x402 payment is taken until the operator sets PAY_TO");
      expect(text, path).not.toContain("paid calls answer 503");
    }
  });

  // Each document from bindings of its own (a cold configuration), first asked by HEAD, by a
  // conditional GET, or by a plain GET: no document may depend on another having been asked first.
  it.each(["GET", "HEAD", "If-None-Match"])(
    "publishes both while they are valid, each document first asked by %s",
    async (first) => {
      for (const path of [...ASSET_DOCUMENTS, "/agents.json"]) {
        const bindings = { ...env };
        const app = createApp();
        const init: RequestInit =
          first === "HEAD"
            ? { method: "HEAD" }
            : first === "If-None-Match"
              ? { headers: { "if-none-match": '"nope"' } }
              : {};
        await (await app.fetch(new Request(`https://skills.test${path}`, init), bindings)).arrayBuffer();
        const text = await body(bindings, path);
        if (PAY_TO_DOCUMENTS.includes(path) || path === "/agents.json")
          expect(text, path).toContain(env.PAY_TO);
        expect(text, path).toContain(env.USDC_ADDRESS);
      }
      expect(await body({ ...env }, "/.well-known/agents.json")).toContain('"pay_to"');
    },
  );
});
