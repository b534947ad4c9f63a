import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { usdcDomain } from "../../src/payments/usdc-domain";

const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const SEPOLIA_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the EIP-712 domain every payment and refund is signed under", () => {
  it("is the deployed contract's own: 'USD Coin' on Base, 'USDC' on Base Sepolia", () => {
    expect(usdcDomain("eip155:8453", BASE_USDC.toLowerCase())).toEqual({ name: "USD Coin", version: "2" });
    expect(usdcDomain("eip155:84532", SEPOLIA_USDC)).toEqual({ name: "USDC", version: "2" });
    // An asset the table does not list keeps mainnet's domain.
    expect(usdcDomain("eip155:8453", `0x${"12".repeat(20)}`)).toEqual({ name: "USD Coin", version: "2" });
  });

  it("a Base Sepolia deployment offers its USDC's domain, in the v2 header and the v1 body", async () => {
    const facilitator = "https://facilitator-sepolia.test";
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      if (new URL(req.url).origin !== facilitator) return real(input, init);
      return Response.json({ kinds: [{ x402Version: 2, scheme: "exact", network: "eip155:84532" }] });
    });
    const e = {
      ...env,
      FREE_BETA: "false",
      FACILITATOR_URL: facilitator,
      X402_NETWORK: "eip155:84532",
      USDC_ADDRESS: SEPOLIA_USDC,
    };
    const res = await createApp().fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
      e,
    );
    expect(res.status).toBe(402);
    const offer = decodePaymentRequiredHeader(res.headers.get("payment-required") as string).accepts[0];
    expect(offer?.extra).toMatchObject({ name: "USDC", version: "2" });
    const body = await res.json<{ accepts: { network: string; extra: unknown }[] }>();
    expect(body.accepts[0]).toMatchObject({ network: "base-sepolia", extra: { name: "USDC", version: "2" } });
  });
});
