import { env } from "cloudflare:test";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequirementsV1 } from "@x402/core/types/v1";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { keyWith } from "../fixtures/credits";
import { authorizationFor, signedPayment } from "../fixtures/payments";
import { createPaymentHeader, v1Offer } from "../fixtures/payments-v1";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { mcpCall, ORIGIN } from "../helpers";

// Vercel's x402-mcp (npm x402-mcp 0.0.5) pays over MCP with x402 v1: its model reads the v1
// requirements from the unpaid result, its generatePaymentAuthorization tool signs them with x402's
// createPaymentHeader, and the call carries that header value in `_meta["x402.payment"]` (a dot).
// It reads the settlement from `_meta["x402.payment-response"]`. Against the facilitator double.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const callTool = async (name: string, args: unknown, meta?: Record<string, unknown>) =>
  (await mcpCall(app, paidEnv, name, args, meta)).result;

const ledger = async (key: string) =>
  (await env.DB.prepare("SELECT resource FROM payments WHERE nonce = ?1").bind(key).all()).results;

describe("x402 v1 payers over MCP (Vercel x402-mcp)", { timeout: 30_000 }, () => {
  it("the unpaid result keeps its v2 offer first and adds the HTTP 402 body's v1 requirements", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    expect(unpaid.isError).toBe(true);
    // v2 clients: structuredContent, content[0] (the x402/error wrapper) and _meta, as before.
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    expect(required).toMatchObject({ x402Version: 2, accepts: [{ network: "eip155:8453" }] });
    expect(JSON.parse(unpaid.content[0]?.text as string)).toEqual({
      "x402/error": { code: 402, message: "Payment required", data: required },
    });
    expect(unpaid._meta).toEqual({ "x402/error": required });
    // v1 payers: what the HTTP 402 body offers v1 clients, the same requirement in v1 form.
    const http = await app.fetch(
      new Request(`${ORIGIN}/api/skills/sha256`, { method: "POST", body: "{}" }),
      paidEnv,
    );
    const httpBody = await http.json<{ accepts: PaymentRequirementsV1[] }>();
    const offer = v1Offer(unpaid);
    expect(offer.x402Version).toBe(1);
    expect(offer.error).toContain('_meta["x402.payment"]');
    // The HTTP body's requirements less their outputSchema (optional in x402's v1 schema): the
    // model copies one into its signing tool's arguments, and the schema was most of the item.
    expect(httpBody.accepts[0]?.outputSchema).toBeDefined();
    expect(offer.accepts).toEqual(httpBody.accepts.map(({ outputSchema: _, ...rest }) => rest));
    expect(offer.accepts[0]).not.toHaveProperty("outputSchema");
    expect(offer.accepts[0]).toMatchObject({
      network: "base",
      maxAmountRequired: required.accepts[0]?.amount,
      payTo: required.accepts[0]?.payTo,
    });
  });

  it("a payment built as createPaymentHeader builds it pays once; the same authorization again is reuse", async () => {
    const offer = v1Offer(await callTool("sha256", { text: "abc" }));
    const payment = await createPaymentHeader(offer.accepts[0] as PaymentRequirementsV1);
    const paid = await callTool("sha256", { text: "abc" }, { "x402.payment": payment.header });
    expect(paid.isError, paid.content[0]?.text).toBeFalsy();
    expect(paid.structuredContent?.hex).toMatch(/^ba7816bf/);
    const settled = paid._meta?.["x402.payment-response"] as Record<string, unknown>;
    expect(settled).toMatchObject({ success: true, network: "base" });
    expect(String(settled.payer).toLowerCase()).toBe(payment.key.split(":")[3]);
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    // The v2 key beside it, as an HTTP v1 call gets PAYMENT-RESPONSE beside X-PAYMENT-RESPONSE.
    expect(paid._meta?.["x402/payment-response"]).toMatchObject({ success: true, network: "eip155:8453" });
    expect(await ledger(payment.key)).toEqual([{ resource: "mcp:sha256" }]);

    // Refused: by the claim table here (the facilitator double verifies it again), on a real chain
    // already by the facilitator's verify (invalid_exact_evm_transaction_simulation_failed, the
    // nonce is spent). Either way nothing is settled or recorded a second time.
    const again = await callTool("sha256", { text: "abc" }, { "x402.payment": payment.header });
    expect(again.isError).toBe(true);
    const reason = again.structuredContent?.reason;
    expect(reason).toMatch(/^(payment_authorization_reused|invalid_exact_evm_.*)$/);
    expect(v1Offer(again)).toMatchObject({ reason, error: again.structuredContent?.error });
    expect(await upstreamRequests(`facilitator-settle nonce=${payment.nonce}`)).toBe(1);
    expect(await ledger(payment.key)).toHaveLength(1);
  });

  it("refusals of a v1 MCP payment give the reasons an HTTP v1 payment gets, before any settlement", async () => {
    const offer = v1Offer(await callTool("sha256", { text: "abc" }));
    const cases: [Record<string, unknown>, string][] = [
      [{ network: "base-sepolia" }, "invalid_network"],
      [{ scheme: "upto" }, "unsupported_scheme"],
      [{ x402Version: 2 }, "invalid_x402_version"],
      [{ payload: null }, "invalid_payload"],
    ];
    for (const [overrides, reason] of cases) {
      const payment = await createPaymentHeader(offer.accepts[0] as PaymentRequirementsV1, overrides);
      const mcp = await callTool("sha256", { text: "abc" }, { "x402.payment": payment.header });
      const http = await app.fetch(
        new Request(`${ORIGIN}/api/skills/sha256`, {
          method: "POST",
          headers: { "x-payment": payment.header },
          body: JSON.stringify({ text: "abc" }),
        }),
        paidEnv,
      );
      expect(http.status).toBe(402);
      expect((await http.json<{ reason: string }>()).reason).toBe(reason);
      expect(mcp.isError).toBe(true);
      expect(mcp.structuredContent).toMatchObject({ x402Version: 2, reason });
      // Named as the MCP fields the payer wrote, not as HTTP headers it never sent.
      expect(String(mcp.structuredContent?.error)).not.toMatch(/X-PAYMENT|PAYMENT-SIGNATURE/);
      expect(v1Offer(mcp)).toMatchObject({ x402Version: 1, reason });
      expect(await upstreamRequests(`facilitator-settle nonce=${payment.nonce}`)).toBe(0);
    }
    const garbage = await callTool("sha256", { text: "abc" }, { "x402.payment": "%%%" });
    expect(garbage.structuredContent?.reason).toBe("invalid_payment_header");
    expect(garbage.structuredContent?.error).toBe(
      'Payment rejected: _meta["x402.payment"] is not base64-encoded JSON',
    );
    const v2Sent = await createPaymentHeader(offer.accepts[0] as PaymentRequirementsV1, { x402Version: 2 });
    const wrongVersion = await callTool("sha256", { text: "abc" }, { "x402.payment": v2Sent.header });
    expect(wrongVersion.structuredContent?.error).toBe(
      'Payment rejected: _meta["x402.payment"] must carry an x402Version 1 payload; send v2 payloads in _meta["x402/payment"]',
    );
  });

  it('a v1 payment nested too deep is refused naming _meta["x402.payment"], the key it came in', async () => {
    const deep = btoa(`{"x402Version":1,"payload":${"[".repeat(300)}${"]".repeat(300)}}`);
    const result = await callTool("sha256", { text: "abc" }, { "x402.payment": deep });
    expect(result.structuredContent?.reason).toBe("invalid_payment_header");
    expect(result.structuredContent?.error).toBe(
      'Payment rejected: _meta["x402.payment"] is not an x402 PaymentPayload: its JSON is nested deeper than 200 levels',
    );
    expect(v1Offer(result).error).toBe(result.structuredContent?.error);
  });

  it('a v1 payload in the v2 key is told it may go in _meta["x402.payment"], in content[0] and content[1]', async () => {
    const offer = v1Offer(await callTool("sha256", { text: "abc" }));
    const payment = await createPaymentHeader(offer.accepts[0] as PaymentRequirementsV1);
    const result = await callTool("sha256", { text: "abc" }, { "x402/payment": payment.header });
    expect(result.structuredContent?.reason).toBe("invalid_x402_version");
    const error = String(result.structuredContent?.error);
    expect(error).toBe(
      'Payment rejected: _meta["x402/payment"] takes x402 v2 payloads only: sign the PaymentRequired in this result (x402Version 2) and send it there, or send an x402 v1 X-PAYMENT value in _meta["x402.payment"]',
    );
    expect(v1Offer(result)).toMatchObject({ error, reason: "invalid_x402_version" });
    expect(await upstreamRequests(`facilitator-settle nonce=${payment.nonce}`)).toBe(0);
  });

  it("content[1] says why the connection's card key did not pay, as content[0] does", async () => {
    const other = await keyWith(env.DB, 3, "slugify");
    const empty = await keyWith(env.DB, 0, "sha256");
    for (const key of [other, empty]) {
      const { result } = await mcpCall(app, paidEnv, "sha256", { text: "abc" }, undefined, {
        authorization: `Bearer ${key}`,
      });
      const error = String(result.structuredContent?.error);
      expect(error, key).toMatch(/key/i);
      expect(error, key).not.toBe("Payment required");
      expect(v1Offer(result).error, key).toBe(error);
      expect(v1Offer(result), key).not.toHaveProperty("reason");
    }
  });

  it("an empty v2 key is no payment: the v1 payment beside it pays", async () => {
    const offer = v1Offer(await callTool("sha256", { text: "abc" }));
    for (const empty of ["", "  \n"]) {
      const payment = await createPaymentHeader(offer.accepts[0] as PaymentRequirementsV1);
      const paid = await callTool(
        "sha256",
        { text: "abc" },
        { "x402/payment": empty, "x402.payment": payment.header },
      );
      expect(paid.isError, paid.content[0]?.text).toBeFalsy();
      expect(paid._meta?.["x402.payment-response"]).toMatchObject({ success: true, network: "base" });
      expect(await ledger(payment.key)).toEqual([{ resource: "mcp:sha256" }]);
    }
  });

  it.each([
    // The gate's X-PAYMENT-RESPONSE (the facilitator's failed settle response)...
    ["a gateway's 502 page", "0005"],
    // ...or none (no settle response at all): the one the v2 key is given, in v1 terms.
    ["a 200 the client cannot read", "0003"],
  ])("an unconfirmed settlement (%s) answers the v1 key too, in v1 terms", async (_name, suffix) => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const required = unpaid.structuredContent as unknown as PaymentRequired;
    const from = `0x00000000000000000000000000000000000a${suffix}`;
    const authorization = authorizationFor(required.accepts[0] as PaymentRequirements, from);
    const header = btoa(
      JSON.stringify({
        x402Version: 1,
        scheme: "exact",
        network: "base",
        payload: { signature: `0x${"11".repeat(65)}`, authorization },
      }),
    );
    const result = await callTool("sha256", { text: "abc" }, { "x402.payment": header });
    expect(result.isError).toBe(true);
    expect(result.structuredContent?.reason).toBe("settlement_unconfirmed");
    const v2 = result._meta?.["x402/payment-response"] as Record<string, unknown>;
    expect(v2).toMatchObject({ success: false, network: "eip155:8453" });
    expect(result._meta?.["x402.payment-response"]).toEqual({ ...v2, network: "base" });
  });

  it("with both keys sent the v2 payment pays and the v1 one is never claimed or settled", async () => {
    const unpaid = await callTool("sha256", { text: "abc" });
    const v2 = await signedPayment(
      unpaid.structuredContent as unknown as PaymentRequired,
      privateKeyToAccount(generatePrivateKey()),
    );
    const v1 = await createPaymentHeader(v1Offer(unpaid).accepts[0] as PaymentRequirementsV1);
    const paid = await callTool(
      "sha256",
      { text: "abc" },
      { "x402/payment": v2.payload, "x402.payment": v1.header },
    );
    expect(paid.isError, paid.content[0]?.text).toBeFalsy();
    expect(paid._meta?.["x402/payment-response"]).toMatchObject({ success: true });
    expect(paid._meta?.["x402.payment-response"]).toBeUndefined();
    expect(await ledger(v2.key)).toHaveLength(1);
    expect(await ledger(v1.key)).toEqual([]);
    expect(await upstreamRequests(`facilitator-settle nonce=${v1.nonce}`)).toBe(0);
  });
});
