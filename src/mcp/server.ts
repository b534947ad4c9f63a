import {
  type CallToolRequest,
  type PaginatedRequest,
  ProtocolErrorCode,
  type ReadResourceRequest,
  Server,
  specTypeSchemas,
} from "@modelcontextprotocol/server";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/server/validators/cf-worker";
import * as z from "zod";
import { INTERFACE_VERSION } from "../config";
import { skills } from "../skills/registry";
import { type CallContext, callTool } from "./call";
import {
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  RECEIPT_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "./limits";
import { CATALOG_URI, docsUri, resourceList, skillDocs } from "./resources";
import type { McpTool } from "./tools";

export const SERVER_NAME = "agent-skills-marketplace";
const UNKNOWN_RESOURCE = "Unknown resource: ";

/**
 * A resources/read miss as clients of 2024-11-05 … 2025-11-25 got it: -32002, which the SDK now
 * writes -32602 in every era. Any other message is returned as it is.
 */
export function asLegacyResourceNotFound<T>(message: T): T {
  const error = (message as { error?: { code?: unknown; message?: unknown } }).error;
  if (error?.code !== -32602 || !String(error.message).startsWith(UNKNOWN_RESOURCE)) return message;
  return { ...message, error: { ...error, code: -32002 } };
}

export interface McpServerContext extends CallContext {
  tools: readonly McpTool[];
  baseUrl: string;
  partners: boolean;
}

/**
 * The initialize instructions; `partners`: whether the partners are listed (their tools are in
 * tools/list). Without them the partner sentences are left out.
 */
const instructions = (freeBeta: boolean | undefined, partners: boolean) =>
  `${freeBeta ? `Free beta: skill tools answer without payment for now${partners ? "; partner services and refinery recipes are still paid" : ""}. ` : ""}Every tool is one paid skill${partners ? " or partner service" : ""}; tools/list and resources are free. Pay a call with x402 v2: call without payment, take the PaymentRequired from the error result, sign it and retry with params._meta["${PAYMENT_META}"] (a call you stop waiting for still runs and is charged if it succeeds: to get its result back, put a payment-identifier id in the extensions of the payment and resend with a fresh signature and the same id); the settlement comes back in _meta["${PAYMENT_RESPONSE_META}"] (x402 v1 payers such as x402-mcp: sign a requirement of the error result's second text item and send the X-PAYMENT header value in params._meta["${V1_PAYMENT_META}"]; the settlement comes back in _meta["${V1_PAYMENT_RESPONSE_META}"] too; a v1 call cannot be fetched again, as payment-identifier is v2 only and an Idempotency-Key works with a card key only: if its answer is lost it is still charged, and the same v1 authorization sent again is refused, as payment_authorization_reused or, by the facilitator, invalid_exact_evm_transaction_simulation_failed), and every paid result carries its signed receipt in _meta["${RECEIPT_META}"]. Or connect with the header Authorization: Bearer mk_... to pay skills with card credits: a key pays its own skill's calls, and every other call on that connection is paid with x402 as above${partners ? " (partner services and refinery recipes take x402 only)" : ""}. An error result with reason settlement_unconfirmed carries the offer too, but your payment may still land: it is then refunded${partners ? " (less the share owed to a partner that served the call)" : ""}; check its transaction before you pay again. You are charged only for a successful result${partners ? ", except by a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says charged: true with a refund (the price less what the partner can still collect)" : ""}.`;

/**
 * A JSON-RPC error of a handler, its message sent as written. The SDK answers a thrown error with
 * its `code` and `message` (the 1.x SDK's McpError wrote "MCP error <code>: " into the message, and
 * its client added it again: "MCP error -32602: MCP error -32602: Unknown tool…").
 */
class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One low-level MCP server per HTTP request (stateless): the tool list and schemas already exist
 * as JSON Schema in the registry, so no zod-to-schema layer (McpServer) is needed. The cfworker
 * validator is named rather than left to the SDK's export conditions (workerd picks it, Node picks
 * ajv, which compiles schemas with eval: forbidden in Workers).
 */
