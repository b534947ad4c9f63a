import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import { MAX_ERRORS } from "../../src/skills/json-schema-validate";
import { meteredValidation } from "../../src/skills/lib/schema-work";
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

/** The meter's refusals: the bound working, not a failure of the property under test. */
const REFUSALS = ["WorkLimitExceeded", "UnsupportedPattern", "InvalidPattern", "RangeError"];

/**
 * One metered validation of copies of `schema` and `instance` (2020-12), as a property test runs it:
 * the units used and the budget (0 and 0 when refused), and how long it took. A throw that is not a
 * refusal is rethrown unless `alsoRefused` accepts it.
 */
export function meteredRun(
  schema: unknown,
  instance: unknown,
  alsoRefused: (e: Error) => boolean = () => false,
) {
  const started = performance.now();
  let used = 0;
  let budget = 0;
  try {
    ({ used, budget } = meteredValidation(
      JSON.parse(JSON.stringify(schema)),
      JSON.parse(JSON.stringify(instance)),
      "2020-12",
    ));
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    if (!REFUSALS.includes(e.constructor.name) && !alsoRefused(e)) throw e;
  }
  return { used, budget, ms: performance.now() - started };
}
