import type { MiddlewareHandler } from "hono";
import * as z from "zod";
import type { PublicConfig } from "../config";
import type { AppEnv } from "../env";
import { type JsonBounds, jsonBody } from "../http/json-text";
import { queryParams } from "../http/validation";
import type { partnerPricing } from "../partners/pricing";
import { withoutDialect } from "../skills/schema-docs";

/**
 * One API route other than a skill, declared once: the route module mounts it (`route`, and
 * `validate` built from the same zod schemas) and openapi.json describes it from the same object,
 * so the document cannot drift from what the route accepts.
 */

export type Json = Record<string, unknown>;

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (description: string, schema: Json = { type: "object" }, example?: unknown) => ({
  description,
  content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } },
});
export const text = (description: string, mime: string) => ({
  description,
  content: { [mime]: { schema: { type: "string" } } },
});
export const VALIDATION = json("Validation error (FastAPI shape)", ref("HTTPValidationError"));
export const ERROR = (description: string) => json(description, ref("Error"));
/**
 * Routes that take no input still answer client errors every client should expect: 405 (with
 * Allow) for another method, 413 for a body over 5 MiB, 429 when rate limited.
 */
export const CLIENT_ERROR = ERROR(
  "Client error: wrong method (405 with Allow), body too large (413), rate limited",
);

/**
 * What a document may depend on besides the route itself: this deployment and its partner prices
 * (none while the partners are left out, and with them the routes tagged "partners").
 */
export interface DocContext {
  cfg: PublicConfig;
  partner: ReturnType<typeof partnerPricing> | undefined;
}

export interface OperationSpec {
  method: "get" | "post";
  /** As the document writes it (`{partner_id}`); path parameters are read from it. */
  path: string;
  /** Hono's path when it is not the document's with `:name` (a regex parameter). */
  route?: string;
  operationId: string;
  summary: string | ((d: DocContext) => string);
  tags: string[];
  /** Omitted: none (`[]`), the route is public or paid per call. */
  security?: Json[];
  headers?: Json[];
  body?: z.ZodType;
  /** The body keeps integers past 2^53 as written (a payload passed on to json_sort/json_flatten). */
  exactIntegers?: boolean;
  /** The body's JSON depth and container bounds, when not a plain body's (json-text.ts BODY_BOUNDS). */
  bodyBounds?: JsonBounds;
  example?: unknown;
  query?: z.ZodObject;
  /** Parameters the route checks itself (a try call's path values): described, not validated here. */
  parameters?: Json[];
  /** A request body the route passes on as it is (a partner's JSON): described, not validated here. */
  passedBody?: Json;
  responses: Json;
  /** Extension fields (x-x402, x-payment-info) that depend on the deployment. */
  extensions?: (d: DocContext) => Json;
}

/** The validator a spec's schemas call for, typed so the handler reads `c.req.valid(...)` without a cast. */
type ValidatorOf<S extends OperationSpec> = S extends { body: infer B extends z.ZodType }
  ? ReturnType<typeof jsonBody<B>>
  : S extends { query: infer Q extends z.ZodObject }
    ? ReturnType<typeof queryParams<Q>>
    : MiddlewareHandler<AppEnv>;

/** `/a/{x}/b` as Hono writes it, `/a/:x/b`, so handlers see their path parameters typed. */
type HonoPath<P extends string> = P extends `${infer A}{${infer N}}${infer R}`
  ? `${A}:${N}${HonoPath<R>}`
  : P;

export type Operation<S extends OperationSpec = OperationSpec> = S & {
  /** The path in Hono's syntax (`:partner_id`). */
  route: S["route"] extends string ? S["route"] : HonoPath<S["path"]>;
  validate: ValidatorOf<S>;
};

const pass: MiddlewareHandler<AppEnv> = (_c, next) => next();

export function operation<const S extends OperationSpec>(spec: S): Operation<S> {
  // One validator per route keeps the 422 order simple; no route takes both today.
  if (spec.body && spec.query) throw new Error(`${spec.operationId}: a body and a query schema together`);
  const validate = spec.body
    ? jsonBody(spec.body, { exactIntegers: spec.exactIntegers, bounds: spec.bodyBounds })
    : spec.query
      ? queryParams(spec.query)
      : pass;
  // The types above restate what these lines choose; TypeScript cannot follow a runtime choice.
  return {
    ...spec,
    route: spec.route ?? spec.path.replace(/\{(\w+)\}/g, ":$1"),
    validate,
  } as Operation<S>;
}

function schemaOf(schema: z.ZodType): Json {
  return withoutDialect(z.toJSONSchema(schema, { io: "input" }) as Json);
}

/** Query parameters from a zod object, one OpenAPI parameter per property. */
function queryParameters(schema: z.ZodObject) {
  const js = schemaOf(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({
    name,
    in: "query",
    required: (js.required ?? []).includes(name),
    schema: s,
  }));
}

/** The OpenAPI operation object of a declared route. */
export function openApiOperation(op: OperationSpec, d: DocContext): Json {
  const pathParams = [...op.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const parameters = [
    ...pathParams,
    ...(op.headers ?? []),
    ...(op.query ? queryParameters(op.query) : []),
    ...(op.parameters ?? []),
  ];
  const media = op.body && {
    schema: schemaOf(op.body),
    ...(op.example === undefined ? {} : { example: op.example }),
  };
  const passed = op.passedBody && {
    required: false,
    content: { "application/json": { schema: op.passedBody } },
  };
  return {
    security: op.security ?? [],
    operationId: op.operationId,
    summary: typeof op.summary === "function" ? op.summary(d) : op.summary,
    tags: op.tags,
    ...(parameters.length ? { parameters } : {}),
    ...(media ? { requestBody: { required: true, content: { "application/json": media } } } : {}),
    ...(passed ? { requestBody: passed } : {}),
    responses: op.responses,
    ...op.extensions?.(d),
  };
}
