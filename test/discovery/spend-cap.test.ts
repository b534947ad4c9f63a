import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { pricingConfig } from "../../src/partners/config";
import { partnerPricing } from "../../src/partners/pricing";
import { FIXTURE } from "../fixtures/upstream-requests";

// The guides' TypeScript client is @x402/core's x402Client, which pays at most $1 a payment by
// default (spendControls.maxAmountPerPayment): a $3 partner service could not be bought with it.
// llms.txt and AGENTS.md give the one line that raises the cap, and that line does buy it.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const get = async (path: string) =>
  (await app.fetch(new Request(`https://skills.test${path}`), paidEnv)).text();

/** A skill's offer at `micros`: the network, asset and payee the partner routes use too. */
async function offerAt(micros: bigint): Promise<PaymentRequired> {
  const res = await app.fetch(
    new Request("https://skills.test/api/skills/sha256", {
      method: "POST",
      body: JSON.stringify({ text: "a" }),
    }),
    paidEnv,
  );
  const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  return { ...required, accepts: required.accepts.map((a) => ({ ...a, amount: micros.toString() })) };
}

describe("the guides say how to raise x402Client's $1 cap for partner prices", () => {
  it("llms.txt names setSpendControls with the highest partner price; AGENTS.md's snippet carries the line", async () => {
    const pc = pricingConfig(env);
    if ("error" in pc) throw new Error(pc.error);
    const partner = partnerPricing(pc);
    const highest = Math.max(Number(partner.tryRoutes.max), Number(partner.refinery.max));
    expect(highest).toBeGreaterThan(1);
    const llms = await get("/llms.txt");
    expect(llms).toContain(`client.setSpendControls({ maxAmountPerPayment: "$${highest}" })`);
    const agents = await get("/AGENTS.md");
    expect(agents).toContain(`// client.setSpendControls({ maxAmountPerPayment: "$${highest}" });`);
  });

  it("AGENTS.md and llms.txt name the same cap whatever the price multiplier", async () => {
    const e = { ...paidEnv, PARTNER_PRICE_MULTIPLIER: "10" };
    const text = async (path: string) =>
      (await app.fetch(new Request(`https://skills.test${path}`), e)).text();
    const cap = (doc: string) => /maxAmountPerPayment: "\$(\d+(?:\.\d+)?)"/.exec(doc)?.[1];
    const llms = cap(await text("/llms.txt"));
    expect(Number(llms)).toBeGreaterThan(3);
    expect(cap(await text("/AGENTS.md"))).toBe(llms);
  });

  it("the line lets x402Client sign the highest partner price, which its default refuses", async () => {
    const pc = pricingConfig(env);
    if ("error" in pc) throw new Error(pc.error);
    const partner = partnerPricing(pc);
    const highest = Math.max(Number(partner.tryRoutes.max), Number(partner.refinery.max));
    const required = await offerAt(BigInt(Math.round(highest * 1_000_000)));
    const signer = privateKeyToAccount(generatePrivateKey());
    const plain = registerExactEvmScheme(new x402Client(), { signer });
    await expect(plain.createPaymentPayload(required)).rejects.toThrow(/maxAmountPerPayment/);
    const raised = registerExactEvmScheme(new x402Client(), { signer });
    raised.setSpendControls({ maxAmountPerPayment: `$${highest}` });
    const payment = await raised.createPaymentPayload(required);
    expect(payment.accepted.amount).toBe(required.accepts[0]?.amount);
  });
});
