import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { payingFetch, receiptOf } from "../../scripts/lib/buyer.mjs";
// @ts-expect-error plain JS helpers shared with the scripts
import { localClientOptions, USDC_DOMAIN, usdcBalance } from "../../scripts/lib/chain.mjs";
import { resign } from "../fixtures/payments";

const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  usdc_address: string;
  admin_token: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const PRICES: Record<string, number> = {
  "osint-graph": 10000,
  research: 15000,
  seo: 12000,
  "ai-detector": 10000,
  "json-flatten": 6000,
  "json-sort": 3000,
  "text-diff": 6000,
  "url-normalize": 5000,
  "html-clean": 8000,
  "json-schema-validate": 6000,
  "keyword-extract": 8000,
  "token-count": 4000,
  sha256: 3000,
  "uuid-mint": 3000,
  slugify: 3000,
};
function buyerAt(i: number) {
  const b = stack.buyers[i];
  if (!b) throw new Error(`the stack has no buyer ${i}`);
  return b;
}
function offerOf(required: PaymentRequired): PaymentRequirements {
  const o = required.accepts[0];
  if (!o) throw new Error("the 402 offered nothing");
  return o;
}
const url = (slug: string) => `${stack.base_url}/api/skills/${slug}`;
const post = (slug: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url(slug), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
const balance = (who: string): Promise<bigint> => usdcBalance(stack.rpc_url, who);
const ledger = async (query = "") =>
  (await (
    await fetch(`${stack.base_url}/api/admin/payments?limit=1000${query}`, {
      headers: { authorization: `Bearer ${stack.admin_token}` },
    })
  ).json()) as {
    payments: Record<string, string | number>[];
    totals: { count: number; amount_atomic: number };
  };

async function challenge(slug: string): Promise<PaymentRequired> {
  const res = await post(slug, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
}

/** A signed x402 v2 payment, as @x402/fetch would send it, for chosen requirements. */
async function sign(buyer: number, requirements: PaymentRequirements, resource: PaymentRequired["resource"]) {
  // Spend controls off: these tests sign deliberately wrong offers to see the server refuse them.
  const client = registerExactEvmScheme(new x402Client().setSpendControls(false), {
    signer: privateKeyToAccount(buyerAt(buyer).privateKey),
  });
  return client.createPaymentPayload({ x402Version: 2, resource, accepts: [requirements] });
}
const header = (p: PaymentPayload) => ({ "payment-signature": encodePaymentSignatureHeader(p) });

/** The same payment with some authorization fields changed, signed again by the buyer. */
const resignBy = (buyer: number, payment: PaymentPayload, changes: Record<string, string>) =>
  resign(privateKeyToAccount(buyerAt(buyer).privateKey), USDC_DOMAIN, payment, changes);

describe("x402 v2 on eip155:8453 against the local chain", () => {
  beforeAll(() => {
    expect(stack.buyers.length).toBeGreaterThanOrEqual(10);
  });

  it("every skill answers an unpaid call with 402 and its exact price, whatever the body", async () => {
    for (const [slug, amount] of Object.entries(PRICES)) {
      const res = await fetch(url(slug), { method: "POST", body: "not even json" });
      expect(res.status, slug).toBe(402);
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
      expect(required.x402Version).toBe(2);
      expect(required.accepts).toEqual([
        {
          scheme: "exact",
          network: "eip155:8453",
          amount: String(amount),
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          payTo: stack.pay_to,
          maxTimeoutSeconds: 300,
          extra: { name: "USD Coin", version: "2" },
        },
      ]);
      // The body is the same offer in x402 v1 form, for v1 clients (x402-fetch, x402-axios).
      const body = (await res.json()) as {
        x402Version: number;
        accepts: unknown;
        error: string;
        extensions: { bazaar: unknown };
      };
      expect(body.x402Version).toBe(1);
      expect(body.accepts).toEqual([
        {
          scheme: "exact",
          network: "base",
          maxAmountRequired: String(amount),
          resource: required.resource.url,
          description: required.resource.description,
          mimeType: "application/json",
          payTo: stack.pay_to,
          maxTimeoutSeconds: 300,
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          extra: { name: "USD Coin", version: "2" },
          // What the route takes and returns, for v1 crawlers: the bazaar declaration's input and
          // example answer (test/payments/v1-output-schema.test.ts checks its shape).
          outputSchema: {
            input: expect.objectContaining({ type: "http", method: "POST", discoverable: true }),
            output: expect.anything(),
          },
        },
      ]);
      expect(body.error).toMatch(/^Payment required: this call costs \$0\.0\d+/);
      expect(body.extensions.bazaar).toBeTruthy();
    }
  });

  it("a paid call returns 200 with an on-chain receipt, moves exactly the price and writes one ledger row", async () => {
    const buyer = buyerAt(1);
    const [b0, p0] = await Promise.all([balance(buyer.address), balance(stack.pay_to)]);
    const res = await payingFetch(buyer.privateKey)(url("sha256"), {
      method: "POST",
      body: JSON.stringify({ text: "abc" }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { hex: string }).hex).toMatch(/^ba7816bf/);
    const receipt = receiptOf(res);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453", payer: buyer.address });
    const chain = createPublicClient(localClientOptions(stack.rpc_url));
    const tx = await chain.getTransactionReceipt({ hash: receipt.transaction });
    expect(tx.status).toBe("success");
    const [b1, p1] = await Promise.all([balance(buyer.address), balance(stack.pay_to)]);
    expect(b0 - b1).toBe(3000n);
    expect(p1 - p0).toBe(3000n);
    const rows = (await ledger()).payments.filter((r) => r.tx_hash === receipt.transaction);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      resource: "sha256",
      amount_atomic: 3000,
      payer: buyer.address,
      pay_to: stack.pay_to,
      network: "eip155:8453",
      request_id: res.headers.get("x-request-id"),
    });
  });

  it("a replayed signature is refused and the handler does not run twice", async () => {
    const required = await challenge("uuid-mint");
    const payment = await sign(2, offerOf(required), required.resource);
    const first = await post("uuid-mint", { count: 1 }, header(payment));
    expect(first.status).toBe(200);
    const before = (await ledger()).totals.count;
    const again = await post("uuid-mint", { count: 1 }, header(payment));
    expect(again.status).toBe(402);
    expect(((await again.json()) as { error: string }).error).toMatch(/rejected|already used/);
    expect((await ledger()).totals.count).toBe(before);
  });

  it("20 concurrent requests with one signature give exactly one 200 and one settlement", async () => {
    const required = await challenge("uuid-mint");
    const payment = await sign(3, offerOf(required), required.resource);
    const buyer = buyerAt(3).address;
    const b0 = await balance(buyer);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => post("uuid-mint", { count: 1 }, header(payment))),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 402)).toBe(true);
    expect(b0 - (await balance(buyer))).toBe(3000n);
  });

  it("a paid call with an invalid body is 422 and moves no money; the authorization stays usable", async () => {
    const required = await challenge("slugify");
    const payment = await sign(4, offerOf(required), required.resource);
    const buyer = buyerAt(4).address;
    const [b0, p0] = await Promise.all([balance(buyer), balance(stack.pay_to)]);
    const bad = await post("slugify", { max_len: 0 }, header(payment));
    expect(bad.status).toBe(422);
    expect(bad.headers.get("payment-response")).toBeNull();
    expect(await balance(buyer)).toBe(b0);
    expect(await balance(stack.pay_to)).toBe(p0);
    const good = await post("slugify", { text: "ok now" }, header(payment));
    expect(good.status).toBe(200);
    expect(b0 - (await balance(buyer))).toBe(3000n);
  });

  describe("payments that must be refused with a reason", () => {
    it.each([
      ["an offer with a lower price than quoted", (r: PaymentRequirements) => ({ ...r, amount: "1" })],
      ["wrong network", (r: PaymentRequirements) => ({ ...r, network: "eip155:84532" as const })],
      [
        "wrong asset",
        (r: PaymentRequirements) => ({ ...r, asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }),
      ],
      ["wrong payee", (r: PaymentRequirements) => ({ ...r, payTo: buyerAt(9).address })],
    ])("%s", async (_name, tamper) => {
      const required = await challenge("sha256");
      const buyer = buyerAt(5).address;
      const b0 = await balance(buyer);
      const payment = await sign(5, tamper(offerOf(required)), required.resource);
      const res = await post("sha256", { text: "x" }, header(payment));
      expect(res.status).toBe(402);
      const body = (await res.json()) as { error: string; reason: string };
      expect(body.error).toMatch(/^Payment rejected: /);
      expect(body.reason).not.toBe("payment_required");
      expect(await balance(buyer)).toBe(b0);
    });

    it("expired authorization", async () => {
      const required = await challenge("sha256");
      const payment = await sign(5, offerOf(required), required.resource);
      const now = Math.floor(Date.now() / 1000);
      const res = await post(
        "sha256",
        { text: "x" },
        header(await resignBy(5, payment, { validAfter: String(now - 600), validBefore: String(now - 60) })),
      );
      expect(res.status).toBe(402);
      expect(((await res.json()) as { error: string }).error).toMatch(/^Payment rejected: /);
    });

    it("underpayment against the real requirements (the authorization moves one unit less)", async () => {
      const required = await challenge("sha256");
      const offer = offerOf(required);
      const buyer = buyerAt(5).address;
      const b0 = await balance(buyer);
      const payment = await sign(5, offer, required.resource);
      const short = await resignBy(5, payment, { value: String(BigInt(offer.amount) - 1n) });
      const res = await post("sha256", { text: "x" }, header(short));
      expect(res.status).toBe(402);
      const body = (await res.json()) as { error: string; reason: string };
      expect(body.error).toMatch(/^Payment rejected: /);
      expect(body.reason).toMatch(/value|amount/i);
      expect(await balance(buyer)).toBe(b0);
    });

    it("bad signature", async () => {
      const required = await challenge("sha256");
      const payment = await sign(5, offerOf(required), required.resource);
      const p = payment.payload as { signature: string };
      const flipped = `${p.signature.slice(0, -4)}${p.signature.slice(-4) === "1b1b" ? "1c1c" : "1b1b"}`;
      const res = await post(
        "sha256",
        { text: "x" },
        header({ ...payment, payload: { ...payment.payload, signature: flipped } }),
      );
      expect(res.status).toBe(402);
      expect(((await res.json()) as { error: string }).error).toMatch(/^Payment rejected: /);
    });
  });

  it("load: 200 paid calls from 10 concurrent buyers; the ledger equals the on-chain income to the unit", async () => {
    const p0 = await balance(stack.pay_to);
    const l0 = await ledger();
    const started = performance.now();
    const results = await Promise.all(
      stack.buyers.slice(0, 10).map(async (buyer) => {
        const pay = payingFetch(buyer.privateKey);
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++) {
          const res = await pay(url("slugify"), {
            method: "POST",
            body: JSON.stringify({ text: `load ${i}` }),
          });
          statuses.push(res.status);
          await res.arrayBuffer();
        }
        return statuses;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const ok = results.flat().filter((s) => s === 200).length;
    const income = (await balance(stack.pay_to)) - p0;
    const l1 = await ledger();
    const ledgerSum = BigInt(l1.totals.amount_atomic - l0.totals.amount_atomic);
    console.log(
      `load: ${ok}/200 paid calls in ${seconds.toFixed(1)} s (${(200 / seconds).toFixed(1)} calls/s); ` +
        `ledger +${l1.totals.count - l0.totals.count} rows = ${ledgerSum} atomic; pay_to on-chain +${income} atomic`,
    );
    expect(ok).toBe(200);
    expect(l1.totals.count - l0.totals.count).toBe(200);
    expect(ledgerSum).toBe(income);
    expect(income).toBe(200n * 3000n);
  });
});
