import type { PublicConfig } from "../config";
import { INTERFACE_VERSION } from "../config";
import { MAX_BODY_BYTES } from "../http/limits";
import { rateLimitTerms } from "../payments/quotas";
import type { Sellable } from "../payments/sellables";
import { skillById, skills } from "../skills/registry";
import { bodySchema } from "../skills/schema-docs";
import {
  PAYMENT_SUMMARY,
  priceDecimal,
  priceLabel,
  publicPages,
  SITE_NAME,
  SITE_SUMMARY,
  skillUrls,
} from "./identity";
import { mcpManifestEntry } from "./mcp";
import { paymentTerms } from "./payment-terms";

export function robotsTxt(cfg: PublicConfig): string {
  return [
    "User-agent: *",
    "Allow: /",
    "Disallow: /api/admin/",
    // The dashboard is private. The checkout pages are not disallowed: they say noindex
    // (X-Robots-Tag), which a crawler reads only on a page it may fetch; a disallowed success URL
    // (a capability) could still be listed from a link, as a bare URL.
    "Disallow: /admin",
    "",
    `Sitemap: ${cfg.baseUrl}/sitemap.xml`,
    "",
  ].join("\n");
}

const xmlEscape = (s: string) =>
  s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");

export function sitemapXml(cfg: PublicConfig): string {
  const urls = publicPages(cfg)
    .map((loc) => `  <url><loc>${xmlEscape(loc)}</loc></url>`)
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}
export function x402Manifest(cfg: PublicConfig, paid: readonly Sellable[]) {
  return {
    version: 1,
    resources: paid.map((s) => `${cfg.baseUrl}${s.path}`),
    ownershipProofs: cfg.ownershipProofs,
    instructions: `${PAYMENT_SUMMARY(cfg)} Full guide: ${cfg.baseUrl}/llms.txt`,
  };
}

export function x402ListTxt(cfg: PublicConfig): string {
  return cfg.x402listTokens.length ? `${cfg.x402listTokens.join("\n")}\n` : "";
}

export function agentManifest(cfg: PublicConfig, partners: boolean) {
  return {
    name: SITE_NAME,
    description: SITE_SUMMARY,
    version: INTERFACE_VERSION,
    base_url: cfg.baseUrl,
    contact: cfg.contactEmail,
    documentation: {
      llms_txt: `${cfg.baseUrl}/llms.txt`,
      agents_md: `${cfg.baseUrl}/AGENTS.md`,
      openapi: `${cfg.baseUrl}/openapi.json`,
    },
    mcp: mcpManifestEntry(cfg, partners),
    auth: {
      type: "none",
      description: "No account or API key is needed to call a skill; payment is per call.",
    },
    payment_methods: [
      {
        type: "x402",
        version: 2,
        scheme: "exact",
        network: cfg.network,
        asset: paymentTerms(cfg)?.asset,
        pay_to: paymentTerms(cfg)?.payTo,
        header: "PAYMENT-SIGNATURE",
      },
      {
        type: "card_credits",
        checkout: `${cfg.baseUrl}/api/cardpay/checkout`,
        header: "Authorization: Bearer mk_...",
        balance: `${cfg.baseUrl}/api/credits`,
      },
    ],
    skills: skills.map((s) => ({
      id: s.id,
      name: s.name,
      description: s.description,
      category: s.category,
      endpoint: skillUrls(cfg, s).endpoint,
      method: "POST",
      price_usd: s.price_usd,
      price: priceLabel(s),
      input_schema: bodySchema(s),
      docs_url: skillUrls(cfg, s).docs,
    })),
  };
}

