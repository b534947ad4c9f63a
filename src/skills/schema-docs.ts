import { type ErrorItem, zodItems } from "../http/validation";
import { inputJsonSchema, outputJsonSchema } from "./registry";
import type { Skill } from "./types";

/** A skill's schemas as other documents embed them (OpenAPI, service files, doc pages), from the registry. */

/** A JSON Schema without its `$schema` dialect key, ready to embed in another document. */
export const withoutDialect = ({ $schema: _drop, ...schema }: Record<string, unknown>) => schema;

/** JSON Schema of a skill's body, to embed. */
export const bodySchema = (skill: Skill) => withoutDialect(inputJsonSchema(skill));

/** JSON Schema of a skill's 200 body, to embed. */
export const responseSchema = (skill: Skill) => withoutDialect(outputJsonSchema(skill));

interface Bounds {
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}
/** Values of a property that its bounds reject, most readable first. */
function outOfBounds(p: Bounds): unknown[] {
  const out: unknown[] = [];
  if (p.maximum !== undefined) out.push(p.maximum + 1);
  if (p.minimum !== undefined) out.push(p.minimum - 1);
  if (p.maxLength !== undefined) out.push("x".repeat(p.maxLength + 1));
  return out;
}

/**
 * A 422 this skill really answers, with the body that causes it: `{}` when a field is required (or
 * a refinement rejects it), else the first field pushed past a bound, else a body that is not an
 * object. The body is validated with the skill's schema through the route's own FastAPI-shape
 * converter, so the example cannot disagree with the service.
 */
export function validationExample(skill: Skill): { body: unknown; detail: ErrorItem[] } {
  const props = (bodySchema(skill) as { properties?: Record<string, Bounds> }).properties ?? {};
  const candidates: unknown[] = [
    {},
    ...Object.entries(props).flatMap(([name, p]) => outOfBounds(p).map((v) => ({ [name]: v }))),
    [],
  ];
  for (const body of candidates) {
    const result = skill.input.safeParse(body, { reportInput: true });
    if (!result.success) return { body, detail: zodItems(result.error, body, ["body"]) };
  }
  throw new Error(`${skill.id}: every candidate body validated`);
}
