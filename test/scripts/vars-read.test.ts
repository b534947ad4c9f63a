import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error plain JS script
import { readConfig } from "../../scripts/deploy-check.mjs";
import { READ } from "../../src/ops/config-problems";

// /health names a var that is not text only if it is in READ (src/ops/config-problems.ts): a var
// the Worker starts reading must be added there, or /health stays silent about it.
const root = path.resolve(import.meta.dirname, "../..");
const read = new Set<string>(READ);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/**
 * The upper-case names a source file reads from the Worker's env: `env.NAME`, `c.env.NAME`,
 * `env["NAME"]`, through an alias (`const e = env as …; e.NAME`, as src/net/config.ts reads) and
 * by destructuring (`const { NAME } = env`).
 */
function varsReadIn(text: string): string[] {
  // process.env.NAME is an agent's environment in the guides' sample code, not the Worker's.
  const source = text.replace(/\bprocess\.env\b/g, "process_env");
  const aliases = ["env"];
  for (const m of source.matchAll(
    /\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*(?:\w+\.)?env\b(?!\.)/g,
  ))
    aliases.push(m[1] as string);
  const names = new Set<string>();
  for (const alias of aliases) {
    const at = new RegExp(
      `(?<![\\w$])${alias.replace("$", "\\$")}(?:\\.|\\[["'\`])([A-Z][A-Z0-9_]+)\\b`,
      "g",
    );
    for (const m of source.matchAll(at)) names.add(m[1] as string);
  }
  for (const m of source.matchAll(/\{([^{}]*)\}\s*=\s*(?:\w+\.)?env\b(?!\.)/g))
    for (const n of (m[1] as string).matchAll(/\b([A-Z][A-Z0-9_]+)\b/g)) names.add(n[1] as string);
  return [...names];
}

describe("varsReadIn finds a var however src/ reads it", () => {
  it("directly, through an alias, by brackets and by destructuring; never process.env", () => {
    const text = [
      "const a = c.env.DIRECT_VAR;",
      "const e = env as unknown as Partial<Record<string, string>>;",
      "void e.NEW_NET_VAR;",
      "const f: Partial<Record<string, string>> = env as never;",
      "void f.TYPED_ALIAS_VAR;",
      'const b = env["BRACKET_VAR"];',
      "const { DESTRUCTURED_VAR, other } = c.env;",
      "const sample = process.env.AGENT_KEY;",
    ].join("\n");
    expect(varsReadIn(text).sort()).toEqual(
      ["BRACKET_VAR", "DESTRUCTURED_VAR", "DIRECT_VAR", "NEW_NET_VAR", "TYPED_ALIAS_VAR"].sort(),
    );
  });
});

describe("READ lists every var and secret the Worker reads", () => {
  it("every env.NAME read in src/ that is no binding", async () => {
    const config = await readConfig(path.join(root, "wrangler.toml"));
    const bindings = new Set<string>(
      [
        config.assets,
        ...(config.d1_databases ?? []),
        ...(config.kv_namespaces ?? []),
        ...(config.analytics_engine_datasets ?? []),
        ...(config.ratelimits ?? []),
      ]
        .filter(Boolean)
        .map((b: { binding?: string; name?: string }) => b.binding ?? b.name ?? ""),
    );
    const names = new Set<string>();
    for (const file of sources(path.join(root, "src"))) {
      for (const name of varsReadIn(readFileSync(file, "utf8"))) names.add(name);
    }
    const vars = [...names].filter((n) => !bindings.has(n));
    expect(vars.length).toBeGreaterThan(20);
    expect(vars.filter((n) => !read.has(n))).toEqual([]);
  }, 60_000);

  it("every [vars] name in wrangler.toml", async () => {
    const config = await readConfig(path.join(root, "wrangler.toml"));
    const names = Object.keys(config.vars ?? {});
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((n) => !read.has(n))).toEqual([]);
  }, 60_000);

  it("every key of Secrets and OptionalVars in src/env.ts", () => {
    const text = readFileSync(path.join(root, "src/env.ts"), "utf8");
    const keys = ["Secrets", "OptionalVars"].flatMap((name) => {
      const body = new RegExp(`interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1] ?? "";
      return [...body.matchAll(/^\s+([A-Z][A-Z0-9_]+)\?:/gm)].map((m) => m[1] as string);
    });
    expect(keys.length).toBeGreaterThan(8);
    expect(keys.filter((n) => !read.has(n))).toEqual([]);
  });
});
