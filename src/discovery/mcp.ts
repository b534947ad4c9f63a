import type { PublicConfig } from "../config";
import {
  MCP_MAX_BODY_BYTES,
  MCP_PATH,
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  RECEIPT_META,
  REQUEST_ID_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "../mcp/limits";

/** What every discovery document says about the MCP endpoint (one wording for all of them). */
export const mcpUrl = (cfg: PublicConfig) => `${cfg.baseUrl}${MCP_PATH}`;

/**
 * `partners`: whether discovery lists the partners (listedPartnerPricing); without them the
 * partner sentences are left out, so no document describes tools that tools/list does not have.
 */
export const mcpSummary = (partners: boolean) =>
  `MCP server (Streamable HTTP, stateless, JSON responses): ${partners ? "every skill and paid partner service is a tool (skill id, or <partner>__<service>)" : "every skill is a tool (skill id)"}. tools/list and resources are free. A tools/call without payment returns isError with the x402 v2 PaymentRequired as structuredContent; sign it and retry with params._meta["${PAYMENT_META}"]; the result carries _meta["${PAYMENT_RESPONSE_META}"]. An x402 v1 payer (Vercel's x402-mcp) signs the v1 offer in content[1] and sends its X-PAYMENT value in params._meta["${V1_PAYMENT_META}"]; the result carries _meta["${V1_PAYMENT_RESPONSE_META}"]. Skills can also be paid from card credits: connect with Authorization: Bearer mk_...${partners ? " (partner services and refinery recipes take x402 only)" : ""}; a key pays only its own skill's calls, and any other call on that connection is paid with x402 (unpaid, it returns the offer). A call is charged only for a result${partners ? ", except a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says charged: true with a refund" : ""}.`;

/**
 * A generic MCP client configuration (the `mcpServers` shape most clients read). `type: "http"` is
 * the value Claude Code's and VS Code's configurations document for a remote Streamable HTTP server.
 */
export function mcpClientConfig(cfg: PublicConfig, withCardKey = false) {
  return {
    mcpServers: {
      "agent-skills": {
        type: "http",
        url: mcpUrl(cfg),
        ...(withCardKey ? { headers: { Authorization: "Bearer mk_your_key" } } : {}),
      },
    },
  };
}

/** The agents.json entry. */
export function mcpManifestEntry(cfg: PublicConfig, partners: boolean) {
  return {
    url: mcpUrl(cfg),
    transport: "streamable-http",
    stateless: true,
    max_body_bytes: MCP_MAX_BODY_BYTES,
    payment: {
      // The keys tools/call reads and writes (mcp/call.ts), so they cannot drift from what it does.
      x402: { request_meta: PAYMENT_META, response_meta: PAYMENT_RESPONSE_META, version: 2 },
      // x402 v1 payers (Vercel's x402-mcp): the v1 offer is an unpaid result's content[1].
      x402_v1: {
        request_meta: V1_PAYMENT_META,
        response_meta: V1_PAYMENT_RESPONSE_META,
        version: 1,
        offer: "content[1]",
      },
      // Every paid result, x402 or card credits: the signed receipt and the request id it names.
      receipt_meta: RECEIPT_META,
      request_id_meta: REQUEST_ID_META,
      // Card credits pay skill tools only; partner and refinery routes have no card-credit step.
      card_credits: { header: "Authorization: Bearer mk_...", tools: "skills only" },
    },
    docs: `${cfg.baseUrl}/docs/mcp`,
    description: mcpSummary(partners),
  };
}
