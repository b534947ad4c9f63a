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
import { detail, partnersMisconfigured } from "../http/errors";
import { type PricingConfig, pricingConfig } from "../partners/listing";
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
const withPartners =
  (answer: (c: Context<AppEnv>, cfg: PublicConfig, pc: PricingConfig) => Response | Promise<Response>) =>
  (c: Context<AppEnv>) => {
    const pc = pricingConfig(c.env);
    if ("error" in pc) return partnersMisconfigured(c, pc.error);
    return answer(c, cfgOf(c), pc);
  };

discoveryRoutes.get("/robots.txt", textDoc("text/plain", robotsTxt));
discoveryRoutes.get("/sitemap.xml", textDoc("application/xml", sitemapXml));
discoveryRoutes.get(
  "/llms.txt",
  withPartners((c, cfg, pc) =>
    statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c)).then((doc) =>
      c.body(`${llmsTxt(cfg, pc)}${doc ? `\n${reliabilityMarkdown(doc, cfg.baseUrl)}` : ""}`, 200, {
        "content-type": "text/plain; charset=utf-8",
        ...CACHE,
      }),
    ),
  ),
);
// Interface 2.7.1 §4.1 lists AGENTS.md as text/plain (browsers show it instead of downloading it).
discoveryRoutes.get("/AGENTS.md", textDoc("text/plain", agentsMd));
discoveryRoutes.get("/.well-known/x402list.txt", textDoc("text/plain", x402ListTxt));
discoveryRoutes.get(
  "/.well-known/x402",
  withPartners(async (c, cfg, pc) => {
    // Extra fields (reliability, policy) beside the standard ones: readers that ignore them are unaffected.
    const doc = await statsIfAvailable(c.env.DB, c.req.url, waitUntilOf(c));
    return c.json(
      {
        ...x402Manifest(cfg, sellables(cfg, pc)),
        ...(doc ? { reliability: reliabilitySummary(doc, `${cfg.baseUrl}/api/stats`) } : {}),
        policy: callPolicy(cfg),
      },
      200,
      CACHE,
    );
  }),
);
discoveryRoutes.get("/.well-known/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/agents.json", (c) => c.json(agentManifest(cfgOf(c)), 200, CACHE));
discoveryRoutes.get("/contracts/humanless.json", (c) => c.json(humanlessContract(cfgOf(c)), 200, CACHE));
discoveryRoutes.get(
  "/openapi.json",
  withPartners((c, cfg, pc) => c.json(openApiDocument(cfg, pc), 200, CACHE)),
);
discoveryRoutes.get(
  "/services/:file{[a-z0-9-]+\\.json}",
  withPartners((c, cfg, pc) => {
    const spec = serviceSpec(cfg, pc, (c.req.param("file") ?? "").replace(/\.json$/, ""));
    return spec ? c.json(spec, 200, CACHE) : detail(c, 404, "Not Found");
  }),
);
