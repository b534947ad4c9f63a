import type { PublicConfig } from "../config";
import { INTERFACE_VERSION } from "../config";
import { MAX_BODY_BYTES } from "../http/limits";
import type { PricingConfig } from "../partners/config";
import { PARTNERS, RECIPES } from "../partners/data";
import { partnerPricing, REFINERY_SLUG } from "../partners/pricing";
import { REFINERY_SKILL_PATH } from "../partners/refinery-skill";
import { type Sellable, sellables } from "../payments/sellables";
import { skills } from "../skills/registry";
import { bodySchema, validationExample, withoutDialect } from "../skills/schema-docs";
import {
  firstSentence,
  PAYMENT_SUMMARY,
  priceDecimal,
  priceLabel,
  publicPages,
  SITE_NAME,
  SITE_SUMMARY,
  shQuote,
  skillUrls,
} from "./identity";
import { MCP_SUMMARY, mcpClientConfig, mcpManifestEntry, mcpUrl } from "./mcp";

export function robotsTxt(cfg: PublicConfig): string {
  return [
    "User-agent: *",
    "Allow: /",
    "Disallow: /api/admin/",
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

/** llms.txt (llmstxt.org): title, summary, details, then link sections. */
export function llmsTxt(cfg: PublicConfig, pc: PricingConfig): string {
  const b = cfg.baseUrl;
  const partner = partnerPricing(pc);
  const lines = [
    `# ${SITE_NAME}`,
    "",
    `> ${SITE_SUMMARY}`,
    "",
    PAYMENT_SUMMARY(cfg),
    "",
    'Bodies are JSON objects; validation errors are 422 {"detail":[{loc,msg,type,input,ctx}]} (FastAPI shape), checked only once a call is paid: an unpaid call answers 402 whatever its body. Prices are in US dollars per call.',
    "URLs use the slug (token-count); ids use underscores (token_count). A card-credit key goes in Authorization: Bearer mk_... (X-API-Key also accepted).",
    "",
    "## Skills",
    "",
    ...skills.map(
      (s) =>
        `- [${s.id}](${skillUrls(cfg, s).docs}): POST ${s.endpoint}, ${priceLabel(s)} per call. ${firstSentence(s.description)}`,
    ),
    "",
    "## Hosted partners",
    "",
    `Partner APIs resold at ${partner.multiplier}x the partner's price ($${partner.tryRoutes.min} to $${partner.tryRoutes.max} per call), paid with the same x402 flow: list them at ${b}/api/partners and call GET|POST ${b}/api/partners/<partner_id>/try/<service_id> (path parameters in the query string).`,
    "",
    ...PARTNERS.map(
      (p) =>
        `- [${p.name}](${b}/api/partners/${p.id}): ${p.description} ${p.services.length} service(s), ${p.listing_status}.`,
    ),
    `- [Refinery recipes skill](${b}/services/${REFINERY_SLUG}.json): POST ${REFINERY_SKILL_PATH}, $${partner.refinery.min} to $${partner.refinery.max} per call depending on the recipe.`,
    "",
    "## MCP",
    "",
    `- [MCP server](${mcpUrl(cfg)}): ${MCP_SUMMARY} Setup: ${b}/docs/mcp`,
    "",
    "## Docs",
    "",
    `- [AGENTS.md](${b}/AGENTS.md): how coding agents discover, call and pay, with copy-paste examples`,
    `- [OpenAPI](${b}/openapi.json): every route with request and response schemas and prices`,
    `- [Catalog](${b}/api/catalog): the skills as JSON, with input schemas and examples`,
    `- [Terms for autonomous agents](${b}/contracts/humanless.json): pricing, settlement and refund rules`,
    "",
    "## Optional",
    "",
    `- [x402 manifest](${b}/.well-known/x402): every paid resource`,
    `- [Agent manifest](${b}/.well-known/agents.json)`,
    `- [Try it](${b}/applet): an interactive page that shows the 402 challenge`,
    "",
  ];
  return lines.join("\n");
}

/** A shell single-quoted word. */

export function agentsMd(cfg: PublicConfig): string {
  const b = cfg.baseUrl;
  const example = skills.find((s) => s.id === "slugify") ?? skills[0];
  const other = skills.find((s) => s.id !== example?.id);
  if (!example || !other) throw new Error("registry too small");
  const body = JSON.stringify(example.example_request);
  const invalid = validationExample(example);
  return `# AGENTS.md: using ${SITE_NAME}

${SITE_SUMMARY}

Base URL: ${b} (interface version ${INTERFACE_VERSION})

## 1. Discover

- \`GET ${b}/api/catalog\`: every skill with \`endpoint\`, \`price_usd\`, \`input_schema\`, \`example_request\`, \`example_response\`, \`docs_url\`.
- \`GET ${b}/openapi.json\`: OpenAPI 3.1 with request/response schemas, \`x-payment-info\` and \`x-x402\` prices.
- \`GET ${b}/llms.txt\`: the short version of this guide.

## 2. Call

Every skill is \`POST /api/skills/<slug>\` with a JSON object body:

\`\`\`sh
curl -s -X POST ${b}${example.endpoint} -H 'content-type: application/json' -d ${shQuote(body)}
\`\`\`

Without payment this answers \`402\` with the price (see below).

URLs use the skill's slug (\`token-count\`, hyphens); ids in the catalog and in checkout use underscores (\`token_count\`).
A near miss (the id form, uppercase, a trailing slash) answers \`308\` to the canonical URL, with it in \`did_you_mean\`.

## 3. Pay per call with x402 v2

Network \`${cfg.network}\`, scheme \`exact\`, asset USDC \`${cfg.usdcAddress}\` (6 decimals), paid to \`${cfg.payTo}\`.
The 402 carries the offer in the \`PAYMENT-REQUIRED\` header (base64 JSON) and in the JSON body. Sign it and retry with
\`PAYMENT-SIGNATURE\`; the 200 carries \`PAYMENT-RESPONSE\` with the transaction hash. With TypeScript:

\`\`\`ts
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(process.env.AGENT_KEY as \`0x\${string}\`) });
const pay = wrapFetchWithPayment(fetch, client);
const res = await pay("${b}${example.endpoint}", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(${body}) });
console.log(res.status, await res.json());
\`\`\`

You are charged only when the call succeeds: a 422 (bad body) or a 5xx is not settled, and a signature is accepted once.

## 4. Or pay with card credits

\`POST ${b}/api/cardpay/checkout\` with \`{"skill_id": "${example.id}"}\` returns a Stripe Checkout URL for a pack of calls. After paying,
the success page's "Reveal my key" button shows an API key once. Send it as \`Authorization: Bearer mk_...\` (\`X-API-Key: mk_...\` is accepted too); each successful call spends one credit, a failed call
spends none. \`GET ${b}/api/credits\` with the key shows what is left. A key pays only for the skill it was bought for.

\`\`\`sh
# 1. Create the checkout, then open checkout_url in a browser and pay.
curl -s -X POST ${b}/api/cardpay/checkout -H 'content-type: application/json' -d '{"skill_id":"${example.id}"}'
# 2. On the success page, "Reveal my key" shows the key once: keep it, and call with it.
export MK_KEY=mk_your_key
curl -s -X POST ${b}${example.endpoint} -H "authorization: Bearer $MK_KEY" -H 'content-type: application/json' -d ${shQuote(body)}
# 3. Calls left on the key.
curl -s ${b}/api/credits -H "authorization: Bearer $MK_KEY"
\`\`\`

## 4b. Or connect over MCP

${MCP_SUMMARY}

\`\`\`json
${JSON.stringify(mcpClientConfig(cfg), null, 2)}
\`\`\`

More: ${b}/docs/mcp

## 5. Read errors

Every error body is JSON. Nothing is charged for any of them.

- \`422\`: the body failed validation. Only a paid call (or one with a card-credit key) gets this far: an unpaid call answers \`402\` whatever its body, so read \`input_schema\` rather than probing with \`{}\`. \`${JSON.stringify(invalid.body)}\` to ${example.endpoint} answers \`${JSON.stringify({ detail: invalid.detail })}\`: fix the field named by \`loc\`.
- \`402\`: \`{"x402Version":2,"accepts":[...],"error":"Payment required: ...","reason":"payment_required"}\`: pay, or your payment was rejected (\`reason\` says why).
- \`401\`: \`{"detail":"Unknown card-credit key"}\` (or \`"Malformed card-credit key"\`) with \`WWW-Authenticate: Bearer\`: the \`mk_\` key is not one we issued.
- \`403\`: \`{"detail":"This key buys calls of ${example.id}; it cannot pay for ${other.id}."}\`: a key pays only for its own skill; buy one for this skill or pay with x402.
- \`404\`: \`{"detail":"Not Found"}\`. \`405\`: \`{"detail":"Method Not Allowed"}\` with an \`Allow\` header naming the methods the path takes (skills take \`POST\`).
- \`413\`: \`{"detail":"Request body larger than ${MAX_BODY_BYTES} bytes"}\`: bodies are limited to ${MAX_BODY_BYTES / 1024 / 1024} MiB.
- \`502\`/\`504\`: \`{"detail":"...","charged":false}\`: a network skill's upstream (Wikipedia, Wikidata, the page you named) or a partner failed or timed out; you were not charged, retry later (partner calls also name \`partner_id\`, \`service_id\` and \`upstream_status\`).
- \`503\`: payments temporarily unavailable; retry later. \`500\` carries a \`request_id\` for support (${cfg.contactEmail}).

## Skills

| skill | endpoint | price | docs |
|---|---|---|---|
${skills.map((s) => `| ${s.id} | POST ${s.endpoint} | ${priceLabel(s)} | ${skillUrls(cfg, s).docs} |`).join("\n")}
`;
}

export function x402Manifest(cfg: PublicConfig, paid: Sellable[]) {
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

export function agentManifest(cfg: PublicConfig) {
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
    mcp: mcpManifestEntry(cfg),
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
        asset: cfg.usdcAddress,
        pay_to: cfg.payTo,
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
      settlement_asset: { symbol: "USDC", network: cfg.network, address: cfg.usdcAddress, decimals: 6 },
      prices: Object.fromEntries(
        skills.map((s) => [s.id, { price_usd: priceDecimal(s), endpoint: s.endpoint }]),
      ),
      price_source: `${cfg.baseUrl}/api/catalog`,
    },
    payment_methods: ["x402", "card_credits"],
    settlement_rule:
      "A call is charged only when it answers 2xx. x402 payments are verified before the call runs and settled on chain after a 2xx; a 4xx or 5xx answer is not settled. Each payment authorization is accepted once.",
    refunds: {
      x402: "Nothing is settled for a failed call, so there is nothing to refund; settled successful calls are final.",
      card_credits:
        "A credit is spent only by a successful call; failed calls keep the credit. Unused credits do not expire while the service runs. Card refunds: contact support with the checkout session id.",
    },
    limits: {
      body_bytes: MAX_BODY_BYTES,
      field_limits: "Per skill in input_schema (maxLength, minimum, maximum); violations are 422.",
      rate_limits: "None enforced by the marketplace; Cloudflare's platform limits apply.",
    },
    error_formats: {
      validation: {
        status: 422,
        body: '{"detail":[{"loc":[...],"msg":"...","type":"...","input":...,"ctx":{...}}]}',
      },
      payment: { status: 402, body: '{"x402Version":2,"accepts":[...],"error":"...","reason":"..."}' },
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
          "An upstream (Wikipedia, Wikidata, a fetched page, a partner) failed (502) or timed out (504); the call is not charged.",
      },
      other: { status: "404, 503, 500", body: '{"detail":"..."}' },
    },
    data_handling:
      "Inputs are processed to answer the call; utility skills keep nothing. Payment records keep payer address, amount and transaction hash.",
  };
}

