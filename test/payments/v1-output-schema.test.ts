import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirementsV1 } from "@x402/core/types/v1";
import { extractDiscoveryInfoV1 } from "@x402/extensions/bazaar";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HTTPRequestStructureSchema, PaymentRequirementsSchema as RequirementsOfX402Fetch } from "x402/types";
// x402-axios 0.7.2 checks the 402 with its own copy of x402 (0.7.3), not the one x402-fetch uses.
import { PaymentRequirementsSchema as RequirementsOfX402Axios } from "../../node_modules/x402-axios/node_modules/x402/dist/esm/types/index.mjs";
import { createApp } from "../../src/app";
import { skills } from "../../src/skills/registry";
import { ORIGIN, paidEnv } from "../helpers";
import { send, stubNetwork } from "../partners/network";

// The v1 form of a 402 (its JSON body) carries, in each requirement's outputSchema, what the route
// takes and returns: the v2 bazaar extension's declaration in the shape v1 clients and crawlers read.

afterEach(() => {
  vi.restoreAllMocks();
});

interface V1Offer {
  x402Version: number;
  accepts: (PaymentRequirementsV1 & {
    outputSchema?: { input: Record<string, unknown>; output?: unknown };
  })[];
}

/** The 402's v1 body and the v2 bazaar info of its PAYMENT-REQUIRED header. */
async function offers(res: Response) {
  expect(res.status).toBe(402);
  const v2 = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
  const v1 = await res.json<V1Offer>();
  expect(v1.x402Version).toBe(1);
  return { v1, info: (v2.extensions?.bazaar as { info: unknown } | undefined)?.info };
}

/** What every v1 requirement must be: what both v1 clients parse, and the v2 info read back. */
function checkV1(v1: V1Offer, info: unknown, method: string) {
  expect(info).toBeTruthy();
  for (const accept of v1.accepts) {
    expect(accept.outputSchema?.input).toMatchObject({ type: "http", method, discoverable: true });
    // x402-fetch 1.2.0 and x402-axios 0.7.2 parse each requirement before they pay.
    expect(() => RequirementsOfX402Fetch.parse(accept)).not.toThrow();
    expect(() => RequirementsOfX402Axios.parse(accept)).not.toThrow();
    // v1's own request structure (queryParams: strings, bodyFields: an object).
    expect(() => HTTPRequestStructureSchema.parse(accept.outputSchema?.input)).not.toThrow();
    // One source: @x402/extensions' v1 reader gets back exactly the v2 declaration.
    expect(extractDiscoveryInfoV1(accept as never)).toEqual(info);
  }
}

describe("the v1 402 body's outputSchema", () => {
  it.each(skills.map((s) => [s.id, s] as const))(
    "%s: the skill's body and example answer, as in its bazaar extension",
    async (_id, skill) => {
      const res = await createApp().fetch(
        new Request(`${ORIGIN}${skill.endpoint}`, { method: "POST", body: "{}" }),
        paidEnv(),
      );
      const { v1, info } = await offers(res);
      checkV1(v1, info, "POST");
      expect(v1.accepts[0]?.outputSchema).toEqual({
        input: {
          type: "http",
          method: "POST",
          discoverable: true,
          bodyType: "json",
          bodyFields: skill.example_request,
        },
        output: skill.example_response,
      });
    },
  );

  it.each([
    ["GET", "/api/partners/pricefeed/try/price_coin"],
    ["POST", "/api/partners/pricefeed/try/price_coin"],
    ["GET", "/api/partners/pricefeed/try/portfolio"],
    ["POST", "/api/partners/textkit/try/rag-chunker"],
    ["POST", "/api/partners/refinery/try/policy_digest"],
    ["POST", "/api/skills/refinery-recipes"],
  ] as const)("partner route %s %s: its query or body, as in its bazaar extension", async (method, path) => {
    stubNetwork(() => Response.json({}));
    const { v1, info } = await offers(
      await send(path, { method, ...(method === "POST" ? { body: "{}" } : {}) }),
    );
    checkV1(v1, info, method);
  });

  it("a GET partner route names its query's samples; a POST one its body's", async () => {
    stubNetwork(() => Response.json({}));
    const coin = await offers(await send("/api/partners/pricefeed/try/price_coin"));
    expect(coin.v1.accepts[0]?.outputSchema).toEqual({
      input: { type: "http", method: "GET", discoverable: true, queryParams: { coin: "btc" } },
    });
    const chunker = await offers(await send("/api/partners/textkit/try/rag-chunker", { method: "POST" }));
    expect(chunker.v1.accepts[0]?.outputSchema?.input).toMatchObject({
      bodyType: "json",
      bodyFields: { text: "First paragraph.\n\nSecond paragraph.", max_tokens: 200 },
    });
  });
});
