import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jsonSchemaValidate } from "../../src/skills/json-schema-validate";
import { KNOWN_FAILURES } from "./json-schema-suite-known";

/**
 * json_schema_validate against the official JSON Schema Test Suite (required cases of each draft
 * it claims), each case sent as an agent sends it: the body through the skill's own input schema,
 * then `run`; a 422 (a refused pattern, a budget) or a schema error (checked: false) counts as a
 * wrong answer, whatever `valid` says. The cases of draft 4, 6 and 7 have no `$schema` (the suite
 * leaves the draft to the harness); the skill reads the draft from `$schema` and defaults to
 * 2020-12, so each gets its draft's `$schema` at the root, as an agent meaning that draft writes
 * it. Cases referencing http://localhost:1234 (remote refs, never fetched) are counted apart.
 * Figures: README.md. The suite is not in package.json (its npm package is a git dependency these
 * machines cannot fetch): scripts/json-schema-suite.sh fetches it (a Debian package) and runs this
 * file; without it (JSON_SCHEMA_SUITE unset) this file is skipped.
 */
const SUITE = process.env.JSON_SCHEMA_SUITE;

const DRAFTS: [dir: string, dialect: string][] = [
  ["draft4", "http://json-schema.org/draft-04/schema#"],
  ["draft6", "http://json-schema.org/draft-06/schema#"],
  ["draft7", "http://json-schema.org/draft-07/schema#"],
  ["draft2019-09", "https://json-schema.org/draft/2019-09/schema"],
  ["draft2020-12", "https://json-schema.org/draft/2020-12/schema"],
];

type Case = { description: string; data: unknown; valid: boolean };
type Group = { description: string; schema: unknown; tests: Case[] };

/** The required files of a draft: its own directory, not optional/. */
const requiredFiles = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.endsWith(".json") && statSync(path.join(dir, name)).isFile())
    .sort();

const withDialect = (schema: unknown, dialect: string) =>
  schema && typeof schema === "object" && !("$schema" in schema) ? { $schema: dialect, ...schema } : schema;

async function answer(schema: unknown, instance: unknown): Promise<boolean | string> {
  const skill = jsonSchemaValidate;
  try {
    const body = skill.input().parse({ instance, schema });
    const out = (await skill.run(body, { env: {} as never, requestId: "suite" })) as {
      valid: boolean;
      checked: boolean;
      errors: { message: string }[];
    };
    // A schema error is valid: false too, but no answer about the instance (checked: false).
    return out.checked ? out.valid : `schema error: ${out.errors[0]?.message}`;
  } catch (e) {
    return `422: ${e instanceof Error ? e.message : String(e)}`;
  }
}

describe.skipIf(!SUITE)("json_schema_validate against the official JSON Schema Test Suite", () => {
  const known = new Set(Object.values(KNOWN_FAILURES).flat());

  it.each(DRAFTS)(
    "%s: every required case answers as the suite says, but the known failures",
    async (draft, dialect) => {
      const dir = path.join(SUITE as string, "tests", draft);
      expect(existsSync(dir), dir).toBe(true);
      const failed: string[] = [];
      const counts = { cases: 0, passed: 0, remote: 0 };
      for (const file of requiredFiles(dir)) {
        const groups = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as Group[];
        for (const group of groups) {
          const remote = JSON.stringify(group.schema).includes("localhost:1234");
          for (const test of group.tests) {
            if (remote) {
              counts.remote++;
              continue;
            }
            counts.cases++;
            const got = await answer(withDialect(group.schema, dialect), test.data);
            if (got === test.valid) counts.passed++;
            else failed.push(`${draft}/${file} | ${group.description} | ${test.description}`);
          }
        }
      }
      console.info(
        `${draft}: ${counts.passed} of ${counts.cases} required cases (${counts.remote} remote-ref cases apart)`,
      );
      const knownHere = [...known].filter((id) => id.startsWith(`${draft}/`));
      expect({ unexpected: failed.filter((id) => !known.has(id)) }).toEqual({ unexpected: [] });
      expect({ nowPassing: knownHere.filter((id) => !failed.includes(id)) }).toEqual({ nowPassing: [] });
      expect(counts.cases).toBeGreaterThan(400);
    },
    120_000,
  );
});
