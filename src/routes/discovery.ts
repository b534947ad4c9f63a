import { type Context, Hono } from "hono";
import type { PublicConfig } from "../config";
import {
  agentManifest,
  humanlessContract,
  robotsTxt,
  sitemapXml,
  x402ListTxt,
  x402Manifest,
} from "../discovery/documents";
import { agentsMd, llmsTxt } from "../discovery/guides";
import { openApiDocument } from "../discovery/openapi";
import { CLIENT_ERROR, ERROR, json, type OperationSpec, operation, text } from "../discovery/operation";
import { serviceSpec } from "../discovery/service-specs";
import type { AppEnv } from "../env";
import { serveConfigured, serveJson } from "../http/conditional-get";
import { detail } from "../http/errors";
import { listedPartnerPricing } from "../partners/request";
import { sellables } from "../payments/sellables";
import { callPolicy, reliabilityMarkdown, reliabilitySummary, statsIfAvailable } from "../stats/published";
import { adminOperations } from "./admin";
import { catalogOperation } from "./catalog";
import { checkoutOperations } from "./checkout";
import { didRoutes } from "./did";
import { healthOperation } from "./health";
import { partnerOperations } from "./partner-operations";
import { statsOperation } from "./stats";

/** Discovery documents, built from the registry and configuration once per isolate and variant. */
export const discoveryRoutes = new Hono<AppEnv>();

discoveryRoutes.route("/", didRoutes); // /.well-known/did.json and jwks.json (receipt key)

const doc = (operationId: string, path: string, summary: string, mime?: string) =>
  operation({
    method: "get",
    path,
    operationId,
    summary,
    tags: ["discovery"],
    responses: {
      "200": mime ? text(summary, mime) : json(summary),
      "4XX": CLIENT_ERROR,
    },
  });
export const documentOperations = {
  llmsTxt: doc("get_llms_txt", "/llms.txt", "Guide for language models (llmstxt.org)", "text/plain"),
  agentsMd: doc("get_agents_md", "/AGENTS.md", "Guide for coding agents", "text/plain"),
  x402List: doc("get_x402list_txt", "/.well-known/x402list.txt", "Directory ownership tokens", "text/plain"),
  x402: doc("get_x402_manifest", "/.well-known/x402", "x402 manifest: every paid resource"),
  wellKnownAgents: doc("get_well_known_agents_json", "/.well-known/agents.json", "Agent manifest"),
  agents: doc("get_agents_json", "/agents.json", "Agent manifest"),
  humanless: doc(
    "get_humanless_contract",
    "/contracts/humanless.json",
    "Terms for agents acting with no human in the loop",
  ),
  openapi: doc("get_openapi", "/openapi.json", "This document"),
  service: operation({
    method: "get",
    path: "/services/{slug}.json",
    route: "/services/:file{[a-z0-9-]+\\.json}",
    operationId: "get_service_description",
    summary: "One skill's service description (the x-x402 specSource)",
    tags: ["discovery"],
    responses: {
      "200": json("Service description"),
      "404": ERROR("Unknown skill (the refinery skill's too while the partners are left out)"),
    },
  }),
};
const ops = documentOperations;

/** Every API route other than a skill, in the order openapi.json lists them. */
const apiOperations: readonly OperationSpec[] = [
  healthOperation,
  catalogOperation,
  statsOperation,
  ...Object.values(documentOperations),
  ...checkoutOperations,
  ...partnerOperations,
  ...adminOperations,
];

const TEXT_TYPE = "text/plain; charset=utf-8";

/*
 * Each document is rendered once per configuration (and `inputs`: the published figures) with a
 * strong ETag, its route the cache's key: http/conditional-get.ts.
 */
type Make<T> = (cfg: PublicConfig, c: Context<AppEnv>) => T;
const textDoc = (route: string, mime: string, make: Make<string>) =>
  discoveryRoutes.get(route, (c) =>
    serveConfigured(c, route, `${mime}; charset=utf-8`, (cfg) => make(cfg, c)),
  );
const jsonDoc = (route: string, make: Make<unknown>) =>
  discoveryRoutes.get(route, (c) => serveJson(c, route, (cfg) => make(cfg, c)));

/*
 * Documents that quote partner prices list the partners only while their configuration can be
 * read (listedPartnerPricing, as the home page and MCP): otherwise the skills alone, never a 503
 * (the partner routes answer theirs). Both that and the figures are fixed per scope and inputs.
 */

textDoc("/robots.txt", "text/plain", robotsTxt);
textDoc("/sitemap.xml", "application/xml", sitemapXml);
discoveryRoutes.get(ops.llmsTxt.route, async (c) => {
  const doc = await statsIfAvailable(c);
  return serveConfigured(
    c,
    ops.llmsTxt.route,
    TEXT_TYPE,
    (cfg) =>
      `${llmsTxt(cfg, listedPartnerPricing(c))}${doc ? `\n${reliabilityMarkdown(doc, cfg.baseUrl)}` : ""}`,
    [doc],
  );
});
// Interface 2.7.1 §4.1 lists AGENTS.md as text/plain (browsers show it instead of downloading it).
textDoc(ops.agentsMd.route, "text/plain", (cfg, c) => agentsMd(cfg, listedPartnerPricing(c)));
textDoc(ops.x402List.route, "text/plain", x402ListTxt);
// Lists every paid resource: a refused partner configuration leaves out the partners' only.
discoveryRoutes.get(ops.x402.route, async (c) => {
  // Extra fields (reliability, policy) beside the standard ones: readers that ignore them are unaffected.
  const doc = await statsIfAvailable(c);
  return serveJson(
    c,
    ops.x402.route,
    (cfg) => ({
      ...x402Manifest(cfg, sellables(cfg, listedPartnerPricing(c))),
      ...(doc ? { reliability: reliabilitySummary(doc, `${cfg.baseUrl}/api/stats`) } : {}),
      policy: callPolicy(cfg),
    }),
    { inputs: [doc] },
  );
});
const agentsJson: Make<unknown> = (cfg, c) => agentManifest(cfg, listedPartnerPricing(c) !== undefined);
jsonDoc(ops.wellKnownAgents.route, agentsJson);
jsonDoc(ops.agents.route, agentsJson);
jsonDoc(ops.humanless.route, humanlessContract);
jsonDoc(ops.openapi.route, (cfg, c) => openApiDocument(cfg, listedPartnerPricing(c), apiOperations));
discoveryRoutes.get(ops.service.route, (c) => {
  const slug = (c.req.param("file") ?? "").replace(/\.json$/, "");
  return serveJson(
    c,
    `/services/${slug}`,
    (cfg) => serviceSpec(cfg, listedPartnerPricing(c), slug) ?? detail(c, 404, "Not Found"),
  );
});
