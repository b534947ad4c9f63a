import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from "@x402/extensions/bazaar";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PARTNERS } from "../../src/partners/data";
import { isSoldPerCall } from "../../src/partners/pricing";
import { send, stubNetwork } from "./network";

// A paid partner try route's 402 carries the x402 Bazaar discovery extension, as a skill's does:
// what the route takes (its query, a POST's body), from the partner listing.

afterEach(() => {
  vi.restoreAllMocks();
});

const pc = { multiplierMilli: 3000n };
const sold = PARTNERS.flatMap((partner) =>
  partner.services
    .filter((service) => isSoldPerCall(partner, service, pc))
    .map((service) => ({ partner, service })),
);

interface Bazaar {
  info: { input: Record<string, unknown>; output?: unknown };
  schema: Record<string, unknown>;
}

const bazaarOf = (required: { extensions?: Record<string, unknown> }) => {
  const bazaar = required.extensions?.bazaar as Bazaar | undefined;
  if (!bazaar) throw new Error("the 402 carries no bazaar extension");
  return bazaar;
};

const challenge = async (path: string, method: "GET" | "POST") => {
  const res = await send(path, method === "POST" ? { method, body: "{}" } : { method });
  expect(res.status).toBe(402);
  const header = res.headers.get("payment-required") ?? "";
  return { header, required: decodePaymentRequiredHeader(header) };
};

describe("paid partner routes: the 402's bazaar discovery extension", () => {
  it.each(
    sold.flatMap(({ partner, service }) =>
      (["GET", "POST"] as const).map(
        (method) => [`${method} ${partner.id}/${service.id}`, partner, service, method] as const,
      ),
    ),
  )(
    "%s declares what the try route takes, valid by the bazaar's own checks",
    async (_n, partner, service, method) => {
      stubNetwork(() => Response.json({}));
      const { header, required } = await challenge(`/api/partners/${partner.id}/try/${service.id}`, method);
      const bazaar = required.extensions?.bazaar as Bazaar | undefined;
      expect(bazaar).toBeTruthy();
      expect(validateDiscoveryExtension(bazaar as never)).toEqual({ valid: true });
      expect(validateDiscoveryExtensionSpec(bazaar as never)).toEqual({ valid: true });
      const input = bazaar?.info.input ?? {};
      expect(input.type).toBe("http");
      expect(input.method).toBe(method);
      // The path's values, in the try URL's query, with the listing's samples.
      const names = [...service.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      if (names.length || method === "GET") expect(input.queryParams).toEqual(service.test_params ?? {});
      if (method === "POST") {
        expect(input.bodyType).toBe("json");
        expect(input.body).toEqual(service.method === "POST" ? service.test_body : {});
      } else {
        expect(input.bodyType).toBeUndefined();
      }
      // The whole PAYMENT-REQUIRED header (base64 of the offer) stays well under proxies' 8 KB.
      expect(header.length).toBeLessThan(8 * 1024);
    },
  );

  it("a POST body's schema is the listing sample's shape; a refinery recipe's recipe is its own id", async () => {
    stubNetwork(() => Response.json({}));
    const chunker = await challenge("/api/partners/textkit/try/rag-chunker", "POST");
    const body = bazaarOf(chunker.required).schema as {
      properties: { input: { properties: { body: Record<string, unknown> } } };
    };
    expect(body.properties.input.properties.body).toMatchObject({
      type: "object",
      properties: { text: { type: "string" }, max_tokens: { type: "number" } },
    });
    expect(body.properties.input.properties.body.required).toBeUndefined();
    const recipe = await challenge("/api/partners/refinery/try/eval_set", "POST");
    const schema = bazaarOf(recipe.required).schema as typeof body;
    expect(schema.properties.input.properties.body).toMatchObject({
      properties: { raw: { type: "string" }, request: { type: "string" }, recipe: { const: "eval_set" } },
    });
  });

  /** Pays the route's 402 as @x402/fetch does: the client echoes the offer's extensions. */
  const pay = async (path: string, method: "GET" | "POST", edit?: (p: Record<string, unknown>) => void) => {
    const { required } = await challenge(path, method);
    const client = registerExactEvmScheme(new x402Client(), {
      signer: privateKeyToAccount(generatePrivateKey()),
    });
    const payload = await client.createPaymentPayload(required as PaymentRequired);
    expect((payload.extensions as Record<string, unknown> | undefined)?.bazaar).toEqual(
      required.extensions?.bazaar,
    );
    edit?.(payload as unknown as Record<string, unknown>);
    return send(path, {
      method,
      headers: { "payment-signature": encodePaymentSignatureHeader(payload) },
      ...(method === "POST" ? { body: "{}" } : {}),
    });
  };

  it.each([
    ["GET", "/api/partners/pricefeed/try/price_coin?coin=eth"],
    ["POST", "/api/partners/pricefeed/try/price_coin"],
    ["POST", "/api/partners/textkit/try/pii-redactor"],
    ["GET", "/api/partners/textkit/try/pii-redactor"],
  ] as const)(
    "%s %s: a payment echoing the extension is verified and served, not refused as a mismatch",
    async (method, path) => {
      const { settled } = stubNetwork(() => Response.json({ ok: true }));
      const res = await pay(path, method);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ charged: true });
      expect(settled).toHaveLength(1);
    },
  );

  it("an echo that changes the declared input is refused as extension_echo_mismatch, never settled", async () => {
    const { settled, partnerCalls } = stubNetwork(() => Response.json({ ok: true }));
    const res = await pay("/api/partners/pricefeed/try/price_coin", "GET", (p) => {
      const bazaar = (p.extensions as { bazaar: Bazaar }).bazaar;
      bazaar.info.input = { ...bazaar.info.input, queryParams: { coin: "sol" } };
    });
    expect(res.status).toBe(402);
    expect(JSON.stringify(await res.json())).toMatch(/extension_echo_mismatch/);
    expect(settled).toHaveLength(0);
    expect(partnerCalls).toHaveLength(0);
  });
});