/** The refinery skill's service description: one price per recipe, from the gate's own pricing. */
function refinerySpec(cfg: PublicConfig, pc: PricingConfig) {
  const item = sellables(cfg, pc).find((s) => s.path === REFINERY_SKILL_PATH);
  if (!item?.priceForBody || !item.example) return undefined;
  const priceOf = item.priceForBody;
  const range = partnerPricing(pc).refinery;
  const byRecipe = Object.fromEntries(
    RECIPES.map((recipe) => [recipe, (priceOf({ recipe }) ?? item.priceMicros).toString()]),
  );
  return {
    id: REFINERY_SLUG.replaceAll("-", "_"),
    name: "Refinery recipes",
    description: item.description,
    method: "POST",
    endpoint: `${cfg.baseUrl}${REFINERY_SKILL_PATH}`,
    price: { mode: "dynamic", currency: "USD", min: range.min, max: range.max },
    x402: {
      scheme: "exact",
      network: cfg.network,
      asset: cfg.usdcAddress,
      amount: item.priceMicros.toString(),
      amount_by_recipe: byRecipe,
      pay_to: cfg.payTo,
    },
    input_schema: withoutDialect(item.example.inputSchema),
    example_request: item.example.input,
  };
}

/** The per-skill service description named by the OpenAPI `x-x402.specSource`. */
export function serviceSpec(cfg: PublicConfig, pc: PricingConfig, slug: string) {
  if (slug === REFINERY_SLUG) return refinerySpec(cfg, pc);
  const s = skills.find((k) => k.slug === slug);
  if (!s) return undefined;
  return {
    id: s.id,
    name: s.name,
    description: s.description,
    method: "POST",
    endpoint: skillUrls(cfg, s).endpoint,
    docs_url: skillUrls(cfg, s).docs,
    price: { mode: "fixed", currency: "USD", amount: priceDecimal(s) },
    x402: {
      scheme: "exact",
      network: cfg.network,
      asset: cfg.usdcAddress,
      amount: s.price_atomic.toString(),
      pay_to: cfg.payTo,
    },
    input_schema: bodySchema(s),
    example_request: s.example_request,
    example_response: s.example_response,
  };
}
