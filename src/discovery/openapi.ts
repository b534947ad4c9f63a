import type { PublicConfig } from "../config";
import { INTERFACE_VERSION } from "../config";
import type { PricingConfig } from "../partners/config";
import { partnerPricing } from "../partners/pricing";
import { skills } from "../skills/registry";
import { bodySchema, responseSchema } from "../skills/schema-docs";
import { leadingSentences } from "./action-limits";
import { PAYMENT_SUMMARY, priceDecimal, priceLabel, SITE_NAME, SITE_SUMMARY } from "./identity";
import { components, PRICED_ROUTE_RESPONSES } from "./openapi-components";
import {
  type DocContext,
  ERROR,
  json,
  type OperationSpec,
  openApiOperation,
  ref,
  VALIDATION,
} from "./operation";

type Json = Record<string, unknown>;

/** Descriptions of the tags that are not skill categories (every tag used is declared, see tagList). */
const TAGS: Record<string, string> = {
  discovery: "Discovery documents for agents and crawlers",
  service: "Service health",
  checkout: "Card payments: checkout, webhook and credit balance",
  partners: "Hosted partner services, resold per call",
  admin: "Maintainer endpoints (admin token)",
};

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
  // Also /docs/mcp and /docs/reliability: taken by name on this route (routes/pages.tsx,
  // routes/stats.tsx).
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
  "POST /admin/refunds/{request_id}/resolve",
] as const;

function skillOperations(cfg: PublicConfig) {
  const paths: Record<string, Json> = {};
  for (const s of skills) {
    // The operation's description within GPT Actions' cap (action-limits.ts); the registry's whole
    // text, when cut, on the request body (no such cap) and behind externalDocs, the skill's page.
    const description = leadingSentences(s.description);
    const cut = description !== s.description;
    paths[s.endpoint] = {
      post: {
        operationId: s.id,
        summary: `${s.name} (${priceLabel(s)} per call)`,
        description,
        ...(cut ? { externalDocs: { url: `${cfg.baseUrl}/docs/${s.slug}` } } : {}),
        tags: [s.category],
        // No API authentication: the call is paid per request (x402) or with a card-credit key.
        security: [],
        requestBody: {
          ...(cut ? { description: s.description } : {}),
          required: true,
          content: { "application/json": { schema: bodySchema(s), example: s.example_request } },
        },
        responses: {
          "200": json("Result", responseSchema(s), s.example_response),
          "401": ERROR("Unknown or malformed card-credit key"),
          "402": json("Payment required, or the payment was rejected", ref("PaymentRequired")),
          "403": ERROR("The card-credit key buys calls of another skill"),
          ...PRICED_ROUTE_RESPONSES,
          "422": VALIDATION,
          ...(s.kind === "analytic"
            ? {
                "502": json(
                  "An upstream source failed (not charged), or the facilitator did not confirm the settlement (reason settlement_unconfirmed: result withheld, refunded if the transfer lands)",
                  { oneOf: [ref("UpstreamError"), ref("SettlementUnconfirmed")] },
                ),
                "504": json("An upstream source timed out; not charged", ref("UpstreamError")),
              }
            : s.readsAssets
              ? {
                  "502": json(
                    "The skill's data tables (static assets) failed to load (not charged, retry), or the facilitator did not confirm the settlement (reason settlement_unconfirmed: result withheld, refunded if the transfer lands)",
                    { oneOf: [ref("UpstreamError"), ref("SettlementUnconfirmed")] },
                  ),
                  "504": json(
                    "The skill's data tables (static assets) did not load in time; not charged, retry",
                    ref("UpstreamError"),
                  ),
                }
              : {
                  "502": json(
                    "The facilitator did not confirm the settlement (reason settlement_unconfirmed): result withheld, refunded if the transfer lands",
                    ref("SettlementUnconfirmed"),
                  ),
                }),
          "503": ERROR(
            "Payments temporarily unavailable (facilitator_unavailable, payments_unavailable: nothing charged), a contract wallet's retry could not be checked on chain (payer_check_unavailable), or a stored answer could not be read just now (idempotent_result_unavailable); each with Retry-After",
          ),
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

/**
 * The document: skill operations from the registry, then the routes' own declared operations;
 * without partner prices (a refused partner configuration) the partner routes are left out.
 */
export function openApiDocument(
  cfg: PublicConfig,
  pc: PricingConfig | undefined,
  operations: readonly OperationSpec[],
) {
  const paths: Record<string, Record<string, unknown>> = skillOperations(cfg) as Record<
    string,
    Record<string, unknown>
  >;
  const d: DocContext = { cfg, partner: pc && partnerPricing(pc) };
  for (const op of operations) {
    if (!pc && op.tags.includes("partners")) continue;
    paths[op.path] = { ...(paths[op.path] ?? {}), [op.method]: openApiOperation(op, d) };
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
    components,
  };
}
