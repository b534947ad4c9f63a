import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { connectMcp, paymentRequiredOf, payToolCall, signPayment } from "../../scripts/lib/mcp-buyer.mjs";
import { inputForToolCalling } from "../../src/mcp/tool-calling-schema";
import { buyCardKey } from "./card-key";
import { balance, buyer, ledgerRows, stack, type ToolResult } from "./mcp-stack";

// The MCP server against the real local stack (anvil + the real USDC contract + facilitator +
// Stripe emulator + wrangler dev), driven by the official MCP TypeScript client.
const TOKEN_COUNT_PRICE = 4000n;

/**
 * Why a paid call was refused: the D1 claim's reason while the first call runs, or, once the
 * nonce is spent on chain, the facilitator's verify error inside a fresh PaymentRequired.
 */
const refusal = (r: ToolResult) => {
  expect(r.isError).toBe(true);
  expect(r.structuredContent).not.toHaveProperty("skill");
  return String(r.structuredContent?.reason ?? r.structuredContent?.error);
};
const REFUSED = /payment_authorization_reused|nonce|already|used|invalid/i;

let client: Client;
beforeAll(async () => {
  client = await connectMcp(stack.base_url);
});
afterAll(async () => {
  await client?.close();
});

const call = (name: string, args: unknown, payment?: PaymentPayload) =>
  client.callTool({
    name,
    arguments: args as Record<string, unknown>,
    ...(payment ? { _meta: { "x402/payment": payment } } : {}),
  }) as Promise<ToolResult>;

describe("MCP over Streamable HTTP, paid with x402 on the local chain", () => {
  it("lists every catalog skill as a tool with its schemas and price", async () => {
    const { tools } = await client.listTools();
    const catalog = (await (await fetch(`${stack.base_url}/api/catalog`)).json()) as {
      skills: { id: string; price_usd: number; input_schema: Record<string, unknown> }[];
    };
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const s of catalog.skills) {
      const tool = byName.get(s.id);
      expect(tool, s.id).toBeDefined();
      expect(tool?.description).toContain(`$${s.price_usd} per call`);
      // The catalog's schema in its tool-calling copy (the route enforces it all).
      const { $schema: _d, ...input } = s.input_schema;
      expect(tool?.inputSchema).toEqual(inputForToolCalling(input));
      expect(tool?.outputSchema?.type).toBe("object");
    }
    expect(tools.some((t) => t.name.startsWith("pricefeed__"))).toBe(true);
  });

  it("unpaid → PaymentRequired; paid with _meta → result, settle response, exact balance drop, one ledger row mcp:<tool>", async () => {
    const b = buyer(5);
    const text = "The quick brown fox jumps over the lazy dog.";
    const unpaid = await call("token_count", { text });
    expect(unpaid.isError).toBe(true);
    const required = paymentRequiredOf(unpaid) as PaymentRequired;
    expect(required).toBeDefined();
    // The x402 MCP transport's text wrapper, where the @x402/mcp client reads the offer.
    expect(JSON.parse(unpaid.content[0]?.text ?? "")["x402/error"]).toMatchObject({
      code: 402,
      data: required,
    });
    // The same offer as the HTTP 402 of the skill.
    const http = await fetch(`${stack.base_url}/api/skills/token-count`, { method: "POST", body: "{}" });
    expect(http.status).toBe(402);
    const httpRequired = decodePaymentRequiredHeader(http.headers.get("payment-required") ?? "");
    expect(required.accepts).toEqual(httpRequired.accepts);
    expect(required.accepts[0]).toMatchObject({
      amount: TOKEN_COUNT_PRICE.toString(),
      network: "eip155:8453",
    });

    const before = await balance(b.address);
    const payment = (await signPayment(b.privateKey, required)) as PaymentPayload;
    const paid = await call("token_count", { text }, payment);
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ skill: "token_count" });
    expect(JSON.parse(paid.content[0]?.text ?? "")).toEqual(paid.structuredContent);
    const receipt = paid._meta?.["x402/payment-response"] as Record<string, unknown>;
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(String(receipt.payer).toLowerCase()).toBe(b.address.toLowerCase());
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(before - (await balance(b.address))).toBe(TOKEN_COUNT_PRICE);
    const rows = await ledgerRows(payment, "mcp:token_count");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ amount_atomic: Number(TOKEN_COUNT_PRICE), tx_hash: receipt.transaction });
  });

  it("20 concurrent calls with one payment: one result, one settlement", async () => {
    const b = buyer(6);
    const unpaid = await call("slugify", { text: "x" });
    const payment = (await signPayment(b.privateKey, paymentRequiredOf(unpaid))) as PaymentPayload;
    const before = await balance(b.address);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call("slugify", { text: `Concurrent ${i}` }, payment)),
    );
    const ok = results.filter((r) => !r.isError);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((x) => x.isError)) expect(refusal(r)).toMatch(REFUSED);
    expect(before - (await balance(b.address))).toBe(3000n);
    expect(await ledgerRows(payment, "mcp:slugify")).toHaveLength(1);
  });

  it("a signature already paid over HTTP is refused over MCP (one claim table)", async () => {
    const b = buyer(7);
    const http = await fetch(`${stack.base_url}/api/skills/sha256`, { method: "POST", body: "{}" });
    const payment = (await signPayment(
      b.privateKey,
      decodePaymentRequiredHeader(http.headers.get("payment-required") ?? ""),
    )) as PaymentPayload;
    const paidOverHttp = await fetch(`${stack.base_url}/api/skills/sha256`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "payment-signature": encodePaymentSignatureHeader(payment),
      },
      body: JSON.stringify({ text: "abc" }),
    });
    expect(paidOverHttp.status).toBe(200);
    const before = await balance(b.address);
    const replay = await call("sha256", { text: "abc" }, payment);
    expect(replay.isError).toBe(true);
    expect(refusal(replay)).toMatch(REFUSED);
    expect(replay.structuredContent).not.toHaveProperty("hex");
    expect(await balance(b.address)).toBe(before);
    expect(await ledgerRows(payment, "mcp:sha256")).toHaveLength(0);
  });

  it("a paid call with invalid arguments is a tool error with the field errors, and is not settled", async () => {
    const b = buyer(7);
    const unpaid = await call("json_sort", { data: {} });
    const payment = (await signPayment(b.privateKey, paymentRequiredOf(unpaid))) as PaymentPayload;
    const before = await balance(b.address);
    const bad = await call("json_sort", { data: {}, reverse: "sideways" }, payment);
    expect(bad.isError).toBe(true);
    const detail = bad.structuredContent?.detail as { loc: string[]; type: string }[];
    expect(Array.isArray(detail) && detail.length > 0).toBe(true);
    expect(bad.content[0]?.text).toMatch(/^Invalid arguments \(not charged\)/);
    expect(await balance(b.address)).toBe(before);
    expect(await ledgerRows(payment, "mcp:json_sort")).toHaveLength(0);
  });

  it("payToolCall (the demo's flow) pays one call end to end", async () => {
    const b = buyer(5);
    const before = await balance(b.address);
    const { unpaid, result } = await payToolCall(client, b.privateKey, "uuid_mint", {});
    expect(paymentRequiredOf(unpaid)).toBeDefined();
    expect((result as ToolResult).isError).toBeFalsy();
    expect(before - (await balance(b.address))).toBe(3000n);
  });
});

