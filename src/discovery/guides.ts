import type { PublicConfig } from "../config";
import { INTERFACE_VERSION } from "../config";
import { MAX_BODY_BYTES } from "../http/limits";
import { IDEMPOTENCY_KEY_META, MCP_TEXT_COPY_MAX, RECEIPT_META, RECEIPT_NOTE_META } from "../mcp/limits";
import type { PricingConfig } from "../partners/config";
import { PARTNERS } from "../partners/data";
import { partnerPricing, REFINERY_SLUG } from "../partners/pricing";
import { REFINERY_SKILL_PATH } from "../partners/refinery-skill";
import { skills } from "../skills/registry";
import { validationExample } from "../skills/schema-docs";
import {
  firstSentence,
  PAYMENT_SUMMARY,
  priceLabel,
  SITE_NAME,
  SITE_SUMMARY,
  shQuote,
  skillUrls,
} from "./identity";
import { mcpClientConfig, mcpSummary, mcpUrl } from "./mcp";
import { PAYMENTS_MISCONFIGURED, paymentTerms } from "./payment-terms";

// The text guides: llms.txt for language models, AGENTS.md for coding agents.

/** llms.txt (llmstxt.org): title, summary, details, then link sections (partners only with prices). */
export function llmsTxt(cfg: PublicConfig, pc: PricingConfig | undefined): string {
  const b = cfg.baseUrl;
  const lines = [
    `# ${SITE_NAME}`,
    "",
    `> ${SITE_SUMMARY}`,
    "",
    PAYMENT_SUMMARY(cfg),
    "",
    ...(cfg.freeBeta
      ? [
          `Free beta: skill calls are free for now (they answer without a 402 or any payment)${pc ? "; partner services and refinery recipes are still paid" : ""}.`,
          "",
        ]
      : []),
    'Bodies are JSON objects; validation errors are 422 {"detail":[{loc,msg,type,input,ctx}]} (FastAPI shape). A call is priced before its body is read unless it sends a card-credit key (Bearer mk_): with neither a payment nor such a key it answers 402 whatever its body; a paid call, or one with a card key, is validated first (a bad body is a 422 that spends nothing, whatever the key holds). Prices are in US dollars per call.',
    "URLs use the slug (token-count); ids use underscores (token_count). A card-credit key goes in Authorization: Bearer mk_... (X-API-Key also accepted).",
    "",
    "## Skills",
    "",
    ...skills.map(
      (s) =>
        `- [${s.id}](${skillUrls(cfg, s).docs}): POST ${s.endpoint}, ${priceLabel(s)} per call. ${firstSentence(s.description)}`,
    ),
    "",
    ...(pc ? partnerSection(b, partnerPricing(pc)) : []),
    "## MCP",
    "",
    `- [MCP server](${mcpUrl(cfg)}): ${mcpSummary(pc !== undefined)} Setup: ${b}/docs/mcp`,
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

/** llms.txt's hosted partners: left out while the partner configuration is refused. */
const partnerSection = (b: string, partner: ReturnType<typeof partnerPricing>) => [
  "## Hosted partners",
  "",
  `Partner APIs resold at ${partner.multiplier}x the partner's price ($${partner.tryRoutes.min} to $${partner.tryRoutes.max} per call), paid with the same x402 flow: list them at ${b}/api/partners and call GET|POST ${b}/api/partners/<partner_id>/try/<service_id> (path parameters in the query string).`,
  `@x402/core's x402Client pays at most $1 a payment unless told otherwise: for prices above that, raise the cap with client.setSpendControls({ maxAmountPerPayment: "$${highestPartnerPrice(partner)}" }).`,
  "",
  ...PARTNERS.map(
    (p) =>
      `- [${p.name}](${b}/api/partners/${p.id}): ${p.description} ${p.services.length} service(s), ${p.listing_status}.`,
  ),
  `- [Refinery recipes skill](${b}/services/${REFINERY_SLUG}.json): POST ${REFINERY_SKILL_PATH}, $${partner.refinery.min} to $${partner.refinery.max} per call depending on the recipe.`,
  "",
];

/** AGENTS.md's line on x402Client's $1 cap, which partner prices may exceed. */
const spendControlsHint = (pc: PricingConfig) =>
  `// x402Client pays at most $1 a payment by default: enough for every skill; hosted partner services cost up to a few dollars (see /llms.txt), so raise it to buy those:
// client.setSpendControls({ maxAmountPerPayment: "$${highestPartnerPrice(partnerPricing(pc))}" });
`;

/** The highest partner price (a try route or a refinery recipe), in decimal dollars. */
const highestPartnerPrice = (partner: ReturnType<typeof partnerPricing>) =>
  Math.max(Number(partner.tryRoutes.max), Number(partner.refinery.max)).toString();

export function agentsMd(cfg: PublicConfig, pc: PricingConfig | undefined): string {
  const b = cfg.baseUrl;
  const terms = paymentTerms(cfg);
  const example = skills.find((s) => s.id === "slugify") ?? skills[0];
  const other = skills.find((s) => s.id !== example?.id);
  if (!example || !other) throw new Error("registry too small");
  const body = JSON.stringify(example.example_request);
  const invalid = validationExample(example);
  return `# AGENTS.md: using ${SITE_NAME}

${SITE_SUMMARY}

Base URL: ${b} (interface version ${INTERFACE_VERSION})
${cfg.freeBeta ? `\n**Free beta**: skill calls are free for now (they answer without a \`402\` or any payment)${pc ? "; partner services and refinery recipes are still paid" : ""}.\n` : ""}
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

Network \`${cfg.network}\`, scheme \`exact\`, ${terms ? `asset USDC \`${terms.asset}\` (6 decimals), paid to \`${terms.payTo}\`` : PAYMENTS_MISCONFIGURED}.
The 402 carries the offer in the \`PAYMENT-REQUIRED\` header (base64 JSON) and in the JSON body. Sign it and retry with
\`PAYMENT-SIGNATURE\`; the 200 carries \`PAYMENT-RESPONSE\` with the transaction hash. With TypeScript:

\`\`\`ts
// npm i @x402/core @x402/evm @x402/fetch viem
// Save as pay.mts; run: AGENT_KEY=0x<private key of a wallet holding USDC on Base> node pay.mts
// (Node 22.18 or later runs TypeScript; or npx tsx pay.mts)
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(process.env.AGENT_KEY as \`0x\${string}\`) });
${pc ? spendControlsHint(pc) : "// x402Client pays at most $1 a payment by default: enough for every skill.\n"}const pay = wrapFetchWithPayment(fetch, client);
const res = await pay("${b}${example.endpoint}", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(${body}) });
console.log(res.status, await res.json());
\`\`\`

You are charged only when the call succeeds: a 422 (bad body) or a 5xx is not settled, and a signature is accepted once.

## 4. Or pay with card credits

\`POST ${b}/api/cardpay/checkout\` with \`{"skill_id": "${example.id}"}\` returns a Stripe Checkout URL for a pack of calls. After paying,
the success page's "Reveal my key" button shows an API key once. Send it as \`Authorization: Bearer mk_...\` (\`X-API-Key: mk_...\` is accepted too); each successful call spends one credit, a failed call
spends none. \`GET ${b}/api/credits\` with the key shows what is left. A key pays only for the skill it was bought for.
A key cannot be topped up: once it runs out, a new checkout sells a new pack with a new key.

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

${mcpSummary(pc !== undefined)}

\`\`\`json
${JSON.stringify(mcpClientConfig(cfg), null, 2)}
\`\`\`

More: ${b}/docs/mcp

## 4c. Check the receipt

Every paid 2xx (x402 or card credit) carries \`X-Payment-Receipt\` while ${b}/.well-known/did.json lists a signing key: a deployment without a usable one
(did.json answers 503 or lists only retired keys), or a signing that failed, sends the answer without it. The receipt is a compact JWS (EdDSA) whose payload names \`resourceUrl\`, \`payer\`, \`requestId\`, \`status\`,
\`bodySha256\` (hex SHA-256 of the exact body bytes you received) and, for x402, \`amount\` and \`transaction\`. To verify it: its header's
\`kid\` must be \`did:web:<host>#…\` of the base URL that \`resourceUrl\` starts with: a port written \`%3A<port>\`, and each segment of a base URL's path added as \`:<segment>\`
(\`https://h.example:8443/m\` gives \`did:web:h.example%3A8443:m\`); take the \`publicKeyJwk\` of the \`verificationMethod\` whose \`id\` is
that \`kid\` in did.json, check the signature (e.g. jose's \`compactVerify\`), then compare \`bodySha256\`
with the SHA-256 of the body as received. Over MCP the receipt is in \`_meta["${RECEIPT_META}"]\`, its \`bodySha256\` that of \`content[0].text\` (UTF-8),
except for a result whose JSON is over ${MCP_TEXT_COPY_MAX} characters: it comes only as \`structuredContent\` (serialised again it need not give the signed bytes),
\`content[0].text\` is a note, and \`_meta["${RECEIPT_NOTE_META}"]\` says so: such a receipt cannot be checked, call the skill over HTTP for one that can.

## 5. Read errors

Every error body is JSON. Nothing is charged for any of them, with two refunded exceptions named below (a partner paid before it failed, and \`settlement_unconfirmed\`).

- \`422\`: the body failed validation. Only a paid call (or one with a card-credit key) gets this far: a call with neither answers \`402\` whatever its body, so read \`input_schema\` rather than probing with \`{}\`. \`${JSON.stringify(invalid.body)}\` to ${example.endpoint} answers \`${JSON.stringify({ detail: invalid.detail })}\`: fix the field named by \`loc\`.
- \`402\`: the body is the offer in x402 **v1** form, \`{"x402Version":1,"accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"...",...}],"error":"Payment required: ...","reason":"payment_required"}\` (what v1 clients read); the \`PAYMENT-REQUIRED\` header is the x402 **v2** \`PaymentRequired\` (base64 JSON, \`amount\`, network \`eip155:8453\`). Pay, or your payment was rejected (\`reason\` says why: \`invalid_payment_header\` when the header is not a payment at all, \`invalid_x402_version\` when \`PAYMENT-SIGNATURE\` carries a payload that is not v2 (v1 goes in \`X-PAYMENT\`), \`resource_mismatch\`, \`invalid_valid_before\` when \`validBefore\` is not Unix seconds within \`maxTimeoutSeconds\` of now, \`invalid_payment_payload\` when the EIP-3009 authorization is malformed (amounts and times are decimal integer strings, the nonce 32 bytes), the facilitator's code, ...).
- \`401\`: \`{"detail":"Unknown card-credit key"}\` (or \`"Malformed card-credit key"\`) with \`WWW-Authenticate: Bearer\`: the \`mk_\` key is not one we issued.
- \`403\`: \`{"detail":"This key buys calls of ${example.id}; it cannot pay for ${other.id}."}\`: a key pays only for its own skill; buy one for this skill or pay with x402.
- \`404\`: \`{"detail":"Not Found"}\`. \`405\`: \`{"detail":"Method Not Allowed"}\` with an \`Allow\` header naming the methods the path takes (skills take \`POST\`).
- \`409\`: an idempotent retry (the payment-identifier extension, or \`Idempotency-Key\` with a card key: over MCP the call's \`_meta["${IDEMPOTENCY_KEY_META}"]\`) that cannot get the stored answer: \`idempotent_request_in_flight\` (the first call still runs; retry after \`Retry-After\`), \`idempotency_key_mismatch\` (the id was used for another request or payer: use a new one), \`payment_signature_unproven\` (a contract wallet's signature the chain does not confirm), \`idempotent_result_expired\` (the stored answer is no longer available: nothing more is charged; a new id or key runs, and pays for, the call again).
- \`413\`: \`{"detail":"Request body larger than ${MAX_BODY_BYTES} bytes"}\`: bodies are limited to ${MAX_BODY_BYTES / 1024 / 1024} MiB. \`415\` with \`Accept-Encoding: identity\`: the body was sent with a \`Content-Encoding\` (gzip, br, …); send it uncompressed.
- \`429\`: \`{"reason":"rate_limited","scope":...,"retry_after":60}\` with \`Retry-After\`: too many requests (limits in /contracts/humanless.json); never charged. Per IP and card key it is checked before any payment work, per payer address once the facilitator has verified the signature.
- \`502\`/\`504\`: \`{"detail":"...","charged":false}\`: a network skill's upstream (Wikipedia, Wikidata, the page you named) or a partner failed or timed out; you were not charged, retry later (partner calls also name \`partner_id\`, \`service_id\` and \`upstream_status\`).${skills
    .filter((s) => s.readsAssets)
    .map(
      (s) =>
        ` ${s.id} answers \`502\` alike when its data tables (our own static assets) fail to load, \`504\` when they do not load in time.`,
    )
    .join(
      "",
    )} A partner that must be paid before it answers settles your payment first: if it then fails, the answer says \`"charged":true\` with a \`refund\` object (\`status\`, \`amount_usd\`, \`transaction\`): the price less what the partner can still collect from us, sent back to the payer.
- \`502\` with \`"reason":"settlement_unconfirmed"\`: the facilitator did not confirm your payment's settlement. The result is withheld, and that authorization stays reserved (it cannot pay for another call): sign a new one to retry. Should the first transfer land after all (or have landed already), reconciliation refunds it to the payer (less what a partner that served the call is owed) under the \`request_id\` of that answer; if it never does, nothing is charged and that authorization is released once it expires.
- \`503\`: payments temporarily unavailable; retry later. \`facilitator_unavailable\` (with \`Retry-After\`): the payment facilitator gave no answer on your payment; nothing was claimed or charged, send the same payment again. \`payer_check_unavailable\` (with \`Retry-After\`): a contract wallet's retry could not be checked on chain just now; retry with the same payment id. \`payments_unavailable\` (with \`Retry-After\`): our ledger could not record your payment's claim (or your Idempotency-Key); nothing was charged, send the same request again. \`idempotent_result_unavailable\` (with \`Retry-After\`): your stored answer could not be read just now; it is kept, retry with the same key. \`500\` carries a \`request_id\` for support (${cfg.contactEmail}).

## Skills

| skill | endpoint | price | docs |
|---|---|---|---|
${skills.map((s) => `| ${s.id} | POST ${s.endpoint} | ${priceLabel(s)} | ${skillUrls(cfg, s).docs} |`).join("\n")}
`;
}
