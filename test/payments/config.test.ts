import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { mcpToolCall, paidEnv as paidEnvWithFixture, type ToolResult } from "../helpers";

const paidEnv = (overrides: Record<string, string>) => ({ ...env, FREE_BETA: "false", ...overrides });
const post = (e: Record<string, unknown>) =>
  createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
    e,
  );

describe("x402 configuration problems are a clear 503, never a crash", () => {
  it.each([
    [{ X402_NETWORK: "base-mainnet" }, /X402_NETWORK/],
    [
      { PAY_TO: "not-an-address" },
      /PAY_TO is not an EVM address \(14 characters; an address is 0x \+ 40 hex digits\)/,
    ],
    // The characters counted are those within the spaces, as the hex shapes count.
    [
      { PAY_TO: "  not-an-address " },
      /PAY_TO is not an EVM address \(14 characters, with spaces around it; an address is 0x \+ 40 hex digits\)/,
    ],
    [
      { PAY_TO: ` ${env.PAY_TO}` },
      /PAY_TO is not an EVM address \(0x \+ 40 hex digits, with spaces around it;/,
    ],
    // One letter's case changed: a mistyped address, said as such.
    [{ PAY_TO: `0x3c${env.PAY_TO.slice(4)}` }, /PAY_TO 0x3c\w{38} is not EIP-55 checksummed/],
    // All upper case is no checksum either, and is not "mixed case".
    [{ PAY_TO: `0x${env.PAY_TO.slice(2).toUpperCase()}` }, /PAY_TO 0x[0-9A-F]{40} is not EIP-55 checksummed/],
    // wrangler.toml ships PAY_TO empty: nothing is sold until the operator names a wallet.
    [{ PAY_TO: "" }, /payments are not configured/],
    [{ FACILITATOR_URL: "nope" }, /FACILITATOR_URL/],
    // Values that passed the checks above and sold calls: paid to an address nobody can spend
    // from, or signed for another token than the prices' USDC (Base Sepolia's on Base mainnet).
    [{ PAY_TO: "0x0000000000000000000000000000000000000000" }, /PAY_TO 0x0{40} is a placeholder/],
    [{ PAY_TO: "0x1111111111111111111111111111111111111111" }, /PAY_TO 0x1{40} is a placeholder/],
    [{ PAY_TO: env.USDC_ADDRESS }, /PAY_TO is the USDC contract's own address/],
    [{ PAY_TO: env.USDC_ADDRESS.toLowerCase() }, /PAY_TO is the USDC contract's own address/],
    [
      { USDC_ADDRESS: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" },
      /USDC_ADDRESS 0x036CbD53842c5426634e7929541eC2318f3dCF7e is not USDC on eip155:8453 \(0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913\)/,
    ],
    // A testnet switched to without its USDC: a clear line, not the facilitator's route list.
    [
      { X402_NETWORK: "eip155:84532" },
      /USDC_ADDRESS 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913 is not USDC on eip155:84532/,
    ],
  ])("%j", async (overrides, message) => {
    const res = await post(paidEnv(overrides));
    expect(res.status).toBe(503);
    expect((await res.json<{ detail: string }>()).detail).toMatch(message);
  });

  it.each([
    ["PAY_TO", `0x${"ab12".repeat(16)}`],
    ["PAY_TO", "ab12".repeat(16)],
    ["USDC_ADDRESS", `0x${"cd34".repeat(16)}`],
  ])(
    "%s holding a private key by mistake is never quoted: not in the 503, not in the log",
    async (name, key) => {
      const errors = vi.spyOn(console, "error");
      const res = await post(paidEnv({ [name]: key }));
      const lines = errors.mock.calls.map((c) => String(c[0]));
      errors.mockRestore();
      expect(res.status).toBe(503);
      const body = await res.text();
      expect(body).toMatch(new RegExp(`${name} is not an EVM address \\((0x \\+ )?64 hex digits`));
      expect(body).not.toContain(key.slice(2));
      expect(lines.some((l) => l.includes("x402 payments misconfigured"))).toBe(true);
      for (const line of lines) expect(line).not.toContain(key.slice(2));
    },
  );

  it("an unreachable facilitator is 503 and the next request tries again", async () => {
    const e = paidEnv({ FACILITATOR_URL: "http://127.0.0.1:9/facilitator" });
    for (let i = 0; i < 2; i++) {
      const res = await post(e);
      expect(res.status).toBe(503);
      expect((await res.json<{ detail: string }>()).detail).toMatch(/facilitator/);
    }
  });

  it.each([
    [{ PARTNER_BASE_URLS: '{"textkit":"host:9999"}' }],
    [{ PARTNER_BASE_URLS: "null" }],
    [{ PARTNER_PRICE_MULTIPLIER: "2" }],
  ])("bad partner configuration %j never stops the skills being sold", async (overrides) => {
    const res = await post(
      paidEnv({ ...overrides, FACILITATOR_URL: `${new URL(env.WIKIPEDIA_API_BASE).origin}/facilitator` }),
    );
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
    const partner = await createApp().fetch(
      new Request("https://skills.test/api/partners"),
      paidEnv(overrides),
    );
    expect(partner.status).toBe(503);
    // The refinery skill is a partner service: it answers the same 503, and never runs unpaid.
    const refinery = await createApp().fetch(
      new Request("https://skills.test/api/skills/refinery-recipes", {
        method: "POST",
        body: JSON.stringify({ raw: "x", request: "y", recipe: "custom" }),
      }),
      paidEnv(overrides),
    );
    expect(refinery.status).toBe(503);
  });

  it("a bad partner base URL leaves the documents up; only the partner routes answer 503", async () => {
    const e = paidEnv({ PARTNER_BASE_URLS: '{"textkit":"host:9999"}' });
    for (const path of ["/openapi.json", "/llms.txt", "/.well-known/x402", "/"]) {
      const res = await createApp().fetch(new Request(`https://skills.test${path}`), e);
      expect(res.status, path).toBe(200);
    }
  });

  it("a FACILITATOR_URL naming an operation (/verify) is 503 saying the facilitator failed", async () => {
    const e = paidEnvWithFixture();
    const res = await post({ ...e, FACILITATOR_URL: `${e.FACILITATOR_URL}/verify` });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await res.json<{ detail: string }>()).detail).toMatch(
      /^x402 payments are unavailable: facilitator/,
    );
  });

  it("a lower-case PAY_TO (no checksum) is a wallet still: calls are offered", async () => {
    const res = await post({ ...paidEnvWithFixture(), PAY_TO: env.PAY_TO.toLowerCase() });
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
  });

  it("a BASE_URL without a scheme counts as unset: paid calls, MCP and checkout answer as on the request's origin, not 500 or 502", async () => {
    const e = { ...paidEnvWithFixture(), BASE_URL: "skills.test" };
    const errors = vi.spyOn(console, "error");
    const paid = await post(e);
    expect(paid.status).toBe(402);
    const offer = JSON.parse(atob(paid.headers.get("payment-required") ?? ""));
    expect(offer.resource.url).toBe("https://skills.test/api/skills/sha256");
    const mcp = await createApp().fetch(mcpToolCall("sha256", { text: "a" }), e);
    const tool = (await mcp.json<{ result: ToolResult }>()).result;
    expect(tool._meta?.["x402/error"]).toBeTruthy();
    const checkout = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"skill_id":"sha256","quantity":10}',
      }),
      e,
    );
    expect(checkout.status).toBe(200);
    // Said once for these bindings, naming the var, however many requests met it.
    const said = errors.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("BASE_URL"));
    errors.mockRestore();
    expect(said.map((l) => JSON.parse(l).msg)).toEqual([
      "BASE_URL is not an absolute http(s) URL: the request's origin is used instead",
    ]);
  });

  it("unquoted booleans in [vars] (JSON bindings, not strings) are read as the words are, not a 500", async () => {
    const res = await post({ ...paidEnvWithFixture(), FREE_BETA: false, X402_ENABLED: true });
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect((await post({ ...env, FREE_BETA: true })).status).toBe(200);
  });

  it.each([{ PAY_TO: 5 }, { PAY_TO: true }, { USDC_ADDRESS: 5 }])(
    "unquoted %j changed after deploy is refused as the text it reads as: a 503 naming it, not a 500",
    async (overrides) => {
      const res = await post({ ...paidEnvWithFixture(), ...overrides });
      expect(res.status).toBe(503);
      expect(JSON.stringify(await res.json())).toContain(
        `${Object.keys(overrides)[0]} is not an EVM address`,
      );
    },
  );

  it.each([{ RATE_LIMITS: false }, { PARTNER_PRICE_MULTIPLIER: 3 }, { STRIPE_MODE: 1 }])(
    "unquoted %j changed after deploy (a JSON binding) is read as its text: a paid call is the normal 402, not a 500",
    async (overrides) => {
      const res = await post({ ...paidEnvWithFixture(), ...overrides });
      expect(res.status).toBe(402);
      expect(res.headers.get("payment-required")).toBeTruthy();
    },
  );

  it('X402_ENABLED "ture" (a switch word the Worker does not read) is read as off: a 402, no x402 offer', async () => {
    const res = await post(paidEnv({ X402_ENABLED: "ture" }));
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeNull();
  });

  it("x402 disabled without another way to pay is a 402 that says so", async () => {
    const res = await post(paidEnv({ X402_ENABLED: "false" }));
    expect(res.status).toBe(402);
  });
});
