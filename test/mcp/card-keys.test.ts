import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { hashKey } from "../../src/payments/credits";
import { skills } from "../../src/skills/registry";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unsignedPayment } from "../fixtures/payments";
import { countingDb } from "../fixtures/rows-read";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpCall, mcpToolCall, type ToolResult } from "../helpers";

// A card key on an MCP connection (src/mcp/card-key.ts): the connection's headers go with every
// call, so a key pays only the calls of its own skill and stands in the way of no other payment.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
/** The facilitator double settles this payer's authorizations. */
const SETTLES_OK = "0x00000000000000000000000000000000000a0001";

const callTool = async (name: string, args: unknown, meta?: Record<string, unknown>, headers = {}) =>
  (await mcpCall(app, paidEnv, name, args, meta, headers)).result;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const priceOf = (id: string) => skills.find((s) => s.id === id)?.price_atomic.toString();

/** A payment for the offer of an unpaid call of `tool` (made on a connection without a key). */
async function paymentFor(tool: string, args: unknown) {
  const unpaid = await callTool(tool, args);
  const { payload, nonce } = unsignedPayment(
    unpaid.structuredContent as unknown as PaymentRequired,
    SETTLES_OK,
  );
  const { network, asset } = payload.accepted;
  const claim = `${network}:${asset}:${SETTLES_OK}:${nonce}`.toLowerCase();
  return {
    payload,
    settles: () => upstreamRequests(`facilitator-settle nonce=${nonce}`),
    ledger: async () =>
      (await env.DB.prepare("SELECT resource FROM payments WHERE nonce = ?1").bind(claim).all()).results,
  };
}

describe("MCP: a card key on the connection pays its own skill and blocks no other payment", () => {
  it("an unpaid call of another skill gets that skill's x402 offer, with a note that the key buys its own skill only", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const result = await callTool("sha256", { text: "x" }, undefined, bearer(key));
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      x402Version: 2,
      accepts: [expect.objectContaining({ amount: priceOf("sha256") })],
    });
    expect(result.structuredContent?.error).toBe(
      "The card-credit key on this connection was not used: This key buys calls of slugify; it cannot pay for sha256. Pay this call with x402 (the offer is here).",
    );
    expect(result._meta?.["x402/error"]).toEqual(result.structuredContent);
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("a paid call of another skill settles its x402 payment and spends no credit", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const pay = await paymentFor("sha256", { text: "abc" });
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": pay.payload }, bearer(key));
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    expect(String(result.structuredContent?.hex)).toMatch(/^ba7816bf/);
    expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: true, payer: SETTLES_OK });
    expect(result._meta).not.toHaveProperty("marketplace/credits-remaining");
    expect(await pay.settles()).toBe(1);
    expect(await pay.ledger()).toEqual([{ resource: "mcp:sha256" }]);
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("a call of the key's own skill spends one credit; with an x402 payment beside it, still one credit and no USDC", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const own = await callTool("slugify", { text: "Own Skill" }, undefined, bearer(key));
    expect(own.structuredContent).toMatchObject({ slug: "own-skill" });
    expect(own._meta?.["marketplace/credits-remaining"]).toBe(2);
    const pay = await paymentFor("slugify", { text: "Both" });
    const both = await callTool("slugify", { text: "Both" }, { "x402/payment": pay.payload }, bearer(key));
    expect(both.structuredContent).toMatchObject({ slug: "both" });
    expect(both._meta?.["marketplace/credits-remaining"]).toBe(1);
    expect(both._meta).not.toHaveProperty("x402/payment-response");
    expect(await pay.settles()).toBe(0);
    expect(await pay.ledger()).toEqual([]);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });

  it("a key that cannot pay at all (unknown, malformed, frozen by a dispute) gets the offer and why, and a payment beside it settles", async () => {
    const frozen = await keyWith(env.DB, 3, "slugify");
    await env.DB.prepare("UPDATE api_keys SET dispute_status = 'open' WHERE key_hash = ?1")
      .bind(await hashKey(frozen))
      .run();
    const cases: [string, RegExp][] = [
      [`Bearer mk_${crypto.randomUUID().replaceAll("-", "")}`, /not used: Unknown card-credit key\./],
      ["Bearer mk_short", /not used: Malformed card-credit key\./],
      [`Bearer ${frozen}`, /credits are frozen/],
    ];
    for (const [authorization, why] of cases) {
      const result = await callTool("slugify", { text: "x" }, undefined, { authorization });
      expect(result.structuredContent?.accepts, authorization).toHaveLength(1);
      expect(result.structuredContent?.error, authorization).toMatch(why);
    }
    const pay = await paymentFor("slugify", { text: "Paid" });
    const paid = await callTool("slugify", { text: "Paid" }, { "x402/payment": pay.payload }, bearer(frozen));
    expect(paid.structuredContent).toMatchObject({ slug: "paid" });
    expect(await pay.settles()).toBe(1);
  });

  it("a key whose row cannot be read before the call goes on as before: the gate spends it", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    // The look-up (findKey's SELECT) fails; the gate's own UPDATE still runs.
    const db = new Proxy(env.DB, {
      get(target, prop) {
        if (prop !== "prepare") return Reflect.get(target, prop).bind?.(target) ?? Reflect.get(target, prop);
        return (sql: string) => {
          if (sql.startsWith("SELECT id, skill_id")) throw new Error("D1 is down");
          return target.prepare(sql);
        };
      },
    });
    const res = await app.fetch(mcpToolCall("slugify", { text: "Read Later" }, undefined, bearer(key)), {
      ...paidEnv,
      DB: db,
    });
    const { result } = await res.json<{ result: ToolResult }>();
    expect(result.structuredContent).toMatchObject({ slug: "read-later" });
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("a partner tool's unpaid call on a key's connection gets its offer, saying card credits pay skills only", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const result = await callTool("pricefeed__price_coin", { coin: "eth" }, undefined, bearer(key));
    expect(result.structuredContent?.accepts).toHaveLength(1);
    expect(result.structuredContent?.error).toMatch(/^Card credits pay skill tools only/);
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("the note carries the gate's own reason for the key, word for word (one check, payments/credits.ts keyCanPay)", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const http = await app.fetch(
      new Request("https://example.test/api/skills/sha256", {
        method: "POST",
        headers: { "content-type": "application/json", ...bearer(key) },
        body: JSON.stringify({ text: "x" }),
      }),
      paidEnv,
    );
    expect(http.status).toBe(403);
    const { detail } = await http.json<{ detail: string }>();
    const result = await callTool("sha256", { text: "x" }, undefined, bearer(key));
    expect(result.structuredContent?.error).toContain(detail);
  });
});