describe("MCP paid with card credits", () => {
  it("a key bought through Stripe Checkout (emulator) pays a tool call from its credits; another skill on its connection pays with x402", async () => {
    const checkout = await buyCardKey(stack.base_url, "slugify");
    const key = checkout.key;

    const carded = await connectMcp(stack.base_url, { authorization: `Bearer ${key}` });
    try {
      const result = (await carded.callTool({
        name: "slugify",
        arguments: { text: "Paid By Card Over MCP" },
      })) as ToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ slug: "paid-by-card-over-mcp" });
      expect(result._meta?.["marketplace/credits-remaining"]).toBe(checkout.calls - 1);
      expect(result._meta?.["x402/payment-response"]).toBeUndefined();
      // Another skill on the key's connection: its x402 offer, and a payment for it settles.
      const foreign = (await carded.callTool({ name: "sha256", arguments: { text: "x" } })) as ToolResult;
      expect(foreign.structuredContent?.error).toMatch(
        /This key buys calls of slugify; it cannot pay for sha256\./,
      );
      const b = buyer(7);
      const before = await balance(b.address);
      const payment = (await signPayment(b.privateKey, paymentRequiredOf(foreign))) as PaymentPayload;
      const paidOther = (await carded.callTool({
        name: "sha256",
        arguments: { text: "x" },
        _meta: { "x402/payment": payment },
      })) as ToolResult;
      expect(paidOther.isError, paidOther.content[0]?.text).toBeFalsy();
      expect(paidOther._meta?.["x402/payment-response"]).toMatchObject({ success: true });
      expect(before - (await balance(b.address))).toBe(
        BigInt(paymentRequiredOf(foreign)?.accepts[0]?.amount ?? 0),
      );
      const credits = await fetch(`${stack.base_url}/api/credits`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(await credits.json()).toMatchObject({ calls_left: checkout.calls - 1 });
    } finally {
      await carded.close();
    }
  });
});
