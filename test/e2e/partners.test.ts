import { describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { payingFetch, receiptOf } from "../../scripts/lib/buyer.mjs";
// @ts-expect-error plain JS helpers shared with the scripts
import { usdcBalance } from "../../scripts/lib/chain.mjs";

const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  pay_to: string;
  admin_token: string;
  partner_urls: Record<string, string>;
  partner_wallet: string;
  operating_wallet: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const buyer = () => {
  const b = stack.buyers[6];
  if (!b) throw new Error("no buyer 6");
  return b;
};
const balance = (who: string): Promise<bigint> => usdcBalance(stack.rpc_url, who);
const admin = async (path: string) =>
  (
    await fetch(`${stack.base_url}${path}`, { headers: { authorization: `Bearer ${stack.admin_token}` } })
  ).json() as Promise<{
    partners: { partner_id: string; owed_micro: number; earned_micro: number }[];
  }>;
const setMode = (partner: string, mode: string) =>
  fetch(`${stack.partner_urls[partner]}/_control`, { method: "POST", body: JSON.stringify({ mode }) });

describe("hosted partners through the marketplace, on the local chain", () => {
  it("a paid try of an x402 partner: buyer pays 3x to the marketplace, the marketplace pays 1x upstream", async () => {
    const [b0, m0, p0, o0] = await Promise.all([
      balance(buyer().address),
      balance(stack.pay_to),
      balance(stack.partner_wallet),
      balance(stack.operating_wallet),
    ]);
    const res = await payingFetch(buyer().privateKey)(
      `${stack.base_url}/api/partners/pricefeed/try/price_coin?coin=sol`,
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      partner_id: "pricefeed",
      service_id: "price_coin",
      upstream_status: 200,
      charged: true,
      price_usd: 0.06,
      paid_upstream: true,
      body: { coin: "sol", usd: 180.75 },
    });
    expect(receiptOf(res)).toMatchObject({ success: true });
    expect(b0 - (await balance(buyer().address))).toBe(60_000n);
    expect((await balance(stack.pay_to)) - m0).toBe(60_000n);
    expect((await balance(stack.partner_wallet)) - p0).toBe(20_000n);
    expect(o0 - (await balance(stack.operating_wallet))).toBe(20_000n);

    // The caller's payout row: the partner's 1x share, already paid upstream, so never owed.
    const csv = await (
      await fetch(`${stack.base_url}/api/admin/payouts?format=csv`, {
        headers: { authorization: `Bearer ${stack.admin_token}` },
      })
    ).text();
    const [header, ...lines] = csv.trim().split("\n");
    const columns = header?.split(",") ?? [];
    const rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [columns[i], v])));
    const row = rows.find((r) => r.request_id === res.headers.get("x-request-id"));
    expect(row).toMatchObject({ partner_id: "pricefeed", service_id: "price_coin", paid_upstream: "1" });
    expect(Math.round(Number(row?.partner_share_usd) * 1e6)).toBe(20_000);
    // And the operating wallet's spend, recorded when the partner was paid.
    const { upstream_payments } = (await admin("/api/admin/payouts")) as unknown as {
      upstream_payments: { partner_id: string; amount_micro: number }[];
    };
    expect(upstream_payments.find((u) => u.partner_id === "pricefeed")?.amount_micro).toBeGreaterThanOrEqual(
      20_000,
    );
  });

  it("a paid try of a plain partner records the 1x share as owed", async () => {
    const before =
      (await admin("/api/admin/payouts")).partners.find((p) => p.partner_id === "textkit")?.owed_micro ?? 0;
    const res = await payingFetch(buyer().privateKey)(
      `${stack.base_url}/api/partners/textkit/try/rag-chunker`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "one two", max_tokens: 5 }),
      },
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { body: { received: unknown } }).body.received).toEqual({
      text: "one two",
      max_tokens: 5,
    });
    const after =
      (await admin("/api/admin/payouts")).partners.find((p) => p.partner_id === "textkit")?.owed_micro ?? 0;
    expect(after - before).toBe(12_000);
  });

  it("an upstream 500 or timeout: 502/504 and the buyer is not charged", async () => {
    for (const [mode, status] of [
      ["fail", 502],
      ["slow", 504],
    ] as const) {
      await setMode("textkit", mode);
      const b0 = await balance(buyer().address);
      const res = await payingFetch(buyer().privateKey)(`${stack.base_url}/api/partners/textkit/try/base64`, {
        method: "POST",
      });
      expect(res.status, mode).toBe(status);
      expect(((await res.json()) as { charged: boolean }).charged).toBe(false);
      expect(res.headers.get("payment-response")).toBeNull();
      expect(await balance(buyer().address)).toBe(b0);
    }
    await setMode("textkit", "ok");
  }, 60_000);

  it("path-parameter injection is refused before any payment", async () => {
    for (const value of [
      "../portfolio",
      "%2e%2e%2fportfolio",
      "btc%3Fx=1",
      "btc%23f",
      "evil.com",
      "@evil.com",
    ]) {
      const res = await fetch(`${stack.base_url}/api/partners/pricefeed/try/price_coin?coin=${value}`);
      expect(res.status, value).toBe(422);
    }
  });

  it("the external notify partner is only probed: 403 reported, nothing settled", async () => {
    const m0 = await balance(stack.pay_to);
    const res = await payingFetch(buyer().privateKey)(
      `${stack.base_url}/api/partners/notifyhook/try/notify`,
      { method: "POST" },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ upstream_status: 403, charged: false, price_usd: 0 });
    expect(res.headers.get("payment-response")).toBeNull();
    expect(await balance(stack.pay_to)).toBe(m0);
  });

  it("free services pass without payment", async () => {
    const res = await fetch(`${stack.base_url}/api/partners/pricefeed/try/mcp_tools`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: false, upstream_status: 200 });
  });

  it("the refinery native skill charges each recipe its listing price", async () => {
    const m0 = await balance(stack.pay_to);
    const res = await payingFetch(buyer().privateKey)(`${stack.base_url}/api/skills/refinery-recipes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ raw: "Deliver within 5 days.", request: "obligations", recipe: "eval_set" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      skill: "refinery_recipes",
      recipe: "eval_set",
      price_usd: 0.06,
    });
    expect((await balance(stack.pay_to)) - m0).toBe(60_000n);
  });

  it("the payouts report equals the ledger, and settling zeroes what is owed", async () => {
    const summary = (await admin("/api/admin/payouts")) as unknown as {
      partners: { partner_id: string; owed_micro: number }[];
    };
    const csv = await (
      await fetch(`${stack.base_url}/api/admin/payouts?format=csv`, {
        headers: { authorization: `Bearer ${stack.admin_token}` },
      })
    ).text();
    const rows = csv
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => l.split(","));
    for (const p of summary.partners) {
      const owed = rows
        .filter((r) => r[1] === p.partner_id && r[8] === "0" && r[9] === "")
        .reduce((s, r) => s + Math.round(Number(r[3]) * 1e6), 0);
      expect(owed, p.partner_id).toBe(p.owed_micro);
    }
    const settle = await fetch(`${stack.base_url}/api/admin/payouts/textkit/settle`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.admin_token}`, "content-type": "application/json" },
      body: JSON.stringify({ tx_hash: `0x${"cd".repeat(32)}` }),
    });
    expect(settle.status).toBe(200);
    const after = await admin("/api/admin/payouts");
    expect(after.partners.find((p) => p.partner_id === "textkit")?.owed_micro).toBe(0);
  });
});

