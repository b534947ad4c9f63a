/**
 * The hosted partners of spec 2.8, as the partners publish them. Only their own prices live here;
 * every marketplace price and share is derived (pricing.ts). Names and ids the spec leaves out are
 * neutral ones of our choosing. `base_url` is the default; PARTNER_BASE_URLS overrides it.
 */
export interface PartnerService {
  id: string;
  name: string;
  description: string;
  method: "GET" | "POST";
  path: string;
  partner_price_usd: number;
  test_params?: Record<string, string>;
  test_body?: Record<string, unknown>;
  test_headers?: Record<string, string>;
}

export interface Partner {
  id: string;
  name: string;
  provider: string;
  github: string;
  base_url: string;
  icon: string;
  description: string;
  ownership_wallet: string;
  listing_status: "paid" | "external_x403";
  /** External partners settle with their own facilitator (empty) and name their billing model. */
  external?: { billing_model: string; protocol: string };
  services: PartnerService[];
}

const priceData: Partner = {
  id: "pricefeed",
  name: "PriceFeed",
  provider: "PriceFeed Labs",
  github: "https://github.com/pricefeed-labs/pricefeed",
  base_url: "https://pricefeed.partners.example",
  icon: "📈",
  description:
    "Crypto price data, portfolio and market briefings, x402 receipt verification and an MCP tool endpoint.",
  ownership_wallet: "0x1111111111111111111111111111111111111111",
  listing_status: "paid",
  services: [
    {
      id: "price",
      name: "Spot prices",
      description: "Current prices of the major coins.",
      method: "GET",
      path: "/price",
      partner_price_usd: 0.01,
    },
    {
      id: "price_coin",
      name: "Coin price",
      description: "Current price of one coin, by lowercase symbol (btc, eth, sol).",
      method: "GET",
      path: "/price/{coin}",
      partner_price_usd: 0.02,
      test_params: { coin: "btc" },
    },
    {
      id: "portfolio",
      name: "Portfolio",
      description: "A model portfolio with weights.",
      method: "GET",
      path: "/portfolio",
      partner_price_usd: 0.05,
    },
    {
      id: "opportunities",
      name: "Opportunities",
      description: "Latest market opportunities.",
      method: "GET",
      path: "/opportunities/latest",
      partner_price_usd: 0.03,
    },
    {
      id: "briefing",
      name: "Morning briefing",
      description: "The morning market briefing.",
      method: "GET",
      path: "/briefing/morning",
      partner_price_usd: 0.01,
    },
    {
      id: "research",
      name: "Topic research",
      description: "Research notes on a topic.",
      method: "GET",
      path: "/research/{topic}",
      partner_price_usd: 0.02,
      test_params: { topic: "stablecoins" },
    },
    {
      id: "audit_x402",
      name: "x402 audit",
      description: "An audit of an x402 integration.",
      method: "GET",
      path: "/audit/x402",
      partner_price_usd: 1.0,
    },
    {
      id: "receipt_verify",
      name: "Receipt verification",
      description: "Classifies payment receipts into proof tiers R0 to R5.",
      method: "POST",
      path: "/receipt/verify",
      partner_price_usd: 0.05,
      test_body: {
        claim: "Paid 0.03 USDC for a price quote",
        evidence: ["0x94fdb9151d0145746bd60d03cfc5a83af2a61ca8677c5d26e8abc36aeb06fa7e"],
      },
      test_headers: { "Content-Type": "application/json" },
    },
    {
      id: "mcp_tools",
      name: "MCP tools",
      description: "The MCP tools this partner offers.",
      method: "GET",
      path: "/mcp/tools",
      partner_price_usd: 0.0,
    },
    {
      id: "mcp_call",
      name: "MCP call",
      description: "Calls one MCP tool with arguments.",
      method: "POST",
      path: "/mcp/call",
      partner_price_usd: 0.05,
      test_body: { tool: "price", arguments: { coin: "eth" } },
      test_headers: { "Content-Type": "application/json" },
    },
  ],
};

