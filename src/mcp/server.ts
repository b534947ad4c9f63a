import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
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
 * its `code` and `message`, and its McpError writes "MCP error <code>: " into the message (the
 * client's McpError adds it again: "MCP error -32602: MCP error -32602: Unknown tool…").
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
 * validator replaces the SDK's default ajv, which compiles schemas with eval (forbidden in Workers).
 */
/**
 * The SDK parses a request with the handler's schema before its own checks and turns a failed
 * parse into -32603 (internal error). Handlers that take params are registered with a schema that
 * accepts any params and parse them here, so bad params are -32602 (invalid params) as in JSON-RPC.
 */
function parseParams<T extends z.ZodType>(schema: T, request: unknown): z.infer<T> {
  const parsed = schema.safeParse(request);
  if (!parsed.success) {
    throw new RpcFailure(
      ErrorCode.InvalidParams,
      `Invalid params: ${z.prettifyError(parsed.error as z.ZodError)}`,
    );
  }
  return parsed.data;
}
const anyParams = <M extends string>(method: M) =>
  z.object({ method: z.literal(method), params: z.unknown().optional() });
// Built once: a server is made per request, and building zod schemas showed in its profile.
const TOOLS_CALL = anyParams("tools/call");
const RESOURCES_READ = anyParams("resources/read");
const TOOLS_LIST = anyParams("tools/list");
const RESOURCES_LIST = anyParams("resources/list");
const RESOURCE_TEMPLATES_LIST = anyParams("resources/templates/list");

/** The lists come whole, in one page: any cursor is one this server never gave (-32602, as the spec asks). */
function onePage(schema: z.ZodType<{ params?: { cursor?: string } }>, raw: unknown) {
  const cursor = parseParams(schema, raw).params?.cursor;
  if (cursor !== undefined)
    throw new RpcFailure(ErrorCode.InvalidParams, `Invalid params: unknown cursor ${cursor}`);
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

  server.setRequestHandler(TOOLS_LIST, (raw) => {
    onePage(ListToolsRequestSchema, raw);
    return { tools: ctx.tools.map((t) => t.tool) };
  });

  server.setRequestHandler(TOOLS_CALL, (raw) => {
    const request = parseParams(CallToolRequestSchema, raw);
    const tool = byName.get(request.params.name);
    if (!tool) {
      throw new RpcFailure(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}. See tools/list.`);
    }
    return callTool(tool, request.params.arguments ?? {}, request.params._meta, ctx);
  });

  server.setRequestHandler(RESOURCES_LIST, (raw) => {
    onePage(ListResourcesRequestSchema, raw);
    return { resources: resourceList(skills) };
  });

  // Part of the resources capability declared above: none offered, but the method answers.
  server.setRequestHandler(RESOURCE_TEMPLATES_LIST, (raw) => {
    onePage(ListResourceTemplatesRequestSchema, raw);
    return { resourceTemplates: [] };
  });

  server.setRequestHandler(RESOURCES_READ, async (raw) => {
    const request = parseParams(ReadResourceRequestSchema, raw);
    const uri = request.params.uri;
    if (uri === CATALOG_URI) {
      const res = await ctx.dispatch(new Request(new URL("/api/catalog", ctx.origin)));
      return { contents: [{ uri, mimeType: "application/json", text: await res.text() }] };
    }
    const skill = skills.find((s) => docsUri(s) === uri);
    // -32002: "Resource not found" in the MCP specification.
    if (!skill) throw new RpcFailure(-32002, `Unknown resource: ${uri}. See resources/list.`);
    return {
      contents: [
        { uri, mimeType: "text/markdown", text: skillDocs(skill, byName.get(skill.id), ctx.baseUrl) },
      ],
    };
  });

  return server;
}
