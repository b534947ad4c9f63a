import { Client as ModernClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPaymentHeader } from "x402/client";
import { createSigner } from "x402-fetch";
// @ts-expect-error plain JS helpers shared with the scripts
import { connectMcp, paymentRequiredOf, signPayment } from "../../scripts/lib/mcp-buyer.mjs";
import { buyCardKey } from "./card-key";
import { balance, buyer, ledgerRows, stack, type ToolResult } from "./mcp-stack";

// MCP 2026-07-28 (stateless: server/discover, no initialize, the version in every request's _meta)
// against the real local stack, driven by the real 2026 client (@modelcontextprotocol/client 2.x,
// pinned to that revision), each answer set beside the legacy client's (SDK 1.x, 2025-11-25) for
// the same call: the two eras share the tools and the payment chain, so they must say the same.
const MODERN = "2026-07-28";

type Caller = (
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
) => Promise<ToolResult>;

async function connectModern(headers: Record<string, string> = {}) {
  const client = new ModernClient(
    { name: "mcp-2026-buyer", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL("/mcp", stack.base_url), { requestInit: { headers } }),
  );
  return client;
}
const caller =
  (client: ModernClient | LegacyClient): Caller =>
  (name, args, meta) =>
    client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }) as Promise<ToolResult>;

/** What 2026-07-28 adds to every result by rule (the server's identity), left out to compare eras. */
const SERVER_INFO = "io.modelcontextprotocol/serverInfo";
function asLegacy(r: ToolResult): ToolResult {
  const { [SERVER_INFO]: info, ...meta } = r._meta ?? {};
  expect(info).toMatchObject({ name: "agent-skills-marketplace" });
  const { _meta: _, ...rest } = r;
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
}
/** A paid result's shape: its content, and which _meta keys it carries (values are per call). */
const shape = (r: ToolResult) => ({
  isError: r.isError ?? false,
  structuredContent: r.structuredContent,
  metaKeys: Object.keys(r._meta ?? {}).sort(),
});

let modern: ModernClient;
let legacy: LegacyClient;
let callModern: Caller;
let callLegacy: Caller;
beforeAll(async () => {
  modern = await connectModern();
  legacy = await connectMcp(stack.base_url);
  callModern = caller(modern);
  callLegacy = caller(legacy);
});
afterAll(async () => {
  await modern?.close();
  await legacy?.close();
});

