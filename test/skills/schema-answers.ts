import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import { MAX_ERRORS } from "../../src/skills/json-schema-validate";
import { postJson } from "../helpers";

/** json_schema_validate over HTTP: its status, the request's size and its answer. */
export async function validateOverHttp(schema: unknown, instance: unknown) {
  const text = JSON.stringify({ schema, instance });
  const res = await postJson("/api/skills/json-schema-validate", text);
  return { status: res.status, bytes: text.length, body: (await res.json()) as Record<string, unknown> };
}

/** The library's errors as the skill writes them. */
export const answerOf = (errors: OutputUnit[]) =>
  errors.map((e) => ({
    instance_path: e.instanceLocation,
    keyword: e.keyword,
    schema_path: e.keywordLocation,
    message: e.error,
  }));

/** What the plain library answers (no meter, no stand-ins): verdict, count, first 100 errors. */
export function libraryAnswer(schema: unknown, instance: unknown) {
  const r = new Validator(structuredClone(schema) as Schema, "2020-12", false).validate(
    structuredClone(instance),
  );
  return { valid: r.valid, error_count: r.errors.length, errors: answerOf(r.errors.slice(0, MAX_ERRORS)) };
}