describe("MCP: a card key on a card-only deployment (X402_ENABLED=false)", () => {
  const cardOnly = { ...paidEnv, X402_ENABLED: "false" };
  const cardOnlyCall = async (name: string, args: unknown, headers: Record<string, string>) =>
    (await mcpCall(app, cardOnly, name, args, undefined, headers)).result;

  it("a call the connection's key cannot pay says why the key did not pay, and offers no x402", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    const cases: [Record<string, string>, string][] = [
      [bearer(key), "This key buys calls of slugify; it cannot pay for sha256."],
      [bearer(`mk_${crypto.randomUUID().replaceAll("-", "")}`), "Unknown card-credit key."],
    ];
    for (const [headers, why] of cases) {
      const result = await cardOnlyCall("sha256", { text: "x" }, headers);
      const text = result.content[0]?.text ?? "";
      expect(result.isError).toBe(true);
      expect(text).toMatch(/^Payment refused: Payment required: x402 payments are disabled/);
      expect(text).toContain(`The card-credit key on this connection was not used: ${why}`);
      expect(text).not.toMatch(/x402 \(the offer is here\)/);
      expect(result.structuredContent).toMatchObject({ status: 402, note: expect.stringContaining(why) });
      expect(result.structuredContent).not.toHaveProperty("accepts");
    }
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("/docs/mcp says so: no offer there, the refusal says why the key did not pay", async () => {
    const page = async (e: object) =>
      (await (await app.fetch(new Request("https://example.test/docs/mcp"), e)).text()).replace(/\s+/g, " ");
    const off = await page(cardOnly);
    expect(off).toContain("refused without an offer");
    expect(off).not.toContain("gets the offer with a note");
    expect(await page(paidEnv)).toContain("gets the offer with a note");
  });

  it("the key's own skill is paid by a credit there", async () => {
    const key = await keyWith(env.DB, 2, "slugify");
    const result = await cardOnlyCall("slugify", { text: "Card Only" }, bearer(key));
    expect(result.structuredContent).toMatchObject({ slug: "card-only" });
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});

describe("MCP: reading the connection's card key", () => {
  const keyReads = async (e: object, key: string) => {
    const { db, seen } = countingDb(env.DB, (sql) => /^\s*SELECT\b[\s\S]*FROM api_keys/i.test(sql)); // reads, not the spend
    const result = (await mcpCall(app, { ...e, DB: db }, "slugify", { text: "Read" }, undefined, bearer(key)))
      .result;
    expect(result.structuredContent).toMatchObject({ slug: "read" });
    return seen.statements;
  };

  it("is not done in free beta, where the gate never uses the key (no D1 read per call)", async () => {
    const key = await keyWith(env.DB, 3, "slugify");
    expect(await keyReads({ ...env, FREE_BETA: "true" }, key)).toBe(0);
    expect(await callsLeft(env.DB, key)).toBe(3);
    // The counter sees the read where it is made: once, before the gate spends the key.
    expect(await keyReads(paidEnv, key)).toBe(1);
  });
});
