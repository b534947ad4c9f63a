import { z } from "zod";
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

export const skills: readonly Skill[] = specs.map((spec) => {
  const slug = spec.id.replaceAll("_", "-");
  return { ...spec, slug, endpoint: `/api/skills/${slug}`, price_atomic: usdToMicros(spec.price_usd) };
});

const bySlug = new Map(skills.map((s) => [s.slug, s]));
const byId = new Map(skills.map((s) => [s.id, s]));
export const skillBySlug = (slug: string) => bySlug.get(slug);
export const skillById = (id: string) => byId.get(id);

const schemaCache = new Map<string, Record<string, unknown>>();
/** JSON Schema of a request body, generated from the zod schema (computed once per isolate). */
export function inputJsonSchema(skill: Skill): Record<string, unknown> {
  let schema = schemaCache.get(skill.id);
  if (!schema) {
    schema = z.toJSONSchema(skill.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    schemaCache.set(skill.id, schema);
  }
  return schema;
}
