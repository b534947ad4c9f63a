import { z } from "zod";
import type { PublicConfig } from "../config";
import { INTERFACE_VERSION } from "../config";
import type { PricingConfig } from "../partners/listing";
import { REFINERY_SKILL_PATH, refineryBody, refineryExample } from "../partners/refinery-skill";
import { paymentsQuery, payoutsQuery, settleBody } from "../routes/admin";
import { checkoutRequest } from "../routes/checkout";
import { skills } from "../skills/registry";
import {
  bodySchema,
  PAYMENT_SUMMARY,
  type PriceRange,
  partnerPricing,
  priceDecimal,
  priceLabel,
  REFINERY_SLUG,
  responseSchema,
  SITE_NAME,
  SITE_SUMMARY,
  withoutDialect,
} from "./site";

type Json = Record<string, unknown>;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (description: string, schema: Json = { type: "object" }, example?: unknown) => ({
  description,
  content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } },
});
const text = (description: string, mime: string) => ({
  description,
  content: { [mime]: { schema: { type: "string" } } },
});
const VALIDATION = json("Validation error (FastAPI shape)", ref("HTTPValidationError"));
const ERROR = (description: string) => json(description, ref("Error"));
/**
 * Routes that take no input still answer client errors every client should expect: 405 (with
 * Allow) for another method, 413 for a body over 5 MiB, 429 when rate limited.
 */
const CLIENT_ERROR = ERROR("Client error: wrong method (405 with Allow), body too large (413), rate limited");

/** Query or path parameters from a zod object, one OpenAPI parameter per property. */
function parameters(where: "query" | "path", schema: z.ZodObject) {
  const js = z.toJSONSchema(schema, { io: "input" }) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" || (js.required ?? []).includes(name),
    schema: s,
  }));
}

interface PlainOp {
  path: string;
  method: "get" | "post";
  operationId: string;
  summary: string;
  tags: string[];
  responses: Json;
  security?: Json[];
  parameters?: Json[];
  requestBody?: Json;
  "x-x402"?: Json;
  "x-payment-info"?: Json;
}

/** Agentcash Discovery v1 price of a route whose price depends on the request. */
const dynamicPrice = (range: PriceRange) => ({
  price: { mode: "dynamic", currency: "USD", min: range.min, max: range.max },
  protocols: [{ x402: {} }],
});

