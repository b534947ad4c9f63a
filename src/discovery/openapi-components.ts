import { ERROR, ref } from "./operation";

/**
 * What every priced route answers before or beside its work, with one wording: the skills', the
 * partner try routes' and the refinery recipes' (each runs quota, idempotent and the body cap).
 */
export const PRICED_ROUTE_RESPONSES = {
  "409": ERROR(
    "Idempotency conflict: the payment identifier or Idempotency-Key is in use by a call still running (Retry-After), or was used for another request or payer; nothing charged",
  ),
  "413": ERROR("Body larger than 5 MiB"),
  "415": ERROR(
    "Body sent with a Content-Encoding (gzip, br, …): send it uncompressed (Accept-Encoding: identity)",
  ),
  "429": ERROR("Rate limited (Retry-After); nothing charged"),
};

const nullableNumber = { type: ["number", "null"] };
const windowFigures = {
  type: "object",
  properties: {
    calls: { type: "integer" },
    admitted: { type: "integer", description: "Calls that passed validation and payment" },
    succeeded: { type: "integer" },
    success_rate: {
      ...nullableNumber,
      description: "succeeded / admitted (2xx among admitted calls), rounded down to 4 decimals",
    },
    p50_ms: { ...nullableNumber, description: "Median server time of admitted calls" },
    p95_ms: { ...nullableNumber, description: "Nearest-rank p95 server time; null below 20 admitted calls" },
    upstream_error_rate: {
      ...nullableNumber,
      description: "Network skills only: upstream 502/504 / admitted, rounded up to 4 decimals",
    },
    last_success_at: { type: ["string", "null"], format: "date-time" },
    unavailable: {
      type: "integer",
      description:
        "503s answered before any payment could be checked (facilitator or key store unreadable): an outage of this service, not in the success rate (unpaid probes would sink it for free)",
    },
  },
};
/** GET /api/stats (src/stats/query.ts). */
export const statsSchema = {
  type: "object",
  properties: {
    computed_at: { type: "string", format: "date-time" },
    windows: { type: "object", description: "from/to of the 24h and 7d windows" },
    source: { type: "string" },
    retention_days: { type: "integer" },
    skills: {
      type: "array",
      items: {
        type: "object",
        properties: {
          skill: { type: "string" },
          windows: { type: "object", properties: { "24h": windowFigures, "7d": windowFigures } },
        },
      },
    },
  },
};

/** Schemas and security schemes that operations of openapi.json refer to by name. */
export const components = {
  schemas: {
    ValidationError: {
      type: "object",
      required: ["loc", "msg", "type"],
      properties: {
        loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] } },
        msg: { type: "string" },
        type: { type: "string" },
        input: {},
        ctx: { type: "object" },
      },
    },
    HTTPValidationError: {
      type: "object",
      properties: { detail: { type: "array", items: ref("ValidationError") } },
    },
    Error: { type: "object", required: ["detail"], properties: { detail: { type: "string" } } },
    UpstreamError: {
      type: "object",
      required: ["detail", "charged"],
      properties: { detail: { type: "string" }, charged: { type: "boolean", const: false } },
    },
    SettlementUnconfirmed: {
      type: "object",
      description:
        "The facilitator did not confirm the settlement: the result is withheld and the authorization stays reserved; if the transfer lands (or landed) anyway it is refunded to the payer (less a served partner's share); if it never does, nothing is charged and the authorization is released at its expiry.",
      required: ["detail", "reason", "request_id"],
      properties: {
        detail: { type: "string" },
        reason: { type: "string", const: "settlement_unconfirmed" },
        facilitator_reason: { type: "string" },
        transaction: { type: ["string", "null"] },
        request_id: { type: "string" },
      },
    },
    PaymentRequired: {
      type: "object",
      description:
        "The 402 body: the offer in x402 v1 form (x402Version 1, each of accepts with the network's v1 name, e.g. base, and maxAmountRequired), for v1 clients. x402 v2 clients read the PAYMENT-REQUIRED header instead: the base64 of the v2 PaymentRequired (x402Version 2, accepts with amount and the CAIP-2 network eip155:8453). A network with no v1 name keeps the v2 form in the body too.",
      required: ["x402Version", "accepts", "error", "reason"],
      properties: {
        x402Version: { type: "integer", enum: [1, 2] },
        error: { type: "string", description: "Human-readable reason" },
        reason: {
          type: "string",
          description:
            "Machine reason: payment_required, or why a payment was refused (invalid_payment_header, invalid_x402_version, invalid_valid_before, resource_mismatch, the facilitator's code, ...)",
        },
        resource: { type: "object" },
        accepts: {
          type: "array",
          items: {
            type: "object",
            required: ["scheme", "network", "asset", "payTo"],
            properties: {
              scheme: { type: "string" },
              network: { type: "string", description: "v1 name (base) in the body; CAIP-2 in the header" },
              maxAmountRequired: { type: "string", description: "v1: USDC atomic units (6 decimals)" },
              amount: { type: "string", description: "v2: USDC atomic units (6 decimals)" },
              asset: { type: "string" },
              payTo: { type: "string" },
              resource: { type: "string", description: "v1: the URL paid for" },
              description: { type: "string" },
              mimeType: { type: "string" },
              maxTimeoutSeconds: { type: "integer" },
              outputSchema: {
                type: "object",
                description:
                  "v1: what the call takes and returns, from the bazaar extension: input (type http, method, discoverable, queryParams, or bodyType and bodyFields, a sample body) and output (an example answer, where the route has one)",
              },
              extra: { type: "object" },
            },
            anyOf: [{ required: ["maxAmountRequired"] }, { required: ["amount"] }],
          },
        },
        extensions: { type: "object" },
      },
    },
    CheckoutCreated: {
      type: "object",
      required: ["session_id", "checkout_url", "skill_id", "calls", "amount_usd"],
      properties: {
        session_id: { type: "string" },
        checkout_url: { type: "string", format: "uri" },
        skill_id: { type: "string" },
        calls: { type: "integer" },
        amount_usd: { type: "number" },
      },
    },
    Catalog: {
      type: "object",
      required: ["skills", "x402_enabled", "cardpay_enabled", "free_beta", "hosted_partners"],
      properties: {
        skills: { type: "array", items: { type: "object" } },
        x402_enabled: { type: "boolean" },
        cardpay_enabled: { type: "boolean" },
        free_beta: { type: "boolean" },
        hosted_partners: { type: "array" },
      },
    },
  },
  securitySchemes: {
    // Both are declared as API keys in the Authorization header (value "Bearer ...") so that
    // discovery crawlers that only classify apiKey schemes recognise them as authentication.
    CardCredits: {
      type: "apiKey",
      in: "header",
      name: "Authorization",
      description:
        "Card-credit key: send `Authorization: Bearer mk_...` (an alternative to x402 on skill calls)",
    },
    AdminToken: {
      type: "apiKey",
      in: "header",
      name: "Authorization",
      description: "Maintainer token: send `Authorization: Bearer <ADMIN_TOKEN>`",
    },
  },
};