describe("MCP 2026-07-28 with the real 2026 client, beside the legacy client", () => {
  it("server/discover: this revision, the capabilities and instructions initialize gives", async () => {
    const discovered = modern.getDiscoverResult();
    // Legacy revisions are reached by initialize only (README "MCP"): discover names the modern one.
    expect(discovered?.supportedVersions).toEqual([MODERN]);
    expect(discovered?.capabilities).toEqual(legacy.getServerCapabilities());
    expect(discovered?.instructions).toBe(legacy.getInstructions());
    expect(discovered?._meta?.[SERVER_INFO]).toEqual(legacy.getServerVersion());
  });

  it("tools/list and resources/list: the same lists", async () => {
    expect((await modern.listTools()).tools).toEqual((await legacy.listTools()).tools);
    expect((await modern.listResources()).resources).toEqual((await legacy.listResources()).resources);
  });

  it("unpaid: the same x402 offer, in the same places", async () => {
    const args = { text: "The quick brown fox" };
    const [m, l] = [await callModern("token_count", args), await callLegacy("token_count", args)];
    expect(m.isError).toBe(true);
    expect(paymentRequiredOf(m)).toMatchObject({ x402Version: 2, accepts: [{ amount: "4000" }] });
    expect(asLegacy(m)).toEqual(l);
  });

  it("paid over x402 v2 on chain: result, receipt and settlement, one transfer each; as the legacy path", async () => {
    const args = { text: "The quick brown fox jumps over the lazy dog." };
    const paid = async (call: Caller, who: 5 | 6) => {
      const b = buyer(who);
      const required = paymentRequiredOf(await call("token_count", args)) as PaymentRequired;
      const payment = (await signPayment(b.privateKey, required)) as PaymentPayload;
      const before = await balance(b.address);
      const result = await call("token_count", args, { "x402/payment": payment });
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(before - (await balance(b.address))).toBe(4000n);
      const settled = result._meta?.["x402/payment-response"] as Record<string, unknown>;
      expect(settled).toMatchObject({ success: true, network: "eip155:8453" });
      expect(String(settled.payer).toLowerCase()).toBe(b.address.toLowerCase());
      expect(result._meta?.["marketplace/receipt"]).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(await ledgerRows(payment, "mcp:token_count")).toHaveLength(1);
      // The same authorization again: refused, nothing moves.
      const again = await call("token_count", args, { "x402/payment": payment });
      expect(again.isError).toBe(true);
      expect(await balance(b.address)).toBe(before - 4000n);
      return { result, again };
    };
    const m = await paid(callModern, 5);
    const l = await paid(callLegacy, 6);
    expect(shape(asLegacy(m.result))).toEqual(shape(l.result));
    expect(asLegacy(m.result).content).toEqual(l.result.content);
    expect(m.again.structuredContent?.reason).toBe(l.again.structuredContent?.reason);
  });

  it('paid with the v1 key _meta["x402.payment"] on chain: both settlement keys; as the legacy path', async () => {
    const b = buyer(7);
    const signer = await createSigner("base", b.privateKey);
    const paid = async (call: Caller) => {
      const unpaid = await call("sha256", { text: "abc" });
      const v1 = JSON.parse(unpaid.content[1]?.text ?? "null") as {
        accepts: Parameters<typeof createPaymentHeader>[2][];
      };
      const header = await createPaymentHeader(
        signer,
        1,
        v1.accepts[0] as Parameters<typeof createPaymentHeader>[2],
      );
      const before = await balance(b.address);
      const result = await call("sha256", { text: "abc" }, { "x402.payment": header });
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(result.structuredContent?.hex).toMatch(/^ba7816bf/);
      expect(result._meta?.["x402.payment-response"]).toMatchObject({ success: true, network: "base" });
      expect(result._meta?.["x402/payment-response"]).toMatchObject({
        success: true,
        network: "eip155:8453",
      });
      expect(before - (await balance(b.address))).toBe(3000n);
      return result;
    };
    const m = await paid(callModern);
    const l = await paid(callLegacy);
    expect(shape(asLegacy(m))).toEqual(shape(l));
  });

  it("a retry with the same payment id gets the stored answer: one transfer, one ledger row", async () => {
    const b = buyer(5);
    const retried = async (call: Caller) => {
      const required = paymentRequiredOf(await call("uuid_mint", {})) as PaymentRequired;
      const id = generatePaymentId();
      const withId = async () => {
        const p = (await signPayment(b.privateKey, required)) as PaymentPayload;
        const extensions = { ...(p.extensions ?? {}) };
        appendPaymentIdentifierToExtensions(extensions, id);
        return { ...p, extensions };
      };
      const before = await balance(b.address);
      const first = await withId();
      const r1 = await call("uuid_mint", {}, { "x402/payment": first });
      const r2 = await call("uuid_mint", {}, { "x402/payment": await withId() });
      expect(r1.isError, r1.content[0]?.text).toBeFalsy();
      expect(r2.structuredContent).toEqual(r1.structuredContent);
      expect(before - (await balance(b.address))).toBe(3000n);
      expect(await ledgerRows(first, "mcp:uuid_mint")).toHaveLength(1);
      return [r1, r2] as const;
    };
    const [m1, m2] = await retried(callModern);
    const [l1, l2] = await retried(callLegacy);
    expect(Object.keys(asLegacy(m1)._meta ?? {}).sort()).toEqual(Object.keys(l1._meta ?? {}).sort());
    expect(Object.keys(asLegacy(m2)._meta ?? {}).sort()).toEqual(Object.keys(l2._meta ?? {}).sort());
  });

  it("a card key (Authorization or X-API-Key) pays from its credits; the same idempotency key spends one credit", async () => {
    const { key, calls } = await buyCardKey(stack.base_url, "slugify");
    const left = async () =>
      (
        (await (
          await fetch(`${stack.base_url}/api/credits`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as { calls_left: number }
      ).calls_left;
    let spent = 0;
    for (const headers of [{ authorization: `Bearer ${key}` }, { "x-api-key": key }]) {
      const carded = await connectModern(headers);
      const cardedLegacy = await connectMcp(stack.base_url, headers);
      try {
        const [m, l] = [caller(carded), caller(cardedLegacy)];
        const mr = await m("slugify", { text: "Paid By Card" });
        const lr = await l("slugify", { text: "Paid By Card" });
        spent += 2;
        expect(mr.structuredContent).toMatchObject({ slug: "paid-by-card" });
        expect(mr._meta?.["marketplace/credits-remaining"]).toBe(calls - spent + 1);
        expect(mr._meta?.["x402/payment-response"]).toBeUndefined();
        expect(shape(asLegacy(mr))).toEqual(shape(lr));

        for (const call of [m, l]) {
          const meta = { "marketplace/idempotency-key": crypto.randomUUID() };
          const once = await call("slugify", { text: "Once" }, meta);
          const again = await call("slugify", { text: "Once" }, meta);
          spent += 1;
          expect(again.structuredContent).toEqual(once.structuredContent);
          expect(again._meta?.["marketplace/idempotent-replay"]).toBe(true);
        }
        expect(await left()).toBe(calls - spent);

        // Another skill on the key's connection: the offer, saying why the key did not pay.
        const foreign = await m("sha256", { text: "x" });
        expect(asLegacy(foreign)).toEqual(await l("sha256", { text: "x" }));
        expect(foreign.structuredContent?.error).toMatch(
          /This key buys calls of slugify; it cannot pay for sha256\./,
        );
      } finally {
        await carded.close();
        await cardedLegacy.close();
      }
    }
  });

  it("a partner tool: the same offer, paid on chain; an extra argument is refused before any charge", async () => {
    const b = buyer(7);
    const [mu, lu] = [
      await callModern("pricefeed__price_coin", { coin: "eth" }),
      await callLegacy("pricefeed__price_coin", { coin: "eth" }),
    ];
    expect(asLegacy(mu)).toEqual(lu);
    const required = paymentRequiredOf(mu) as PaymentRequired;
    const price = BigInt(required.accepts[0]?.amount ?? 0);
    const before = await balance(b.address);
    const extra = await callModern(
      "pricefeed__price_coin",
      { coin: "eth", currency: "eur" },
      { "x402/payment": await signPayment(b.privateKey, required) },
    );
    expect(extra.content[0]?.text).toBe(
      "Invalid arguments (not charged): query.currency: this tool takes only coin",
    );
    expect(await balance(b.address)).toBe(before);

    // Each era pays once: the result, its settlement, the price and only the price off the buyer.
    const paidBy = async (call: Caller, offer: PaymentRequired) => {
      const payment = await signPayment(b.privateKey, offer);
      const start = await balance(b.address);
      const result = await call("pricefeed__price_coin", { coin: "eth" }, { "x402/payment": payment });
      expect(result.isError, result.content[0]?.text).toBeFalsy();
      expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: true });
      expect(start - (await balance(b.address))).toBe(price);
      return result;
    };
    const paid = await paidBy(callModern, required);
    const legacyPaid = await paidBy(callLegacy, paymentRequiredOf(lu) as PaymentRequired);
    expect(Object.keys(asLegacy(paid)._meta ?? {}).sort()).toEqual(
      Object.keys(legacyPaid._meta ?? {}).sort(),
    );
    expect(Object.keys(paid.structuredContent ?? {}).sort()).toEqual(
      Object.keys(legacyPaid.structuredContent ?? {}).sort(),
    );
  });
});
