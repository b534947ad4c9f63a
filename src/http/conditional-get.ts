import type { Context } from "hono";
import { type PublicConfig, publicConfig } from "../config";
import { sha256Hex } from "../digest";
import type { AppEnv } from "../env";

/**
 * The documents the Worker builds (openapi.json, the catalog, the discovery files) with a strong
 * ETag, so a client or cache that has one asks with If-None-Match and gets an empty 304.
 *
 * Each is rendered and hashed once per isolate and variant, not per request: openapi.json is
 * 117 KB, and rendering plus hashing it per request cost more than the rest of the request. A
 * variant is named by `scope`, the frozen PublicConfig (one object per bindings and origin:
 * config.ts, and partner configuration is read from the same bindings), plus a name (the route,
 * a slug) and `inputs` that change on their own time, compared by identity (the published figures'
 * document, a new object when the figures are recomputed).
 */

const DOCUMENT_CACHE_CONTROL = "public, max-age=300";
export const JSON_TYPE = "application/json";

interface Representation {
  readonly body: string;
  readonly etag: string;
  readonly inputs: readonly unknown[];
  /** Every header of the 200 but Content-Type: what a 304 must repeat (RFC 9110 §15.4.5). */
  readonly validators: Readonly<Record<string, string>>;
  readonly contentType: string;
}

/** A render's answer: the document, or a Response (an error) to pass through. */
type Rendered<T> = T | Response | Promise<T | Response>;

const byScope = new WeakMap<object, Map<string, Representation>>();

export interface DocumentOptions {
  /** The frozen object fixing every configuration the document reads (publicConfig's answer). */
  scope: object;
  /** Which document (and variant within the scope): a route path, plus a slug where there is one. */
  name: string;
  contentType: string;
  /** Values read besides the configuration, compared by identity: a change renders again. */
  inputs?: readonly unknown[];
}

/**
 * Answers a GET/HEAD with the document `render` makes (rendered once per variant), or with 304
 * when If-None-Match names its ETag. `render` may answer a Response instead (a 404, a 503): it is
 * passed through, neither stored nor given a validator, so no 304 ever stands for an error.
 */
export async function serveDocument(
  c: Context,
  options: DocumentOptions,
  render: () => Rendered<string>,
): Promise<Response> {
  const inputs = options.inputs ?? [];
  let variants = byScope.get(options.scope);
  let doc = variants?.get(options.name);
  if (!doc || !sameInputs(doc.inputs, inputs)) {
    const body = await render();
    if (body instanceof Response) return body;
    const etag = `"${(await sha256Hex(body)).slice(0, 32)}"`;
    doc = {
      body,
      etag,
      inputs,
      contentType: options.contentType,
      validators: { "cache-control": DOCUMENT_CACHE_CONTROL, etag },
    };
    if (!variants) {
      variants = new Map();
      byScope.set(options.scope, variants);
    }
    variants.set(options.name, doc);
  }
  if (noneMatch(c.req.header("if-none-match"), doc.etag)) {
    return c.body(null, 304, doc.validators);
  }
  return c.body(doc.body, 200, { ...doc.validators, "content-type": doc.contentType });
}

/**
 * serveDocument scoped by the request's configuration (publicConfig: one frozen object per
 * bindings and origin), which `render` is handed.
 */
export function serveConfigured(
  c: Context<AppEnv>,
  name: string,
  contentType: string,
  render: (cfg: PublicConfig) => Rendered<string>,
  inputs?: readonly unknown[],
): Promise<Response> {
  const cfg = publicConfig(c.env, c.req.url);
  return serveDocument(c, { scope: cfg, name, contentType, inputs }, () => render(cfg));
}

/** A JSON document (`make`'s value, stringified; a Response passed through), as serveConfigured. */
export const serveJson = (
  c: Context<AppEnv>,
  name: string,
  make: (cfg: PublicConfig) => unknown,
  { contentType = JSON_TYPE, inputs }: { contentType?: string; inputs?: readonly unknown[] } = {},
): Promise<Response> =>
  serveConfigured(
    c,
    name,
    contentType,
    (cfg) => {
      const value = make(cfg);
      return value instanceof Response ? value : JSON.stringify(value);
    },
    inputs,
  );

const sameInputs = (a: readonly unknown[], b: readonly unknown[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * Whether If-None-Match's condition is false for the current ETag (so the answer is 304): `*`,
 * or a listed tag equal by the weak comparison (RFC 9110 §13.1.2: W/ ignored, opaque tags equal).
 * Tags are matched as quoted strings, not split on commas: a comma is a legal etag character.
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  for (const [tag] of header.matchAll(/(?:W\/)?"[^"]*"/g)) {
    if (tag.replace(/^W\//, "") === etag) return true;
  }
  return false;
}