const json = { "Content-Type": "application/json" };
const utilities: Partner = {
  id: "textkit",
  name: "TextKit",
  provider: "TextKit Tools",
  github: "https://github.com/textkit-tools/textkit",
  base_url: "https://textkit.partners.example",
  icon: "🧰",
  description:
    "Text utilities for agents: redaction, chunking, outlines, CSV normalisation, structuring, tokens, base64, JSON sorting.",
  ownership_wallet: "0x2222222222222222222222222222222222222222",
  listing_status: "paid",
  services: [
    [
      "pii-redactor",
      "PII redactor",
      "Redacts e-mail addresses, phone numbers and names.",
      "/api/redact",
      0.01,
      { text: "Mail ada@example.com or call +1 555 0100." },
    ],
    [
      "rag-chunker",
      "RAG chunker",
      "Splits a document into retrieval chunks.",
      "/api/chunk",
      0.012,
      { text: "First paragraph.\n\nSecond paragraph.", max_tokens: 200 },
    ],
    [
      "heading-outline",
      "Heading outline",
      "Extracts the heading outline of Markdown or HTML.",
      "/api/outline",
      0.01,
      { text: "# Title\n## Part" },
    ],
    [
      "csv-normalizer",
      "CSV normalizer",
      "Normalises delimiters, quoting and headers of a CSV.",
      "/api/normalize-csv",
      0.008,
      { csv: "a;b\n1;2" },
    ],
    [
      "text-structurer",
      "Text structurer",
      "Turns free text into a JSON structure.",
      "/api/structure",
      0.015,
      { text: "Name: Ada. Role: engineer." },
    ],
    [
      "token-counter",
      "Token counter",
      "Counts tokens of a text.",
      "/api/token-count",
      0.005,
      { text: "Hello agents" },
    ],
    [
      "base64",
      "Base64",
      "Encodes or decodes base64.",
      "/api/base64",
      0.003,
      { text: "hello", mode: "encode" },
    ],
    [
      "json-sort",
      "JSON sort",
      "Sorts the keys of a JSON document.",
      "/api/json-sort",
      0.004,
      { data: { b: 1, a: 2 } },
    ],
  ].map(([id, name, description, path, price, body]) => ({
    id: id as string,
    name: name as string,
    description: description as string,
    method: "POST" as const,
    path: path as string,
    partner_price_usd: price as number,
    test_body: body as Record<string, unknown>,
    test_headers: json,
  })),
};

export const RECIPES = ["eval_set", "rag_chunks", "policy_digest", "custom"] as const;
export type Recipe = (typeof RECIPES)[number];
const recipePrices: Record<Recipe, [string, string, number]> = {
  eval_set: ["Eval set", "Builds an evaluation set of questions and answers from raw text.", 0.02],
  rag_chunks: ["RAG chunks", "Refines raw text into retrieval chunks with titles.", 0.02],
  policy_digest: ["Policy digest", "Digests a policy document into obligations and risks.", 0.03],
  custom: ["Custom recipe", "Runs a free-form refinement request on raw text.", 0.02],
};
const refinery: Partner = {
  id: "refinery",
  name: "Data Refinery",
  provider: "Refinery Works",
  github: "https://github.com/refinery-works/refinery",
  base_url: "https://refinery.partners.example",
  icon: "⚗️",
  description:
    "Recipes that refine raw text into evaluation sets, RAG chunks, policy digests or custom outputs.",
  ownership_wallet: "0x3333333333333333333333333333333333333333",
  listing_status: "paid",
  services: RECIPES.map((recipe) => {
    const [name, description, price] = recipePrices[recipe];
    return {
      id: recipe,
      name,
      description,
      method: "POST" as const,
      path: `/api/recipes/${recipe}/run`,
      partner_price_usd: price,
      test_body: {
        raw: "Refunds are due within 30 days of purchase.",
        request: "Summarise the obligations.",
        recipe,
      },
      test_headers: json,
    };
  }),
};

const notify: Partner = {
  id: "notifyhook",
  name: "NotifyHook",
  provider: "NotifyHook",
  github: "https://github.com/notifyhook/notifyhook",
  base_url: "https://notifyhook.partners.example",
  icon: "🔔",
  description:
    "Webhook notifications for watches. Billed by NotifyHook per watch; unpaid calls get a 403 grant challenge.",
  ownership_wallet: "0x4444444444444444444444444444444444444444",
  listing_status: "external_x403",
  external: { billing_model: "notifyhook-per-watch-grant", protocol: "x403" },
  services: [
    {
      id: "notify",
      name: "Notify",
      description: "Sends a notification for a watch. Per-watch prices are published by NotifyHook.",
      method: "POST",
      path: "/v1/hooks",
      partner_price_usd: 0.0,
      test_body: {},
      test_headers: { "X-Watch-Id": "demo-watch", "Content-Type": "application/json" },
    },
  ],
};

export const PARTNERS: readonly Partner[] = [priceData, utilities, refinery, notify];
export const REFINERY_ID = refinery.id;
