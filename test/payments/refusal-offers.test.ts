import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";

// Every x402 402 is the published PaymentRequired (openapi.json: x402Version, accepts, error,
// reason) with the route's offer in PAYMENT-REQUIRED, so a client can sign again: a payment for
// another resource and a settlement that definitely failed answered {"error","reason"} only (and
// the settlement failure no PAYMENT-REQUIRED).
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
const ROUTE = "/api/skills/sha256";
const payer = (suffix: string) => `0x00000000000000000000000000000000000a${suffix}`;

const post = (headers: Record<string, string> = {}) =>
  app.fetch(
    new Request(`https://skills.test${ROUTE}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ text: "abc" }),
    }),
    paidEnv,
  );

async function offer(): Promise<PaymentRequired> {
  const res = await post();
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** The 402 checked against the published schema's required fields, and its offer header. */
async function expectOffer(res: Response, reason: string) {
  expect(res.status).toBe(402);
  const doc = await (await app.fetch(new Request("https://skills.test/openapi.json"), paidEnv)).json<{
    components: {
      schemas: Record<
        string,
        { required: string[]; properties: Record<string, { items?: { required: string[] } }> }
      >;
    };
  }>();
  const schema = doc.components.schemas.PaymentRequired;
  // The published lists must exist, or the loops below would check nothing.
  expect(schema?.required).toContain("accepts");
  expect(schema?.properties.accepts?.items?.required).toContain("payTo");
  const body = await res.json<Record<string, unknown>>();
  for (const field of schema?.required ?? []) expect(body, field).toHaveProperty(field);
  expect(body.reason).toBe(reason);
  const accepts = body.accepts as Record<string, unknown>[];
  expect(accepts.length).toBeGreaterThan(0);
  for (const field of schema?.properties.accepts?.items?.required ?? [])
    expect(accepts[0]).toHaveProperty(field);
  const header = res.headers.get("payment-required");
  expect(header).toBeTruthy();
  const required = decodePaymentRequiredHeader(header as string);
  expect(required.accepts[0]?.payTo).toBe(env.PAY_TO);
  expect(required.resource.url).toBe(`https://skills.test${ROUTE}`);
  return body;
}

describe("every x402 refusal is a PaymentRequired with the route's offer", () => {
  it.each([
    [
      "another route's resource",
      { url: "https://skills.test/api/skills/md5", description: "", mimeType: "application/json" },
    ],
    ["a resource without a url", {}],
  ])(
    "a payment made for %s: 402 resource_mismatch with x402Version, accepts and PAYMENT-REQUIRED",
    async (_, resource) => {
      const required = await offer();
      const { payload } = unsignedPayment(required, payer("0001"));
      const header = encodePaymentSignatureHeader({ ...payload, resource } as typeof payload);
      const body = await expectOffer(await post({ "payment-signature": header }), "resource_mismatch");
      expect(String(body.error)).toMatch(/this payment was made for/);
    },
  );

  it.each([["refused before sending (insufficient_funds)", "0002", "insufficient_funds"]])(
    "a settlement that definitely failed, %s: 402 with x402Version, accepts and PAYMENT-REQUIRED",
    async (_, suffix, reason) => {
      const required = await offer();
      const { payload } = unsignedPayment(required, payer(suffix));
      const res = await post({ "payment-signature": encodePaymentSignatureHeader(payload) });
      // The settlement's own answer is kept beside the offer.
      expect(res.headers.get("payment-response")).toBeTruthy();
      const body = await expectOffer(res, reason);
      expect(String(body.error)).toMatch(/Settlement failed: .*not charged/);
      expect(body).not.toHaveProperty("hex");
    },
  );

  it("a v1 payment whose settlement definitely failed gets the same offer (X-PAYMENT)", async () => {
    const required = await offer();
    const { payload } = unsignedPayment(required, payer("0002"));
    const v1 = { x402Version: 1, scheme: "exact", network: "base", payload: payload.payload };
    const res = await post({ "x-payment": btoa(JSON.stringify(v1)) });
    const body = await expectOffer(res, "insufficient_funds");
    expect(body.x402Version).toBe(1);
    expect((body.accepts as PaymentRequirements[])[0]).toHaveProperty("maxAmountRequired");
  });
});
