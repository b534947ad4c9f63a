import { PRICED_ROUTE_RESPONSES } from "../discovery/openapi-components";
import {
  CLIENT_ERROR,
  type DocContext,
  ERROR,
  json,
  operation,
  ref,
  VALIDATION,
} from "../discovery/operation";
import { PARTNERS } from "../partners/data";
import type { PriceRange } from "../partners/pricing";
import { REFINERY_SLUG } from "../partners/pricing";
import { REFINERY_SKILL_PATH, refineryBody, refineryExample } from "../partners/refinery-skill";
import { PATH_PARAM } from "../partners/upstream";

/**
 * The partner routes as openapi.json describes them; routes/partners.ts mounts them from here (kept
 * apart so the declarations stay short beside the try proxy's middleware chain).
 */

/** Agentcash Discovery v1 price of a route whose price depends on the request. */
const dynamicPrice = (range: PriceRange) => ({
  price: { mode: "dynamic", currency: "USD", min: range.min, max: range.max },
  protocols: [{ x402: {} }],
});

/** Every partner route answers this while the partner configuration cannot be read. */
const PARTNERS_MISCONFIGURED = ERROR(
  "Partner listing misconfigured (PARTNER_PRICE_MULTIPLIER, PARTNER_BASE_URLS or PARTNER_WALLETS)",
);
/** A paid partner route's 503: the listing, or payments for now (as a skill's 503 says). */
const PAID_PARTNER_UNAVAILABLE = ERROR(
  "Partner listing misconfigured (PARTNER_PRICE_MULTIPLIER, PARTNER_BASE_URLS or PARTNER_WALLETS); or payments temporarily unavailable (facilitator_unavailable, payments_unavailable), a contract wallet's retry could not be checked on chain (payer_check_unavailable), or a stored answer could not be read just now (idempotent_result_unavailable), with Retry-After; nothing charged",
);

const list = operation({
  method: "get",
  path: "/api/partners",
  operationId: "list_partners",
  // Partner operations are rendered only with partner prices (openApiDocument leaves them out
  // otherwise); the fallbacks only keep the types honest.
  summary: ({ partner }: DocContext) =>
    `Hosted partners and their services${partner ? `, priced at ${partner.multiplier}x the partner's price` : ""}`,
  tags: ["partners"],
  responses: {
    "200": json("Partner listing (spec 2.6, 2.7)"),
    "4XX": CLIENT_ERROR,
    "503": PARTNERS_MISCONFIGURED,
  },
});

const one = operation({
  method: "get",
  path: "/api/partners/{partner_id}",
  operationId: "get_partner",
  summary: "One hosted partner",
  tags: ["partners"],
  responses: {
    "200": json("Partner (spec 2.6)"),
    "404": ERROR("Unknown partner"),
    "503": PARTNERS_MISCONFIGURED,
  },
});

/**
 * The values a service's upstream path takes (`/price/{coin}`) come in the try URL's query; each
 * name is described once with the services that read it (the route checks them: upstream.ts).
 */
function pathValueParameters() {
  const users = new Map<string, string[]>();
  for (const partner of PARTNERS)
    for (const service of partner.services)
      for (const [, name = ""] of service.path.matchAll(/\{(\w+)\}/g))
        users.set(name, [...(users.get(name) ?? []), `${partner.id}/${service.id}`]);
  return [...users].map(([name, services]) => ({
    name,
    in: "query",
    required: false,
    description: `The {${name}} of the upstream path, for ${services.join(", ")} (required there; the listing's test_params has a sample).`,
    schema: { type: "string", pattern: PATH_PARAM.source },
  }));
}

const tryIt = (method: "get" | "post") =>
  operation({
    method,
    path: "/api/partners/{partner_id}/try/{service_id}",
    operationId: `try_partner_service_${method}`,
    summary: "Call a partner service through the marketplace (paid services by x402 at the listing price)",
    tags: ["partners"],
    parameters: pathValueParameters(),
    ...(method === "post"
      ? {
          passedBody: {
            type: "object",
            description:
              "The partner service's JSON body, passed on as sent (the listing's test_body is a sample; without a body, test_body is sent). A refinery recipe's `recipe`, if sent, must equal the service id (422 otherwise).",
          },
        }
      : {}),
    responses: {
      "200": json(
        "Envelope with partner_id, service_id, upstream_status, charged, price_usd and the partner's body",
      ),
      "402": json("Payment required", ref("PaymentRequired")),
      "404": ERROR("Unknown partner or service"),
      "409": PRICED_ROUTE_RESPONSES["409"],
      "413": PRICED_ROUTE_RESPONSES["413"],
      // A body in a content coding (src/http/content-encoding.ts); a GET sends none.
      ...(method === "post" ? { "415": PRICED_ROUTE_RESPONSES["415"] } : {}),
      "422": VALIDATION,
      "429": PRICED_ROUTE_RESPONSES["429"],
      "502": json(
        'The partner failed, or asked for a payment this marketplace does not make (upstream_status 402, not charged). "charged":false, or "charged":true with a refund when the partner had to be paid first',
      ),
      "503": PAID_PARTNER_UNAVAILABLE,
      "504": json(
        'The partner timed out. "charged":false, or "charged":true with a refund when the partner had to be paid first',
      ),
    },
    extensions: ({ partner }: DocContext) =>
      partner ? { "x-payment-info": dynamicPrice(partner.tryRoutes) } : {},
  });

const refinery = operation({
  method: "post",
  path: REFINERY_SKILL_PATH,
  operationId: "refinery_recipes",
  summary: "Data Refinery recipes as a native skill (each recipe priced like its partner service)",
  tags: ["partners"],
  body: refineryBody,
  example: refineryExample,
  responses: {
    "200": json("The recipe's result"),
    "402": json("Payment required", ref("PaymentRequired")),
    "409": PRICED_ROUTE_RESPONSES["409"],
    "413": PRICED_ROUTE_RESPONSES["413"],
    "415": PRICED_ROUTE_RESPONSES["415"],
    "422": VALIDATION,
    "429": PRICED_ROUTE_RESPONSES["429"],
    "502": json(
      'The partner failed. "charged":false, or "charged":true with a refund when the partner had to be paid first',
    ),
    "503": PAID_PARTNER_UNAVAILABLE,
    "504": json(
      'The partner timed out. "charged":false, or "charged":true with a refund when the partner had to be paid first',
    ),
  },
  // The recipe in the body sets the price: x-x402 quotes the highest (what a challenge for a
  // body without a recipe asks, a safe budget); the specSource lists each recipe's price.
  extensions: ({ cfg, partner }: DocContext) =>
    partner
      ? {
          "x-x402": {
            price: `$${partner.refinery.max}`,
            network: cfg.network,
            specSource: `services/${REFINERY_SLUG}.json`,
          },
          "x-payment-info": dynamicPrice(partner.refinery),
        }
      : {},
});

export const partnerOps = { list, one, tryGet: tryIt("get"), tryPost: tryIt("post"), refinery };
export const partnerOperations = Object.values(partnerOps);
