import { RE2JS } from "re2js";

/**
 * `pattern` and `patternProperties` of json_schema_validate run on RE2 (re2js), in linear time:
 * a pattern JavaScript accepts but RE2 cannot run (lookaround, backreference) is refused up front.
 */

/** A pattern that JavaScript accepts but RE2 cannot run in linear time (lookaround, backreference). */
export class UnsupportedPattern extends Error {
  constructor(
    readonly pattern: string,
    readonly path: (string | number)[],
    readonly reason: string,
  ) {
    super(`pattern ${JSON.stringify(pattern)} is not supported: ${reason}`);
  }
}

/** A pattern that is not a valid ECMAScript regular expression: an invalid schema, as before. */
export class InvalidPattern extends Error {}

/** The real constructor: the validator sees a stand-in while it runs (schema-work.ts). */
export const NativeRegExp = RegExp;
const compiled = new Map<string, RE2JS>();

export function compileRe2(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (!re) {
    re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    if (compiled.size > 1000) compiled.clear();
    compiled.set(pattern, re);
  }
  return re;
}

/** Refuses, before validation, a pattern the schema may not use (an invalid or a non-linear one). */
export function checkPattern(pattern: string, path: (string | number)[]) {
  try {
    new NativeRegExp(pattern, "u");
  } catch (e) {
    throw new InvalidPattern(`#/${path.join("/")}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    compileRe2(pattern);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new UnsupportedPattern(pattern, path, reason);
  }
}
