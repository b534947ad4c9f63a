/**
 * The copy of a tool's schemas that tools/list publishes, shaped for the converters between MCP
 * and model APIs. Each rule below is there because a real client refused the whole tool list over
 * one schema; the routes still validate every call against the registry's full schema (a refused
 * value is a 422, over MCP an isError result carrying it), and a GET partner tool's dropped
 * `additionalProperties: false` is enforced by tools/call itself (call.ts extraQueryFields), so
 * nothing here widens what a call may carry.
 */
type JsonSchema = Record<string, unknown>;

/** Keywords whose value is one subschema, a map of them, or a list of them (JSON Schema 2020-12 and draft 7). */
const ONE = ["additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems"];
const ONE_MORE = ["contains", "propertyNames", "not", "if", "then", "else", "contentSchema"];
const MAP = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const LIST = ["anyOf", "oneOf", "allOf", "prefixItems"];
/** Where `false` only closes an object: dropped, which opens it in this copy alone. */
const CLOSING = new Set(["additionalProperties", "unevaluatedProperties"]);

const isSchema = (v: unknown): v is JsonSchema => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `schema` and every subschema rewritten by `node` (parents first: a union of numbers is read
 * whole). A boolean subschema becomes an object one: google-genai's MCP conversion (2.25.0,
 * `_filter_to_supported_schema`) calls `.items()` on whatever sits under `additionalProperties` or
 * `items` and throws on `false`, and with it every tool of the server. `true` is `{}`; `false`
 * closing an object is dropped; `false` anywhere else is `{not: {}}`, the same schema as an object.
 */
function rewrite(schema: JsonSchema, node: (s: JsonSchema) => JsonSchema): JsonSchema {
  const out: JsonSchema = { ...node(schema) };
  const sub = (key: string, v: unknown): JsonSchema | undefined => {
    if (v === true) return {};
    if (v === false) return CLOSING.has(key) ? undefined : { not: {} };
    return isSchema(v) ? rewrite(v, node) : undefined;
  };
  for (const key of [...ONE, ...ONE_MORE]) {
    const v = out[key];
    if (v === undefined) continue;
    // Draft 7's tuple `items` is a list of schemas.
    if (Array.isArray(v)) out[key] = v.map((x) => sub(key, x) ?? {});
    else if (typeof v === "boolean" || isSchema(v)) {
      const s = sub(key, v);
      if (s === undefined) delete out[key];
      else out[key] = s;
    }
  }
  for (const key of MAP) {
    const v = out[key];
    if (isSchema(v)) out[key] = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sub(key, x) ?? {}]));
  }
  for (const key of LIST) {
    const v = out[key];
    if (Array.isArray(v)) out[key] = v.map((x) => sub(key, x) ?? {});
  }
  return out;
}

/** The numbers a schema allows when it allows only listed numbers (`const`, `enum`, or a union of them). */
function numericChoices(s: JsonSchema): number[] | undefined {
  const values: unknown[] | undefined =
    "const" in s
      ? [s.const]
      : Array.isArray(s.enum)
        ? s.enum
        : Array.isArray(s.anyOf) &&
            s.anyOf.every((b) => isSchema(b) && ("const" in b || Array.isArray(b.enum)))
          ? s.anyOf.flatMap((b) => numericChoices(b as JsonSchema) ?? [Number.NaN])
          : undefined;
  return values?.length && values.every((v) => typeof v === "number" && !Number.isNaN(v))
    ? (values as number[])
    : undefined;
}

const orList = (values: readonly unknown[]) =>
  values.length === 1 ? String(values[0]) : `${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;

/**
 * A choice of numbers as a plain integer (or number) whose description names the choice. Mastra's
 * and the AI SDK's Gemini conversion turn `anyOf: [{const: 1}, {const: 4}]` into `enum: [1]`, and
 * Gemini's Schema takes only strings in `enum`: the whole request fails (uuid_mint's `version`).
 */
function numbersAsText(s: JsonSchema): JsonSchema {
  const values = numericChoices(s);
  if (!values) return s;
  const { const: _c, enum: _e, anyOf: _a, type: _t, ...rest } = s;
  const hasDefault = typeof rest.default === "number";
  const allowed = `Allowed values: ${orList(values)}${hasDefault ? ` (default ${rest.default})` : ""}.`;
  return {
    ...rest,
    type: values.every(Number.isInteger) ? "integer" : "number",
    description: typeof rest.description === "string" ? `${rest.description} ${allowed}` : allowed,
  };
}

/**
 * A tool's input schema as model APIs accept it: Anthropic's refuses `anyOf`, `oneOf` and `allOf`
 * at the top level of any tool (and with it every request of a client that lists our tools),
 * OpenAI's wants `properties`; no boolean subschema and no numeric choice (see above). The route
 * still enforces the whole schema (ai_detector: text or url, a 422 otherwise), and its field
 * descriptions say so.
 */
export function inputForToolCalling(schema: JsonSchema): JsonSchema {
  const { anyOf: _a, oneOf: _o, allOf: _l, ...rest } = schema;
  return rewrite({ properties: {}, ...rest }, numbersAsText);
}

/**
 * An output schema with no boolean subschema. It only checks `structuredContent` (models do not
 * fill it), so its numeric choices stay; an object it closed is open in this copy, which only
 * loosens that check.
 */
export const outputForToolCalling = (schema: JsonSchema): JsonSchema => rewrite(schema, (s) => s);