/** Machine-readable terms for agents acting with no human in the loop. */
export function humanlessContract(cfg: PublicConfig) {
  return {
    name: `${SITE_NAME} terms for autonomous agents`,
    version: INTERFACE_VERSION,
    provider: { name: SITE_NAME, base_url: cfg.baseUrl, support_contact: cfg.contactEmail },
    pricing: {
      currency: "USD",
      unit: "per successful call",
      settlement_asset: {
        symbol: "USDC",
        network: cfg.network,
        address: paymentTerms(cfg)?.asset,
        decimals: 6,
      },
      prices: Object.fromEntries(
        skills.map((s) => [s.id, { price_usd: priceDecimal(s), endpoint: s.endpoint }]),
      ),
      price_source: `${cfg.baseUrl}/api/catalog`,
    },
    payment_methods: ["x402", "card_credits"],
    settlement_rule:
      "A call is charged only when it answers 2xx. x402 payments are verified before the call runs and settled on chain after a 2xx; a 4xx or 5xx answer is not settled. Each payment authorization is accepted once.",
    refunds: {
      x402: "Nothing is settled for a failed call, so there is nothing to refund; settled successful calls are final. Two exceptions, both refunded to the payer from the operating wallet, normally automatically (a refund whose amount is in doubt is held for the maintainer): a paid partner try whose partner must be paid before it answers settles your payment first, and if that partner then fails the 502 says charged: true and you get back the price less what the partner can still collect from us; and when the facilitator did not confirm a settlement (502 settlement_unconfirmed, result withheld) but the transfer lands on chain after all, reconciliation refunds it, less the share owed to a partner that served that call (nothing is kept back for the marketplace's own skills).",
      card_credits:
        "A credit is spent only by a successful call; failed calls keep the credit. Unused credits do not expire while the service runs. Card refunds: contact support with the checkout session id.",
    },
    limits: {
      body_bytes: MAX_BODY_BYTES,
      field_limits: "Per skill in input_schema (maxLength, minimum, maximum); violations are 422.",
      rate_limits: rateLimitTerms({
        on: cfg.rateLimits,
        heavy: cfg.heavyResources,
        freeHeavySkills: cfg.freeBeta ? cfg.heavyResources.filter((r) => skillById(r)) : [],
      }),
    },
    error_formats: {
      validation: {
        status: 422,
        body: '{"detail":[{"loc":[...],"msg":"...","type":"...","input":...,"ctx":{...}}]}',
      },
      payment: {
        status: 402,
        body: '{"x402Version":1,"accepts":[{"network":"base","maxAmountRequired":"...",...}],"error":"...","reason":"..."}',
        meaning:
          "The body is the offer in x402 v1 form (for v1 clients); the PAYMENT-REQUIRED header carries the x402 v2 PaymentRequired (base64 JSON: amount, network eip155:8453). reason is payment_required, or why a payment was refused.",
      },
      card_credit_key: {
        status: "401, 403",
        body: '{"detail":"..."}',
        meaning:
          "401 (with WWW-Authenticate: Bearer): the mk_ key is malformed or unknown. 403: the key was bought for another skill.",
      },
      body_too_large: {
        status: 413,
        body: `{"detail":"Request body larger than ${MAX_BODY_BYTES} bytes"}`,
        meaning: `Bodies are limited to ${MAX_BODY_BYTES} bytes (${MAX_BODY_BYTES / 1024 / 1024} MiB).`,
      },
      method_not_allowed: {
        status: 405,
        body: '{"detail":"Method Not Allowed"}',
        meaning: "The Allow header names the methods the path accepts.",
      },
      upstream: {
        status: "502, 504",
        body: '{"detail":"...","charged":false}',
        meaning:
          'An upstream (Wikipedia, Wikidata, a fetched page, a partner, token_count\'s data tables in our static assets) failed (502) or timed out (504); the call is not charged, except by a partner that must be paid before it answers: the payment settled first, and the answer says "charged":true with a refund (status, amount_usd, transaction): the price less what the partner can still collect.',
      },
      other: { status: "404, 503, 500", body: '{"detail":"..."}' },
    },
    data_handling:
      "Inputs are processed to answer the call. A call sent with a payment id or an Idempotency-Key has its answer (which may repeat its input) kept for 24 hours, so a retry is served it without paying again; a card checkout's first-call payload and its answer are kept with the checkout session. The network skills (osint_graph, research, seo, ai_detector) keep their answers, which repeat the input, in a cache shared by every caller for the deployment's NETWORK_CACHE_TTL_SECONDS (default 1 hour): an answer's cache field, or its speed, shows whether anyone asked the same normalized input within that time, so do not send them an input whose asking must stay secret. osint_graph calls are logged (request id, depth, graph size), not their seed. The call log keeps no bodies and no buyer identity. Payment records keep payer address, amount and transaction hash.",
  };
}