const nullableNumber = { type: ["number", "null"] };
const windowFigures = {
  type: "object",
  properties: {
    calls: { type: "integer" },
    admitted: { type: "integer", description: "Calls that passed validation and payment" },
    succeeded: { type: "integer" },
    success_rate: { ...nullableNumber, description: "succeeded / admitted (2xx among admitted calls)" },
    p50_ms: { ...nullableNumber, description: "Median server time of admitted calls" },
    p95_ms: nullableNumber,
    upstream_error_rate: {
      ...nullableNumber,
      description: "Network skills only: upstream 502/504 / admitted",
    },
    last_success_at: { type: ["string", "null"], format: "date-time" },
  },
};
/** GET /api/stats (src/stats/query.ts). */
const statsSchema = {
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

/** Descriptions of the tags that are not skill categories (every tag used is declared, see tagList). */
const TAGS: Record<string, string> = {
  discovery: "Discovery documents for agents and crawlers",
  service: "Service health",
  checkout: "Card payments: checkout, webhook and credit balance",
  partners: "Hosted partner services, resold per call",
  admin: "Maintainer endpoints (admin token)",
};

function schemaOf(schema: z.ZodType): Json {
  return withoutDialect(z.toJSONSchema(schema, { io: "input" }) as Json);
}

/**
 * Routes served for people and crawlers rather than for API clients, kept out of openapi.json: the
 * document is what agents load into their context, and agent directories (agentcash's audit warns
 * above 40 operations) penalise a surface padded with HTML pages. Pages are listed in sitemap.xml;
 * robots.txt and sitemap.xml live at their standard addresses, and so do the receipt key's
 * did:web document and JWKS (read by verifiers, docs/receipts-and-retries.md).
 */
export const WEB_ONLY_ROUTES = [
  "GET /",
  "GET /applet",
  "GET /docs",
  // Also /docs/mcp and /docs/reliability: taken by name on this route (routes/stats.tsx).
  "GET /docs/{slug}",
  // The MCP endpoint speaks JSON-RPC, not REST: it is described in agents.json (`mcp`), llms.txt,
  // AGENTS.md and /docs/mcp; its tools are the operations already listed here.
  "POST /mcp",
  "GET /mcp",
  "DELETE /mcp",
  "PUT /mcp",
  "PATCH /mcp",
  "GET /checkout/success",
  "POST /checkout/success",
  "GET /checkout/cancel",
  "GET /robots.txt",
  "GET /sitemap.xml",
  "GET /.well-known/did.json",
  "GET /.well-known/jwks.json",
  // Maintainer dashboard (HTML forms behind the admin token; the JSON twins are under /api/admin).
  "GET /admin",
  "POST /admin/login",
  "POST /admin/logout",
  "POST /admin/payouts/{partner_id}/settle",
] as const;

/** API routes other than skills. A test compares this table plus WEB_ONLY_ROUTES with the app's routes. */
function plainOperations(cfg: PublicConfig, pc: PricingConfig): PlainOp[] {
  const partner = partnerPricing(pc);
  const doc = (operationId: string, path: string, summary: string, mime: string): PlainOp => ({
    path,
    method: "get",
    operationId,
    summary,
    tags: ["discovery"],
    responses: { "200": text(summary, mime), "4XX": CLIENT_ERROR },
  });
  const jsonDoc = (operationId: string, path: string, summary: string): PlainOp => ({
    path,
    method: "get",
    operationId,
    summary,
    tags: ["discovery"],
    responses: { "200": json(summary), "4XX": CLIENT_ERROR },
  });
  return [
    {
      path: "/health",
      operationId: "get_health",
      method: "get",
      summary: "Liveness with a real D1 and KV check",
      tags: ["service"],
      responses: { "200": json("Healthy"), "4XX": CLIENT_ERROR, "503": json("A dependency failed") },
    },
    {
      path: "/api/catalog",
      operationId: "get_catalog",
      method: "get",
      summary: "The skill catalog (spec 2.1)",
      tags: ["discovery"],
      responses: { "200": json("Catalog", ref("Catalog")), "4XX": CLIENT_ERROR },
    },
    {
      path: "/api/stats",
      operationId: "get_stats",
      method: "get",
      summary: "Measured reliability per skill over 24 h and 7 days (free, CORS-open, cached 60 s)",
      tags: ["discovery"],
      responses: {
        "200": json("Per-skill calls, success rate, p50/p95 server time", statsSchema),
        "4XX": CLIENT_ERROR,
      },
    },
    doc("get_llms_txt", "/llms.txt", "Guide for language models (llmstxt.org)", "text/plain"),
    doc("get_agents_md", "/AGENTS.md", "Guide for coding agents", "text/plain"),
    doc("get_x402list_txt", "/.well-known/x402list.txt", "Directory ownership tokens", "text/plain"),
    jsonDoc("get_x402_manifest", "/.well-known/x402", "x402 manifest: every paid resource"),
    jsonDoc("get_well_known_agents_json", "/.well-known/agents.json", "Agent manifest"),
    jsonDoc("get_agents_json", "/agents.json", "Agent manifest"),
    jsonDoc(
      "get_humanless_contract",
      "/contracts/humanless.json",
      "Terms for agents acting with no human in the loop",
    ),
    jsonDoc("get_openapi", "/openapi.json", "This document"),
    {
      path: "/services/{slug}.json",
      operationId: "get_service_description",
      method: "get",
      summary: "One skill's service description (the x-x402 specSource)",
      tags: ["discovery"],
      parameters: [{ name: "slug", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": json("Service description"), "404": ERROR("Unknown skill") },
    },
    {
      path: "/api/cardpay/checkout",
      operationId: "create_card_checkout",
      method: "post",
      summary: "Buy a pack of calls of one skill by card (Stripe Checkout)",
      tags: ["checkout"],
      requestBody: {
        required: true,
        content: {
          "application/json": { schema: schemaOf(checkoutRequest), example: { skill_id: "json_sort" } },
        },
      },
      responses: {
        "200": json("Checkout created", ref("CheckoutCreated")),
        "404": ERROR("Unknown skill_id"),
        "422": VALIDATION,
        "503": ERROR("Card payments not configured"),
      },
    },
    {
      path: "/api/cardpay/webhook",
      operationId: "stripe_webhook",
      method: "post",
      summary: "Stripe webhook (verified with the Stripe-Signature header)",
      tags: ["checkout"],
      parameters: [{ name: "Stripe-Signature", in: "header", required: true, schema: { type: "string" } }],
      responses: {
        "200": json("Event received"),
        "400": ERROR("Missing or invalid signature"),
        "503": ERROR("Not configured"),
      },
    },
    {
      path: "/api/credits",
      operationId: "get_credits",
      method: "get",
      summary: "Calls left on a card-credit key",
      tags: ["checkout"],
      security: [{ CardCredits: [] }],
      responses: { "200": json("Credit balance"), "401": ERROR("Missing or unknown key") },
    },
    {
      path: "/api/partners",
      operationId: "list_partners",
      method: "get",
      summary: `Hosted partners and their services, priced at ${partner.multiplier}x the partner's price`,
      tags: ["partners"],
      responses: {
        "200": json("Partner listing (spec 2.6, 2.7)"),
        "4XX": CLIENT_ERROR,
        "503": ERROR("Partner listing misconfigured"),
      },
    },
    {
      path: "/api/partners/{partner_id}",
      operationId: "get_partner",
      method: "get",
      summary: "One hosted partner",
      tags: ["partners"],
      parameters: [{ name: "partner_id", in: "path", required: true, schema: { type: "string" } }],
      responses: { "200": json("Partner (spec 2.6)"), "404": ERROR("Unknown partner") },
    },
    ...(["get", "post"] as const).map(
      (method): PlainOp => ({
        path: "/api/partners/{partner_id}/try/{service_id}",
        method,
        operationId: `try_partner_service_${method}`,
        summary:
          "Call a partner service through the marketplace (paid services by x402 at the listing price)",
        tags: ["partners"],
        parameters: [
          { name: "partner_id", in: "path", required: true, schema: { type: "string" } },
          { name: "service_id", in: "path", required: true, schema: { type: "string" } },
        ],
        responses: {
          "200": json(
            "Envelope with partner_id, service_id, upstream_status, charged, price_usd and the partner's body",
          ),
          "402": json("Payment required", ref("PaymentRequired")),
          "404": ERROR("Unknown partner or service"),
          "422": VALIDATION,
          "502": json("The partner failed or asked for payment we cannot make; not charged"),
          "504": json("The partner timed out; not charged"),
        },
        "x-payment-info": dynamicPrice(partner.tryRoutes),
      }),
    ),
    {
      path: REFINERY_SKILL_PATH,
      operationId: "refinery_recipes",
      method: "post",
      summary: "Data Refinery recipes as a native skill (each recipe priced like its partner service)",
      tags: ["partners"],
      requestBody: {
        required: true,
        content: { "application/json": { schema: schemaOf(refineryBody), example: refineryExample } },
      },
      responses: {
        "200": json("The recipe's result"),
        "402": json("Payment required", ref("PaymentRequired")),
        "422": VALIDATION,
        "502": json("The partner failed; not charged"),
      },
      // The recipe in the body sets the price: x-x402 quotes the highest (what a challenge for a
      // body without a recipe asks, a safe budget); the specSource lists each recipe's price.
      "x-x402": {
        price: `$${partner.refinery.max}`,
        network: cfg.network,
        specSource: `services/${REFINERY_SLUG}.json`,
      },
      "x-payment-info": dynamicPrice(partner.refinery),
    },
    {
      path: "/api/admin/payouts",
      operationId: "admin_list_payouts",
      method: "get",
      summary: "What is owed to each partner; ?format=csv exports the payout ledger",
      tags: ["admin"],
      security: [{ AdminToken: [] }],
      parameters: parameters("query", payoutsQuery),
      responses: {
        "200": json("Owed per partner and service"),
        "401": ERROR("Missing or invalid token"),
        "422": VALIDATION,
      },
    },
    {
      path: "/api/admin/payouts/{partner_id}/settle",
      operationId: "admin_settle_payouts",
      method: "post",
      summary: "Record a payout batch: owed rows of the partner are attached to it",
      tags: ["admin"],
      security: [{ AdminToken: [] }],
      parameters: [{ name: "partner_id", in: "path", required: true, schema: { type: "string" } }],
      requestBody: { required: true, content: { "application/json": { schema: schemaOf(settleBody) } } },
      responses: {
        "200": json("The batch"),
        "401": ERROR("Missing or invalid token"),
        "404": ERROR("Unknown partner"),
        "409": ERROR("Nothing owed"),
        "422": VALIDATION,
      },
    },
    {
      path: "/api/admin/payments",
      operationId: "admin_list_payments",
      method: "get",
      summary: "x402 ledger: settled payments with totals",
      tags: ["admin"],
      security: [{ AdminToken: [] }],
      parameters: parameters("query", paymentsQuery),
      responses: { "200": json("Ledger rows"), "401": ERROR("Missing or invalid token"), "422": VALIDATION },
    },
    {
      path: "/api/admin/reconcile",
      operationId: "admin_reconcile",
      method: "post",
      summary: "Reconcile unconfirmed payments against the chain now (the cron's run)",
      tags: ["admin"],
      security: [{ AdminToken: [] }],
      responses: {
        "200": json("What was checked and decided"),
        "401": ERROR("Missing or invalid token"),
        "503": ERROR("No RPC_URL, or an RPC of another chain"),
      },
    },
  ];
}

function skillOperations(cfg: PublicConfig) {
  const paths: Record<string, Json> = {};
  for (const s of skills) {
    paths[s.endpoint] = {
      post: {
        operationId: s.id,
        summary: `${s.name} (${priceLabel(s)} per call)`,
        description: s.description,
        tags: [s.category],
        // No API authentication: the call is paid per request (x402) or with a card-credit key.
        security: [],
        requestBody: {
          required: true,
          content: { "application/json": { schema: bodySchema(s), example: s.example_request } },
        },
        responses: {
          "200": json("Result", responseSchema(s), s.example_response),
          "401": ERROR("Unknown or malformed card-credit key"),
          "402": json("Payment required, or the payment was rejected", ref("PaymentRequired")),
          "403": ERROR("The card-credit key buys calls of another skill"),
          "413": ERROR("Body larger than 5 MiB"),
          "422": VALIDATION,
          ...(s.kind === "analytic"
            ? {
                "502": json("An upstream source failed; not charged", ref("UpstreamError")),
                "504": json("An upstream source timed out; not charged", ref("UpstreamError")),
              }
            : {}),
          "503": ERROR("Payments temporarily unavailable"),
        },
        "x-x402": { price: priceLabel(s), network: cfg.network, specSource: `services/${s.slug}.json` },
        "x-payment-info": {
          price: { mode: "fixed", currency: "USD", amount: priceDecimal(s) },
          protocols: [{ x402: {} }],
        },
      },
    };
  }
  return paths;
}

/** Every tag the operations use, skill categories first, each declared once with a description. */
function tagList(paths: Record<string, Record<string, unknown>>) {
  const used = new Set<string>(skills.map((s) => s.category));
  for (const ops of Object.values(paths))
    for (const op of Object.values(ops)) for (const t of (op as { tags?: string[] }).tags ?? []) used.add(t);
  return [...used].map((name) => ({ name, description: TAGS[name] ?? `Skills in category ${name}` }));
}

export function openApiDocument(cfg: PublicConfig, pc: PricingConfig) {
  const paths: Record<string, Record<string, unknown>> = skillOperations(cfg) as Record<
    string,
    Record<string, unknown>
  >;
  for (const op of plainOperations(cfg, pc)) {
    const { path, method, ...rest } = op;
    paths[path] = { ...(paths[path] ?? {}), [method]: { security: [], ...rest } };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: SITE_NAME,
      version: INTERFACE_VERSION,
      description: SITE_SUMMARY,
      contact: { name: `${SITE_NAME} support`, email: cfg.contactEmail },
      // A paid service, not open source: its terms are the contract agents accept by paying.
      license: { name: "Proprietary: terms for agents", url: `${cfg.baseUrl}/contracts/humanless.json` },
      "x-guidance": PAYMENT_SUMMARY(cfg),
    },
    servers: [{ url: cfg.baseUrl }],
    "x-agentcash-guidance": { llmsTxtUrl: `${cfg.baseUrl}/llms.txt` },
    ...(cfg.ownershipProofs.length
      ? { "x-agentcash-provenance": { ownershipProofs: cfg.ownershipProofs } }
      : {}),
    tags: tagList(paths),
    paths,
    components: {
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
        PaymentRequired: {
          type: "object",
          required: ["x402Version", "accepts", "error"],
          properties: {
            x402Version: { type: "integer", const: 2 },
            error: { type: "string", description: "Human-readable reason" },
            reason: {
              type: "string",
              description: "Machine reason: payment_required or the facilitator's code",
            },
            resource: { type: "object" },
            accepts: {
              type: "array",
              items: {
                type: "object",
                required: ["scheme", "network", "amount", "asset", "payTo"],
                properties: {
                  scheme: { type: "string" },
                  network: { type: "string" },
                  amount: { type: "string", description: "USDC atomic units (6 decimals)" },
                  asset: { type: "string" },
                  payTo: { type: "string" },
                  maxTimeoutSeconds: { type: "integer" },
                  extra: { type: "object" },
                },
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
    },
  };
}
