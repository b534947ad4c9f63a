import { Hono } from "hono";
import type { PublicConfig } from "../config";
import { CLIENT_ERROR, json, operation, ref } from "../discovery/operation";
import type { AppEnv } from "../env";
import { serveJson } from "../http/conditional-get";
import { inputJsonSchema, skills } from "../skills/registry";

export const catalogRoutes = new Hono<AppEnv>();

export const catalogOperation = operation({
  method: "get",
  path: "/api/catalog",
  operationId: "get_catalog",
  summary: "The skill catalog (spec 2.1)",
  tags: ["discovery"],
  responses: { "200": json("Catalog", ref("Catalog")), "4XX": CLIENT_ERROR },
});

/**
 * Spec 2.1: the catalog document, every entry derived from the registry; built once per
 * configuration, with an ETag and the discovery documents' Cache-Control (http/conditional-get.ts).
 */
catalogRoutes.get(catalogOperation.route, (c) => serveJson(c, catalogOperation.route, catalog));

const catalog = (cfg: PublicConfig) => ({
  skills: skills.map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    endpoint: s.endpoint,
    method: "POST",
    doc_slug: s.slug,
    category: s.category,
    price_usd: s.price_usd,
    docs_url: `${cfg.baseUrl}/docs/${s.slug}`,
    example_request: s.example_request,
    example_response: s.example_response,
    input_schema: inputJsonSchema(s),
  })),
  x402_enabled: cfg.x402Enabled,
  cardpay_enabled: cfg.cardpayEnabled,
  free_beta: cfg.freeBeta,
  hosted_partners: [],
});
