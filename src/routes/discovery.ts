import { type Context, Hono } from "hono";
import { type PublicConfig, publicConfig } from "../config";
import {
  agentManifest,
  agentsMd,
  humanlessContract,
  llmsTxt,
  robotsTxt,
  serviceSpec,
  sitemapXml,
  x402ListTxt,
  x402Manifest,
} from "../discovery/documents";
import { openApiDocument } from "../discovery/openapi";
import type { AppEnv } from "../env";
import { detail } from "../http/errors";
import { partnerConfigured } from "../partners/request";
import { sellables } from "../payments/sellables";
import {
  callPolicy,
  reliabilityMarkdown,
  reliabilitySummary,
  statsIfAvailable,
  waitUntilOf,
} from "../stats/published";
import { didRoutes } from "./did";

/** Discovery documents, generated per request from the registry and configuration (cheap, never stale). */
export const discoveryRoutes = new Hono<AppEnv>();

discoveryRoutes.route("/", didRoutes); // /.well-known/did.json and jwks.json (receipt key)

const CACHE = { "cache-control": "public, max-age=300" };
const cfgOf = (c: Context<AppEnv>) => publicConfig(c.env, c.req.url);
const textDoc = (mime: string, make: (cfg: PublicConfig) => string) => (c: Context<AppEnv>) =>
  c.body(make(cfgOf(c)), 200, { "content-type": `${mime}; charset=utf-8`, ...CACHE });

/** Documents that quote partner prices need the multiplier: a bad one is a 503, as on /api/partners. */
const quotesPartnerPrices = partnerConfigured("pricing");

discoveryRoutes.get("/robots.txt", textDoc("text/plain", robotsTxt));
discoveryRoutes.get("/sitemap.xml", textDoc("application/xml", sitemapXml));
discoveryRoutes.get("/llms.txt", quotesPartnerPrices, async (c) => {
  const cfg = cfgOf(c);
  const doc = await statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c));
  return c.body(
    `${llmsTxt(cfg, c.var.pricingConfig)}${doc ? `\n${reliabilityMarkdown(doc, cfg.baseUrl)}` : ""}`,
    200,
    {
      "content-type": "text/plain; charset=utf-8",
      ...CACHE,
    },
  );
});
// Interface 2.7.1 §4.1 lists AGENTS.md as text/plain (browsers show it instead of downloading it).
discoveryRoutes.get("/AGENTS.md", textDoc("text/plain", agentsMd));
discoveryRoutes.get("/.well-known/x402list.txt", textDoc("text/plain", x402ListTxt));
discoveryRoutes.get("/.well-known/x402", quotesPartnerPrices, async (c) => {
  const cfg = cfgOf(c);
  // Extra fields (reliability, policy) beside the standard ones: readers that ignore them are unaffected.
  const doc = await statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c));
  return c.json(
    {
      ...x402Manifest(cfg, sellables(cfg, c.var.pricingConfig)),
      ...(doc ? { reliability: reliabilitySummary(doc, `${cfg.baseUrl}/api/stats`) } : {}),
      policy: callPolicy(cfg),
    },
    200,
    CACHE,
  );
});
discoveryRoutes.get("/.well-known/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/contracts/humanless.json", (c) => c.json(humanlessContract(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/openapi.json", quotesPartnerPrices, (c) =>
  c.json(openApiDocument(cfgOf(c), c.var.pricingConfig), 200, CACHE),
);
discoveryRoutes.get("/services/:file{[a-z0-9-]+\\.json}", quotesPartnerPrices, (c) => {
  const slug = (c.req.param("file") ?? "").replace(/\.json$/, "");
  const spec = serviceSpec(cfgOf(c), c.var.pricingConfig, slug);
  return spec ? c.json(spec, 200, CACHE) : detail(c, 404, "Not Found");
});
