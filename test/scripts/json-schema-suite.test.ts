import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { skillById } from "../../src/skills/registry";
import { KNOWN_FAILURES } from "./json-schema-suite-known";

// The registry pulls in token_count, which imports waitUntil from the Workers runtime this Node
// project lacks; nothing here calls it. The skill is taken from the registry, as routes take it: its
// input schema and the description agents are served.
vi.mock("cloudflare:workers", () => ({ waitUntil: () => {} }));

/**
 * json_schema_validate against the official JSON Schema Test Suite (required cases of each draft
 * it claims), each case sent as an agent sends it: the body through the skill's own input schema,
 * then `run`; a 422 (a refused pattern, a budget) or a schema error (checked: false) counts as a
 * wrong answer, whatever `valid` says. The cases of draft 4, 6 and 7 have no `$schema` (the suite
 * leaves the draft to the harness); the skill reads the draft from `$schema` and defaults to
 * 2020-12, so each gets its draft's `$schema` at the root, as an agent meaning that draft writes
 * it. Cases referencing http://localhost:1234 (remote refs, never fetched) are counted apart.
 * The suite's required files are vendored in test/fixtures/json-schema-suite (its README: source,
 * commit, refresh), so this runs on every `npm test`; JSON_SCHEMA_SUITE=<dir holding tests/> reads
 * another copy. The figures README.md's table and the skill's description state are checked here.
 */
const SUITE =
  process.env.JSON_SCHEMA_SUITE || path.join(import.meta.dirname, "../fixtures/json-schema-suite");
const ROOT = path.join(import.meta.dirname, "../..");

/** Suite directory, `$schema` given to cases without one, and the label README.md's table uses. */
const DRAFTS = [
  { dir: "draft4", dialect: "http://json-schema.org/draft-04/schema#", label: "4" },
  { dir: "draft6", dialect: "http://json-schema.org/draft-06/schema#", label: "6 (run as 7)" },
  { dir: "draft7", dialect: "http://json-schema.org/draft-07/schema#", label: "7" },
  { dir: "draft2019-09", dialect: "https://json-schema.org/draft/2019-09/schema", label: "2019-09" },
  { dir: "draft2020-12", dialect: "https://json-schema.org/draft/2020-12/schema", label: "2020-12" },
];

type Case = { description: string; data: unknown; valid: boolean };
type Group = { description: string; schema: unknown; tests: Case[] };
type Outcome = { cases: number; passed: number; remote: number; failed: string[] };

/** The required files of a draft: its own directory, not optional/. */
const requiredFiles = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.endsWith(".json") && statSync(path.join(dir, name)).isFile())
    .sort();

const withDialect = (schema: unknown, dialect: string) =>
  schema && typeof schema === "object" && !("$schema" in schema) ? { $schema: dialect, ...schema } : schema;

function registered(id: string) {
  const found = skillById(id);
  if (!found) throw new Error(`${id} is not in the registry`);
  return found;
}
const skill = registered("json_schema_validate");

async function answer(schema: unknown, instance: unknown): Promise<boolean | string> {
  try {
    const body = skill.input.parse({ instance, schema });
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

async function runDraft(draft: string, dialect: string): Promise<Outcome> {
  const dir = path.join(SUITE, "tests", draft);
  const outcome: Outcome = { cases: 0, passed: 0, remote: 0, failed: [] };
  for (const file of requiredFiles(dir)) {
    const groups = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as Group[];
    for (const group of groups) {
      const remote = JSON.stringify(group.schema).includes("localhost:1234");
      for (const test of group.tests) {
        if (remote) {
          outcome.remote++;
          continue;
        }
        outcome.cases++;
        const got = await answer(withDialect(group.schema, dialect), test.data);
        if (got === test.valid) outcome.passed++;
        else outcome.failed.push(`${draft}/${file} | ${group.description} | ${test.description}`);
      }
    }
  }
  return outcome;
}

// Each draft runs once, whichever test asks first.
const runs = new Map<string, Promise<Outcome>>();
const outcomeOf = (draft: (typeof DRAFTS)[number]) => {
  if (!runs.has(draft.dir)) runs.set(draft.dir, runDraft(draft.dir, draft.dialect));
  return runs.get(draft.dir) as Promise<Outcome>;
};
const allOutcomes = async () =>
  new Map(await Promise.all(DRAFTS.map(async (d) => [d, await outcomeOf(d)] as const)));

/** README.md's table under "against the official JSON Schema Test Suite": label -> [required, remote]. */
function readmeTable(): Record<string, [string, string]> {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("| draft (`$schema`) |");
  expect(start, "README.md has the suite's table").toBeGreaterThan(-1);
  const rows = readme.slice(start).split("\n").slice(2);
  const table: Record<string, [string, string]> = {};
  for (const row of rows) {
    if (!row.startsWith("|")) break;
    const [label = "", required = "", remote = ""] = row
      .split("|")
      .slice(1)
      .map((cell) => cell.trim());
    table[label] = [required, remote];
  }
  return table;
}

describe("json_schema_validate against the official JSON Schema Test Suite", () => {
  const known = new Set(Object.values(KNOWN_FAILURES).flat());

  it.each(DRAFTS.map((d) => [d.dir, d] as const))(
    "%s: every required case answers as the suite says, but the known failures",
    async (dir, draft) => {
      const { cases, passed, remote, failed } = await outcomeOf(draft);
      console.info(`${dir}: ${passed} of ${cases} required cases (${remote} remote-ref cases apart)`);
      const knownHere = [...known].filter((id) => id.startsWith(`${dir}/`));
      expect({ unexpected: failed.filter((id) => !known.has(id)) }).toEqual({ unexpected: [] });
      expect({ nowPassing: knownHere.filter((id) => !failed.includes(id)) }).toEqual({ nowPassing: [] });
      expect(cases).toBeGreaterThan(400);
    },
    120_000,
  );

  it("README.md's table states the required and remote-ref counts this run finds", async () => {
    const expected: Record<string, [string, string]> = {};
    for (const [draft, o] of await allOutcomes())
      expected[draft.label] = [`${o.passed} / ${o.cases}`, `${o.remote}`];
    expect(readmeTable()).toEqual(expected);
  }, 120_000);

  it("the skill's description states the required counts this run finds", async () => {
    // "Official JSON Schema Test Suite, required cases: 548/552 (draft 4), 824/828 (7), ..."
    const stated: Record<string, string> = {};
    const figures = /(\d+\/\d+) \((?:draft )?([\d-]+)\)/g;
    for (const [, figure = "", label = ""] of skill.description.matchAll(figures)) stated[label] = figure;
    const expected: Record<string, string> = {};
    // Draft 6 is not among the drafts the description names (a draft-06 `$schema` runs as 7).
    for (const [draft, o] of await allOutcomes())
      if (draft.dir !== "draft6") expected[draft.label] = `${o.passed}/${o.cases}`;
    expect(stated).toEqual(expected);
  }, 120_000);
});
