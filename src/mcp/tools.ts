import type { Tool } from "@modelcontextprotocol/server";
import type { PublicConfig } from "../config";
import { formatUsd, microsToUsd } from "../money";
import type { PricingConfig } from "../partners/config";
import { REFINERY_ID } from "../partners/data";
import { PATH_PARAM } from "../partners/upstream";
import { type Sellable, sellables } from "../payments/sellables";
import { outputJsonSchema, skillById } from "../skills/registry";
import { BAZAAR_META, bazaarDeclaration } from "./bazaar";
import { IDEMPOTENCY_KEY_META, PAYMENT_META } from "./limits";
import { inputForToolCalling, outputForToolCalling } from "./tool-calling-schema";

type JsonSchema = Record<string, unknown>;

/** One MCP tool and the HTTP route of the app that sells it (the only place it runs and is paid). */
export interface McpTool {
  tool: Tool;
  method: "GET" | "POST";
  path: string;
  /** Arguments become the JSON body (skills, POST services) or the query string (GET services). */
  argumentsIn: "body" | "query";
  /** Older names tools/call still answers to (not listed). */
  aliases?: string[];
  /** The skill whose card credits pay this tool; none for partner and refinery tools (x402 only). */
  creditSkill?: string;
}

const withoutDialect = ({ $schema: _drop, ...schema }: JsonSchema) => schema;

/**
 * The fields of a partner's sample body, each typed as the sample is, nested schemas included:
 * OpenAI refuses an array without `items` or an object without `properties` at any depth.
 */
function sampleProperties(sample: Record<string, unknown> | undefined): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(sample ?? {}).map(([k, v]) => [k, sampleSchema(v)]));
}

function sampleSchema(v: unknown): JsonSchema {
  if (Array.isArray(v)) return { type: "array", items: v.length ? sampleSchema(v[0]) : {} };
  if (v === null) return {};
  if (typeof v === "object")
    return { type: "object", properties: sampleProperties(v as Record<string, unknown>) };
  return { type: typeof v as "string" | "number" | "boolean" };
}

/**
 * A partner service's body fields. A refinery recipe's `recipe`, if sent, must be the recipe the
 * tool runs: the route answers any other value 422 (partner-calls.ts), once the payment is verified,
 * so the schema says so as discovery's does (partners/discovery.ts), and leaves it optional.
 */
function bodyProperties(partnerId: string, serviceId: string, sample: Record<string, unknown> | undefined) {
  const properties = sampleProperties(sample);
  if (partnerId === REFINERY_ID && properties.recipe) {
    properties.recipe = { ...properties.recipe, const: serviceId };
  }
  return properties;
}

/**
 * What a paid tool's `structuredContent` can be. The official MCP client validates it against
 * `outputSchema` even on an `isError` result, so the schema states all three shapes (disjoint
 * `required` sets keep the success branch strict): the result, the x402 PaymentRequired of an
 * unpaid call, and a `{detail}` error (the HTTP error body).
 */
const PAYMENT_REQUIRED_SCHEMA: JsonSchema = {
  type: "object",
  required: ["x402Version", "accepts"],
  properties: { x402Version: { type: "integer" }, accepts: { type: "array" }, error: { type: "string" } },
};
const ERROR_SCHEMA: JsonSchema = { type: "object", required: ["detail"], properties: { detail: {} } };
export const toolOutputSchema = (success: JsonSchema) => ({
  type: "object" as const,
  anyOf: [outputForToolCalling(withoutDialect(success)), PAYMENT_REQUIRED_SCHEMA, ERROR_SCHEMA],
});

/**
 * `<partner>__<service>` for partner services. MCP allows a dot, but several hosts (Claude
 * Desktop, OpenAI's tool calling, Copilot) accept only ^[a-zA-Z0-9_-]{1,64}$ and refuse the whole
 * server over one such name. Ids are [a-z0-9_-], so the double underscore parts them unambiguously.
 */
export const partnerToolName = (partnerId: string, serviceId: string) => `${partnerId}__${serviceId}`;

function priceText(item: Sellable) {
  if (item.priceForBody) return `up to ${formatUsd(microsToUsd(item.priceMicros))} per call (by recipe)`;
  return `${formatUsd(microsToUsd(item.priceMicros))} per call`;
}

const X402_NOTE = `Paid: send the x402 v2 payment in params._meta["${PAYMENT_META}"] (an unpaid call returns the PaymentRequired)`;
/** A card-credit call has no payment to carry its retry key: it goes in the call's own _meta (mcp/call.ts). */
const PAYMENT_NOTE = `${X402_NOTE}, or connect with Authorization: Bearer mk_... card credits (a retry with the same params._meta["${IDEMPOTENCY_KEY_META}"] is not charged again).`;
/** Partner services and the refinery recipes take x402 only: their routes have no card-credit step. */
const PARTNER_PAYMENT_NOTE = `${X402_NOTE}; card credits do not pay for partner services.`;
/** As the errors guide says it (discovery/guides.ts): a partner paid first is charged, then refunded. */
const PARTNER_CHARGE =
  "not charged when the partner fails, except a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says charged: true with a refund (the price less what the partner can still collect).";