/**
 * A spec method's handler registered with `(method, handler)` gets its request parsed by the SDK,
 * and a failed parse answered as "Invalid <method> request: <zod issues as JSON>". Handlers are
 * registered with a schema that accepts any params and parse them here with the spec's schema, so
 * bad params are -32602 "Invalid params: <issues as a reader writes them>", as they always were
 * (tools/call's own envelope is checked by the SDK first: "Invalid tools/call request: …").
 */
function parseParams<T>(schema: z.ZodType<T>, method: string, params: unknown): T {
  const parsed = schema.safeParse({ method, ...(params === undefined ? {} : { params }) });
  if (!parsed.success) {
    throw new RpcFailure(ProtocolErrorCode.InvalidParams, `Invalid params: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
// The SDK's spec schemas are zod objects typed as Standard Schemas only.
const spec = <T>(name: keyof typeof specTypeSchemas) => specTypeSchemas[name] as unknown as z.ZodType<T>;
const CALL_TOOL = spec<CallToolRequest>("CallToolRequest");
const READ_RESOURCE = spec<ReadResourceRequest>("ReadResourceRequest");
const PAGINATED = {
  "tools/list": spec<PaginatedRequest>("ListToolsRequest"),
  "resources/list": spec<PaginatedRequest>("ListResourcesRequest"),
  "resources/templates/list": spec<PaginatedRequest>("ListResourceTemplatesRequest"),
};
const ANY_PARAMS = { params: z.unknown() };

/** The lists come whole, in one page: any cursor is one this server never gave (-32602, as the spec asks). */
function onePage(method: keyof typeof PAGINATED, params: unknown) {
  const cursor = parseParams(PAGINATED[method], method, params).params?.cursor;
  if (cursor !== undefined)
    throw new RpcFailure(ProtocolErrorCode.InvalidParams, `Invalid params: unknown cursor ${cursor}`);
}

export function createMcpServer(ctx: McpServerContext): Server {
  const server = new Server(
    { name: SERVER_NAME, title: "Agent Skills Marketplace", version: INTERFACE_VERSION },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: instructions(ctx.freeBeta, ctx.partners),
      jsonSchemaValidator: new CfWorkerJsonSchemaValidator(),
    },
  );
  const byName = new Map(ctx.tools.map((t) => [t.tool.name, t]));
  for (const t of ctx.tools) for (const alias of t.aliases ?? []) byName.set(alias, t);

  server.setRequestHandler("tools/list", ANY_PARAMS, (params) => {
    onePage("tools/list", params);
    return { tools: ctx.tools.map((t) => t.tool) };
  });

  server.setRequestHandler("tools/call", ANY_PARAMS, (params) => {
    const request = parseParams(CALL_TOOL, "tools/call", params);
    const tool = byName.get(request.params.name);
    if (!tool) {
      throw new RpcFailure(
        ProtocolErrorCode.InvalidParams,
        `Unknown tool: ${request.params.name}. See tools/list.`,
      );
    }
    return callTool(tool, request.params.arguments ?? {}, request.params._meta, ctx);
  });

  server.setRequestHandler("resources/list", ANY_PARAMS, (params) => {
    onePage("resources/list", params);
    return { resources: resourceList(skills) };
  });

  // Part of the resources capability declared above: none offered, but the method answers.
  server.setRequestHandler("resources/templates/list", ANY_PARAMS, (params) => {
    onePage("resources/templates/list", params);
    return { resourceTemplates: [] };
  });

  server.setRequestHandler("resources/read", ANY_PARAMS, async (params) => {
    const request = parseParams(READ_RESOURCE, "resources/read", params);
    const uri = request.params.uri;
    if (uri === CATALOG_URI) {
      const res = await ctx.dispatch(new Request(new URL("/api/catalog", ctx.origin)));
      return { contents: [{ uri, mimeType: "application/json", text: await res.text() }] };
    }
    const skill = skills.find((s) => docsUri(s) === uri);
    // -32002 "Resource not found" up to 2025-11-25; the SDK sends -32602 (2026-07-28's code) to
    // every era, and handle.ts gives a legacy client its -32002 back (asLegacyResourceNotFound).
    if (!skill) throw new RpcFailure(-32002, `${UNKNOWN_RESOURCE}${uri}. See resources/list.`);
    return {
      contents: [
        { uri, mimeType: "text/markdown", text: skillDocs(skill, byName.get(skill.id), ctx.baseUrl) },
      ],
    };
  });

  return server;
}
