import * as z from "zod";
import { usdToMicros } from "../money";
import { aiDetector } from "./ai-detector";
import { htmlClean } from "./html-clean";
import { jsonFlatten } from "./json-flatten";
import { jsonSchemaValidate } from "./json-schema-validate";
import { jsonSort } from "./json-sort";
import { keywordExtract } from "./keyword-extract";
import { osintGraph } from "./osint-graph";
import { research } from "./research";
import { seo } from "./seo";
import { sha256 } from "./sha256";
import { slugify } from "./slugify";
import { textDiff } from "./text-diff";
import { tokenCount } from "./token-count";
import type { Skill, SkillSpec } from "./types";
import { urlNormalize } from "./url-normalize";
import { uuidMint } from "./uuid-mint";

/** The one source of truth: every route, price, schema, example and document derives from this. */
const specs: SkillSpec[] = [
  osintGraph,
  research,
  seo,
  aiDetector,
  jsonFlatten,
  jsonSort,
  textDiff,
  urlNormalize,
  htmlClean,
  jsonSchemaValidate,
  keywordExtract,
  tokenCount,
  sha256,
  uuidMint,
  slugify,
] as SkillSpec[];

/** The 200 body as runSkill shapes it: `skill` (and `ok` for utilities) before the skill's fields. */
function responseSchema(spec: SkillSpec, output: z.ZodObject) {
  const envelope =
    spec.kind === "utility"
      ? { skill: z.literal(spec.id), ok: z.literal(true) }
      : { skill: z.literal(spec.id) };
  return z.object({ ...envelope, ...output.shape });
}

/** `make()` on the first call, the same value after. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

export const skills: readonly Skill[] = specs.map((spec) => {
  const slug = spec.id.replaceAll("_", "-");
  const { input, output, ...rest } = spec;
  const outputOnce = once(output);
  // Schemas are getters: a skill's are built by its first call (or the first document that lists
  // them), not when the Worker starts (SkillSpec.input says why).
  return Object.defineProperties(
    { ...rest, slug, endpoint: `/api/skills/${slug}`, price_atomic: usdToMicros(spec.price_usd) },
    {
      input: { get: once(input), enumerable: true },
      output: { get: outputOnce, enumerable: true },
      response: { get: once(() => responseSchema(spec, outputOnce())), enumerable: true },
    },
  ) as Skill;
});

const bySlug = new Map(skills.map((s) => [s.slug, s]));
const byId = new Map(skills.map((s) => [s.id, s]));
export const skillBySlug = (slug: string) => bySlug.get(slug);
export const skillById = (id: string) => byId.get(id);

type JsonSchema = Record<string, unknown>;
const schemaCaches = { input: new Map<string, JsonSchema>(), output: new Map<string, JsonSchema>() };
function cachedSchema(io: "input" | "output", skill: Skill, schema: z.ZodType): JsonSchema {
  const cache = schemaCaches[io];
  let js = cache.get(skill.id);
  if (!js) {
    js = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
    cache.set(skill.id, js);
  }
  return js;
}

/** JSON Schema of a request body, generated from the zod schema (computed once per isolate). */
export const inputJsonSchema = (skill: Skill) => cachedSchema("input", skill, skill.input);
/** JSON Schema of the 200 body (`skill.response`), computed once per isolate. */
export const outputJsonSchema = (skill: Skill) => cachedSchema("output", skill, skill.response);
