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
import { partnerConfig } from "../partners/listing";
import { sellables } from "../payments/sellables";

/** Discovery documents, generated per request from the registry and configuration (cheap, never stale). */
export const discoveryRoutes = new Hono<AppEnv>();

const CACHE = { "cache-control": "public, max-age=300" };
const cfgOf = (c: Context<AppEnv>) => publicConfig(c.env, c.req.url);
const textDoc = (mime: string, make: (cfg: PublicConfig) => string) => (c: Context<AppEnv>) =>
  c.body(make(cfgOf(c)), 200, { "content-type": `${mime}; charset=utf-8`, ...CACHE });

discoveryRoutes.get("/robots.txt", textDoc("text/plain", robotsTxt));
discoveryRoutes.get("/sitemap.xml", textDoc("application/xml", sitemapXml));
discoveryRoutes.get("/llms.txt", textDoc("text/plain", llmsTxt));
discoveryRoutes.get("/AGENTS.md", textDoc("text/markdown", agentsMd));
discoveryRoutes.get("/.well-known/x402list.txt", textDoc("text/plain", x402ListTxt));
discoveryRoutes.get("/.well-known/x402", (c) => {
  const pc = partnerConfig(c.env);
  if ("error" in pc) return detail(c, 503, pc.error);
  const cfg = cfgOf(c);
  return c.json(x402Manifest(cfg, sellables(cfg, pc)), 200, CACHE);
});
discoveryRoutes.get("/.well-known/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/contracts/humanless.json", (c) => c.json(humanlessContract(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/openapi.json", (c) => c.json(openApiDocument(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/services/:file{[a-z0-9-]+\\.json}", (c) => {
  const spec = serviceSpec(cfgOf(c), c.req.param("file").replace(/\.json$/, ""));
  return spec ? c.json(spec, 200, CACHE) : detail(c, 404, "Not Found");
});
