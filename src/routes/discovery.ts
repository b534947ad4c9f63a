import { type Context, Hono } from "hono";
import { type PublicConfig, publicConfig } from "../config";
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
import { JSON_TYPE, serveDocument } from "../http/conditional-get";
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

const cfgOf = (c: Context<AppEnv>) => publicConfig(c.env, c.req.url);
const TEXT_TYPE = "text/plain; charset=utf-8";

/**
 * One document of this router, rendered once per configuration (and `inputs`: the published
 * figures) with a strong ETag: http/conditional-get.ts. `name`: its route, the cache's key.
 */
const serve = (
  c: Context<AppEnv>,
  name: string,
  contentType: string,
  render: () => string | Response | Promise<string | Response>,
  inputs?: readonly unknown[],
) => serveDocument(c, { scope: cfgOf(c), name, contentType, inputs }, render);
const textDoc = (name: string, mime: string, make: (cfg: PublicConfig) => string) => (c: Context<AppEnv>) =>
  serve(c, name, `${mime}; charset=utf-8`, () => make(cfgOf(c)));
const jsonDoc = (name: string, make: (c: Context<AppEnv>) => unknown) => (c: Context<AppEnv>) =>
  serve(c, name, JSON_TYPE, () => JSON.stringify(make(c)));

/*
 * Documents that quote partner prices list the partners only while their configuration can be
 * read (listedPartnerPricing, as the home page and MCP): otherwise the skills alone, never a 503
 * (the partner routes answer theirs). Both that and the figures are fixed per scope and inputs.
 */

discoveryRoutes.get("/robots.txt", textDoc("/robots.txt", "text/plain", robotsTxt));
discoveryRoutes.get("/sitemap.xml", textDoc("/sitemap.xml", "application/xml", sitemapXml));
discoveryRoutes.get(ops.llmsTxt.route, async (c) => {
  const cfg = cfgOf(c);
  const doc = await statsIfAvailable(c);
  return serve(
    c,
    ops.llmsTxt.route,
    TEXT_TYPE,
    () =>
      `${llmsTxt(cfg, listedPartnerPricing(c))}${doc ? `\n${reliabilityMarkdown(doc, cfg.baseUrl)}` : ""}`,
    [doc],
  );
});
// Interface 2.7.1 §4.1 lists AGENTS.md as text/plain (browsers show it instead of downloading it).
discoveryRoutes.get(ops.agentsMd.route, (c) =>
  serve(c, ops.agentsMd.route, TEXT_TYPE, () => agentsMd(cfgOf(c), listedPartnerPricing(c))),
);
discoveryRoutes.get(ops.x402List.route, textDoc(ops.x402List.route, "text/plain", x402ListTxt));
// Lists every paid resource: a refused partner configuration leaves out the partners' only.
discoveryRoutes.get(ops.x402.route, async (c) => {
  const cfg = cfgOf(c);
  // Extra fields (reliability, policy) beside the standard ones: readers that ignore them are unaffected.
  const doc = await statsIfAvailable(c);
  return serve(
    c,
    ops.x402.route,
    JSON_TYPE,
    () =>
      JSON.stringify({
        ...x402Manifest(cfg, sellables(cfg, listedPartnerPricing(c))),
        ...(doc ? { reliability: reliabilitySummary(doc, `${cfg.baseUrl}/api/stats`) } : {}),
        policy: callPolicy(cfg),
      }),
    [doc],
  );
});
const agentsJson = (c: Context<AppEnv>) => agentManifest(cfgOf(c), listedPartnerPricing(c) !== undefined);
discoveryRoutes.get(ops.wellKnownAgents.route, jsonDoc(ops.wellKnownAgents.route, agentsJson));
discoveryRoutes.get(ops.agents.route, jsonDoc(ops.agents.route, agentsJson));
discoveryRoutes.get(
  ops.humanless.route,
  jsonDoc(ops.humanless.route, (c) => humanlessContract(cfgOf(c))),
);
discoveryRoutes.get(
  ops.openapi.route,
  jsonDoc(ops.openapi.route, (c) => openApiDocument(cfgOf(c), listedPartnerPricing(c), apiOperations)),
);
discoveryRoutes.get(ops.service.route, (c) => {
  const slug = (c.req.param("file") ?? "").replace(/\.json$/, "");
  return serve(c, `/services/${slug}`, JSON_TYPE, () => {
    const spec = serviceSpec(cfgOf(c), listedPartnerPricing(c), slug);
    return spec ? JSON.stringify(spec) : detail(c, 404, "Not Found");
  });
});
