import { type Partner, type PartnerService, REFINERY_ID } from "./data";
import { PATH_PARAM } from "./upstream";

/**
 * What a paid partner try route takes, for the x402 Bazaar declaration its 402 carries (declared
 * with @x402/extensions in payments/x402-gate.ts; plain data here, so the listing never loads the
 * x402 stack). Derived from the listing alone, never written per partner: the try URL's query
 * carries the values of the upstream path's `{name}` segments (upstream.ts; the listing's
 * test_params is the sample, and the value used when none is sent), and a POST's JSON body is
 * passed on as sent (test_body is the sample, sent when no body is; its schema is the sample's
 * shape). The listing has no sample answers, so nothing is said about the output.
 */
export interface TryInput {
  /** The try URL's query parameters: a sample of each, and their schema (`properties`, `required`). */
  query: {
    example: Record<string, string>;
    schema: { properties: Record<string, unknown>; required?: string[] };
  };
  /** Only for a POST: the JSON body, a sample and its schema. */
  body?: { example: Record<string, unknown>; schema: Record<string, unknown> };
}

export function tryInput(partner: Partner, service: PartnerService, method: "GET" | "POST"): TryInput {
  const example: Record<string, string> = {};
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [, name = ""] of service.path.matchAll(/\{(\w+)\}/g)) {
    const sample = service.test_params?.[name];
    if (sample === undefined) required.push(name);
    else example[name] = sample;
    properties[name] = {
      type: "string",
      pattern: PATH_PARAM.source,
      description: `The {${name}} of the partner's path ${service.path}${sample === undefined ? "" : ` (default ${sample})`}`,
    };
  }
  const query = { example, schema: { properties, ...(required.length ? { required } : {}) } };
  if (method === "GET") return { query };
  if (service.method === "GET") {
    // The route reads a POST body (a JSON object, or none) but this service takes none upstream.
    return {
      query,
      body: {
        example: {},
        schema: { type: "object", description: "Not sent on: this partner service takes no body." },
      },
    };
  }
  const sample = service.test_body ?? {};
  const fields = shapeOf(sample) as { properties?: Record<string, Record<string, unknown>> };
  // A refinery recipe's `recipe`, if sent, is the recipe in the path (partner-calls.ts: 422 otherwise).
  const recipe = fields.properties?.recipe;
  if (partner.id === REFINERY_ID && recipe) recipe.const = service.id;
  return {
    query,
    body: {
      example: sample,
      schema: {
        ...fields,
        description:
          "The partner service's JSON body, passed on as sent; without one, the sample is sent. Its fields are the sample's.",
      },
    },
  };
}

/**
 * The JSON Schema of a sample's shape: the type of each top-level field (nested values by type
 * only: a sample's nested keys, such as json-sort's data, are content, not fields). Nothing is
 * required and other fields are allowed: the partner decides, the sample only shows one call.
 */
function shapeOf(value: unknown, depth = 0): Record<string, unknown> {
  if (value === null) return { type: "null" };
  if (Array.isArray(value)) return { type: "array" };
  if (typeof value === "object") {
    if (depth > 0) return { type: "object" };
    const properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v, depth + 1)]));
    return { type: "object", properties };
  }
  if (typeof value === "string") return { type: "string" };
  if (typeof value === "number") return { type: "number" };
  if (typeof value === "boolean") return { type: "boolean" };
  return {};
}