describe("issue 19.1 on the local chain: concurrent callers with funds for one call", () => {
  it("5 authorizations from a buyer holding exactly one call's price: one 200, the operating wallet pays the partner once, nothing unrecovered", async () => {
    const { createWalletClient, erc20Abi } = await import("viem");
    const { generatePrivateKey, privateKeyToAccount } = await import("viem/accounts");
    const { x402Client } = await import("@x402/core/client");
    const { decodePaymentRequiredHeader, encodePaymentSignatureHeader } = await import("@x402/core/http");
    const { registerExactEvmScheme } = await import("@x402/evm/exact/client");
    // @ts-expect-error plain JS helpers shared with the scripts
    const { localClientOptions, USDC_ADDRESS } = await import("../../scripts/lib/chain.mjs");
    const url = `${stack.base_url}/api/partners/pricefeed/try/price`;
    // A fresh buyer funded with exactly 30,000 atomic units (one call of `price` at $0.03).
    const poor = privateKeyToAccount(generatePrivateKey());
    const funder = createWalletClient({
      account: privateKeyToAccount(buyer().privateKey),
      ...localClientOptions(stack.rpc_url),
    });
    await funder.writeContract({
      address: USDC_ADDRESS,
      abi: erc20Abi,
      functionName: "transfer",
      args: [poor.address, 30_000n],
    });
    await expect.poll(() => balance(poor.address), { timeout: 10_000 }).toBe(30_000n);

    const challenge = await fetch(url);
    expect(challenge.status).toBe(402);
    const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
    const client = registerExactEvmScheme(new x402Client(), { signer: poor });
    const payments = await Promise.all(
      Array.from({ length: 5 }, () => client.createPaymentPayload(required)),
    );
    const [o0, m0, p0] = await Promise.all([
      balance(stack.operating_wallet),
      balance(stack.pay_to),
      balance(stack.partner_wallet),
    ]);
    const answers = await Promise.all(
      payments.map((p) => fetch(url, { headers: { "payment-signature": encodePaymentSignatureHeader(p) } })),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    // The others moved nothing: refused before sending (402), or broadcast beside the winner and
    // reverted on the spent balance, which the Worker cannot tell from an authorization landed in
    // another transaction (502 settlement_unconfirmed, held for reconciliation; settlement.ts).
    for (const r of answers.filter((a) => a.status !== 200)) {
      expect([402, 502]).toContain(r.status);
      if (r.status === 502)
        expect((await r.json<{ reason: string }>()).reason).toBe("settlement_unconfirmed");
    }
    // The marketplace collected one price and paid the partner one partner price.
    expect((await balance(stack.pay_to)) - m0).toBe(30_000n);
    expect(o0 - (await balance(stack.operating_wallet))).toBe(10_000n);
    expect((await balance(stack.partner_wallet)) - p0).toBe(10_000n);
    expect(await balance(poor.address)).toBe(0n);
    // Every upstream payment of these calls belongs to the one call that was charged.
    const ids = answers.map((r) => r.headers.get("x-request-id"));
    const report = (await admin("/api/admin/payouts")) as unknown as { refunds: { request_id: string }[] };
    expect(report.refunds.filter((r) => ids.includes(r.request_id))).toEqual([]);
    const { upstream_payments } = (await admin("/api/admin/payouts")) as unknown as {
      upstream_payments: { partner_id: string; unrecovered_micro: number }[];
    };
    expect(upstream_payments.find((u) => u.partner_id === "pricefeed")?.unrecovered_micro ?? 0).toBe(0);
  });
});