function fromSellable(item: Sellable): McpTool {
  const price = priceText(item);
  if (item.partner) {
    const { partner, service } = item.partner;
    const params = [...service.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
    const inputSchema: JsonSchema =
      service.method === "GET"
        ? {
            // Not closed (`additionalProperties: false`): google-genai's MCP conversion throws on
            // it (tool-calling-schema.ts). The route reads these parameters and nothing else.
            type: "object",
            properties: Object.fromEntries(
              params.map((p) => [
                p,
                {
                  type: "string",
                  pattern: PATH_PARAM.source,
                  ...(service.test_params?.[p] ? { default: service.test_params[p] } : {}),
                },
              ]),
            ),
          }
        : {
            type: "object",
            description: "The JSON body sent to the partner.",
            // A `properties` on every object schema: OpenAI's function calling refuses one without
            // it (and with it the whole tool list); the sample's fields, typed, others allowed.
            properties: bodyProperties(partner.id, service.id, service.test_body),
            ...(service.test_body ? { examples: [service.test_body] } : {}),
          };
    return {
      tool: {
        name: partnerToolName(partner.id, service.id),
        title: `${partner.name}: ${service.name}`,
        description: `${item.description} Price: ${price}; ${PARTNER_CHARGE} ${PARTNER_PAYMENT_NOTE}`,
        inputSchema: inputForToolCalling(inputSchema) as Tool["inputSchema"],
        // A GET only reads the partner's data: not destructive (the spec's default says it may be).
        // A POST may act on the partner's side: the defaults stand. Every call is paid: never idempotent.
        annotations: {
          openWorldHint: true,
          idempotentHint: false,
          ...(service.method === "GET" ? { destructiveHint: false } : {}),
        },
      },
      method: service.method,
      path: item.path,
      argumentsIn: service.method === "GET" ? "query" : "body",
      // The dotted name these tools had before: clients that stored it keep working.
      aliases: [`${partner.id}.${service.id}`],
    };
  }
  const skill = skillById(item.resource);
  const example = item.example;
  return {
    tool: {
      name: item.resource,
      title: skill?.name ?? "Refinery recipes",
      description: skill
        ? `${item.description} Price: ${price}; charged only for a successful result. ${PAYMENT_NOTE}`
        : `${item.description} Price: ${price}; ${PARTNER_CHARGE} ${PARTNER_PAYMENT_NOTE}`,
      inputSchema: inputForToolCalling(
        withoutDialect(example?.inputSchema ?? { type: "object" }),
      ) as Tool["inputSchema"],
      ...(skill ? { outputSchema: toolOutputSchema(outputJsonSchema(skill)) } : {}),
      // Not read-only: every call spends the caller's money (or a card credit). Not destructive
      // (the spec's default when not read-only): a skill changes nothing but that. Not
      // idempotent: a second call is charged again (and uuid_mint answers anew).
      annotations: {
        openWorldHint: skill ? skill.kind !== "utility" : true,
        readOnlyHint: false,
        destructiveHint: !skill,
        idempotentHint: false,
      },
      // The x402 bazaar's MCP discovery declaration, for indexers that read tools/list.
      ...(example
        ? {
            _meta: {
              [BAZAAR_META]: bazaarDeclaration({
                toolName: item.resource,
                description: item.description,
                transport: "streamable-http",
                inputSchema: withoutDialect(example.inputSchema),
                example: example.input,
                output: { example: example.output },
              }),
            },
          }
        : {}),
    },
    method: "POST",
    path: item.path,
    argumentsIn: "body",
    ...(skill ? { creditSkill: skill.id } : {}),
  };
}

/**
 * Every tool, from the same list the x402 gate sells (sellables.ts: the registry's skills, the
 * refinery skill and the paid partner services at their listing price). Free and external
 * partner services are not sold per call, so they are not tools.
 */
export function mcpTools(cfg: PublicConfig, pc: PricingConfig | undefined): readonly McpTool[] {
  const list = sellables(cfg, pc);
  let tools = toolsOf.get(list);
  if (!tools) {
    tools = Object.freeze(list.map(fromSellable));
    toolsOf.set(list, tools);
  }
  return tools;
}
/** Tools per sellables list (itself built once per isolate and multiplier). */
const toolsOf = new WeakMap<readonly Sellable[], readonly McpTool[]>();
