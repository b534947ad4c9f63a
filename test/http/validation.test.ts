import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scanJson } from "../../src/http/json-text";
import { inputJsonSchema, skills } from "../../src/skills/registry";
import { call, detailOf, postJson } from "../helpers";

const long = (n: number) => "x".repeat(n);

// Spec section 8, one row per bound, plus the wrong-type and literal cases users hit most.
// [endpoint slug, base valid body, field path, bad value, expected pydantic type, expected ctx]
type Row = [string, Record<string, unknown>, string[], unknown, string, Record<string, unknown>?];
const rows: Row[] = [
  ["osint-graph", { seed_entity: "x" }, ["seed_entity"], "", "string_too_short", { min_length: 1 }],
  ["osint-graph", { seed_entity: "x" }, ["seed_entity"], long(501), "string_too_long", { max_length: 500 }],
  ["osint-graph", { seed_entity: "x" }, ["max_depth"], 0, "greater_than_equal", { ge: 1 }],
  ["osint-graph", { seed_entity: "x" }, ["max_depth"], 5, "less_than_equal", { le: 4 }],
  ["osint-graph", { seed_entity: "x" }, ["max_depth"], 1.5, "int_from_float"],
  ["osint-graph", { seed_entity: "x" }, ["max_depth"], "2", "int_parsing"],
  ["osint-graph", { seed_entity: "x" }, ["seed_entity"], 42, "string_type"],
  ["research", { query: "x" }, ["query"], "", "string_too_short", { min_length: 1 }],
  ["research", { query: "x" }, ["query"], long(2001), "string_too_long", { max_length: 2000 }],
  ["seo", { url: "https://a.test" }, ["url"], "", "string_too_short", { min_length: 1 }],
  ["seo", { url: "https://a.test" }, ["url"], long(2001), "string_too_long", { max_length: 2000 }],
  ["seo", { url: "https://a.test" }, ["keywords"], "seo", "list_type"],
  ["ai-detector", { text: "hello" }, ["url"], long(8001), "string_too_long", { max_length: 8000 }],
  ["ai-detector", { url: "https://a.test" }, ["text"], long(8001), "string_too_long", { max_length: 8000 }],
  ["text-diff", { a: "", b: "" }, ["a"], long(200_001), "string_too_long", { max_length: 200_000 }],
  ["text-diff", { a: "", b: "" }, ["b"], long(200_001), "string_too_long", { max_length: 200_000 }],
  ["text-diff", { a: "", b: "" }, ["options"], [], "dict_type"],
  ["url-normalize", { url: "https://a.test" }, ["url"], "", "string_too_short", { min_length: 1 }],
  ["url-normalize", { url: "https://a.test" }, ["url"], long(8001), "string_too_long", { max_length: 8000 }],
  ["html-clean", { html: "<p>x</p>" }, ["html"], "", "string_too_short", { min_length: 1 }],
  ["html-clean", { html: "<p>x</p>" }, ["html"], long(400_001), "string_too_long", { max_length: 400_000 }],
  ["html-clean", { html: "<p>x</p>" }, ["mode"], long(17), "string_too_long", { max_length: 16 }],
  [
    "html-clean",
    { html: "<p>x</p>" },
    ["mode"],
    "pdf",
    "literal_error",
    { expected: "'text' or 'markdown'" },
  ],
  ["keyword-extract", { text: "x" }, ["text"], "", "string_too_short", { min_length: 1 }],
  ["keyword-extract", { text: "x" }, ["text"], long(200_001), "string_too_long", { max_length: 200_000 }],
  ["keyword-extract", { text: "x" }, ["limit"], 0, "greater_than_equal", { ge: 1 }],
  ["keyword-extract", { text: "x" }, ["limit"], 51, "less_than_equal", { le: 50 }],
  ["sha256", { text: "" }, ["text"], long(400_001), "string_too_long", { max_length: 400_000 }],
  ["sha256", { text: "" }, ["encoding"], long(17), "string_too_long", { max_length: 16 }],
  ["slugify", { text: "" }, ["text"], long(4001), "string_too_long", { max_length: 4000 }],
  ["slugify", { text: "" }, ["max_len"], 0, "greater_than_equal", { ge: 1 }],
  ["slugify", { text: "" }, ["max_len"], 201, "less_than_equal", { le: 200 }],
  ["token-count", { text: "" }, ["text"], long(400_001), "string_too_long", { max_length: 400_000 }],
  ["token-count", { text: "" }, ["encoding"], long(33), "string_too_long", { max_length: 32 }],
  ["uuid-mint", {}, ["count"], 0, "greater_than_equal", { ge: 1 }],
  ["uuid-mint", {}, ["count"], 33, "less_than_equal", { le: 32 }],
  ["uuid-mint", {}, ["version"], 3, "literal_error", { expected: "1 or 4" }],
  ["json-sort", { data: 1 }, ["reverse"], "yes", "bool_parsing"],
  // Past 2^53 only the field's own bound is named (zod's implicit safe-integer bound is not).
  ["uuid-mint", {}, ["count"], 1e20, "less_than_equal", { le: 32 }],
  ["keyword-extract", { text: "x" }, ["limit"], 1e20, "less_than_equal", { le: 50 }],
  ["osint-graph", { seed_entity: "x" }, ["max_depth"], -1e23, "greater_than_equal", { ge: 1 }],
];

function withValue(base: Record<string, unknown>, path: string[], value: unknown) {
  const body = structuredClone(base);
  let cur = body as Record<string, unknown>;
  for (const key of path.slice(0, -1)) {
    cur[key] ??= {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[path[path.length - 1] as string] = value;
  return body;
}

describe("422 for every bound of spec section 8", () => {
  it.each(rows)("%s %j: %s", async (slug, base, path, value, type, ctx) => {
    const res = await postJson(`/api/skills/${slug}`, withValue(base, path, value));
    expect(res.status).toBe(422);
    const [item, ...rest] = await detailOf(res);
    expect(rest).toEqual([]);
    expect(item).toMatchObject({ loc: ["body", ...path], type });
    expect(typeof item?.msg).toBe("string");
    if (ctx) expect(item?.ctx).toEqual(ctx);
  });

  it("accepts values exactly at each bound", async () => {
    const atBounds: [string, Record<string, unknown>][] = [
      ["osint-graph", { seed_entity: long(500), max_depth: 4 }],
      ["keyword-extract", { text: long(1), limit: 50 }],
      ["slugify", { text: long(4000), max_len: 200 }],
      ["uuid-mint", { count: 32, version: 1 }],
      ["html-clean", { html: long(1), mode: "markdown" }],
    ];
    for (const [slug, body] of atBounds) {
      const res = await postJson(`/api/skills/${slug}`, body);
      expect(res.status, slug).not.toBe(422);
    }
  });
});

const required: [string, Record<string, unknown>, string][] = [
  ["osint-graph", { max_depth: 2 }, "seed_entity"],
  ["research", {}, "query"],
  ["seo", {}, "url"],
  ["json-flatten", { options: null }, "data"],
  ["json-sort", {}, "data"],
  ["text-diff", { a: "x" }, "b"],
  ["text-diff", { b: "x" }, "a"],
  ["url-normalize", {}, "url"],
  ["html-clean", { mode: "text" }, "html"],
  ["json-schema-validate", { schema: {} }, "instance"],
  ["json-schema-validate", { instance: 1 }, "schema"],
  ["keyword-extract", {}, "text"],
  ["token-count", {}, "text"],
  ["sha256", {}, "text"],
  ["slugify", {}, "text"],
];

describe("missing required fields", () => {
  it.each(required)("%s without %s", async (slug, body, field) => {
    const res = await postJson(`/api/skills/${slug}`, body);
    expect(res.status).toBe(422);
    const items = await detailOf(res);
    expect(items).toContainEqual({
      loc: ["body", field],
      msg: "Field required",
      type: "missing",
      input: body,
    });
  });

  it("ai_detector needs text or url", async () => {
    const res = await postJson("/api/skills/ai-detector", {});
    expect(res.status).toBe(422);
    const [item] = await detailOf(res);
    expect(item).toMatchObject({ loc: ["body"], type: "value_error" });
  });

  it("null is not a string", async () => {
    const res = await postJson("/api/skills/research", { query: null });
    expect((await detailOf(res))[0]).toMatchObject({
      loc: ["body", "query"],
      type: "string_type",
      input: null,
    });
  });
});

it("a pattern error names the bare pattern, as pydantic writes it", async () => {
  const res = await call("/docs/Bad%20Slug");
  expect(res.status).toBe(422);
  const [item] = await detailOf(res);
  expect(item?.msg).toBe("String should match pattern '^[a-z0-9-]{1,64}$'");
  expect(item?.ctx).toEqual({ pattern: "^[a-z0-9-]{1,64}$" });
});

describe("bodies that are not objects", () => {
  it("malformed JSON is 422 json_invalid with the position", async () => {
    const res = await postJson("/api/skills/sha256", '{"text": "a",');
    expect(res.status).toBe(422);
    const [item] = await detailOf(res);
    expect(item).toMatchObject({ type: "json_invalid", msg: "JSON decode error" });
    expect(item?.loc[0]).toBe("body");
    expect(typeof item?.loc[1]).toBe("number");
  });

  it("an empty body is 422 missing", async () => {
    const res = await postJson("/api/skills/uuid-mint", "");
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([
      { loc: ["body"], msg: "Field required", type: "missing", input: null },
    ]);
  });

  it.each([[[]], ["text"], [3]])("%j as a body is 422", async (body) => {
    const res = await postJson("/api/skills/uuid-mint", JSON.stringify(body));
    expect(res.status).toBe(422);
    expect((await detailOf(res))[0]).toMatchObject({ loc: ["body"], type: "model_attributes_type" });
  });

  it("null as a body is no body, as FastAPI reads it: 422 missing", async () => {
    const res = await postJson("/api/skills/uuid-mint", "null");
    expect(await detailOf(res)).toEqual([
      { loc: ["body"], msg: "Field required", type: "missing", input: null },
    ]);
  });
});

describe("no bad input produces a 500", () => {
  const slugs = [
    "osint-graph",
    "research",
    "seo",
    "ai-detector",
    "json-flatten",
    "json-sort",
    "text-diff",
    "url-normalize",
    "html-clean",
    "json-schema-validate",
    "keyword-extract",
    "token-count",
    "sha256",
    "uuid-mint",
    "slugify",
  ];
  it("random JSON bodies and random bytes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...slugs),
        fc.oneof(
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string(),
          fc.json(),
        ),
        async (slug, text) => {
          const res = await postJson(`/api/skills/${slug}`, text);
          expect(res.status, `status ${res.status}`).toBeLessThan(500);
          expect(res.headers.get("content-type")).toContain("application/json");
        },
      ),
      { numRuns: 300, seed: 42 },
    );
  });

  // Values random generators rarely reach: Object.prototype's names as enum-like strings, and
  // nesting deep enough to overflow any recursive walk (JSON.parse itself accepts it).
  const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
  const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
  it.each([
    ["sha256", '{"text":"x","encoding":"constructor"}', 422],
    ["sha256", '{"text":"x","encoding":"__proto__"}', 422],
    ["token-count", '{"text":"x","encoding":"toString"}', 422],
    ["html-clean", '{"html":"x","mode":"constructor"}', 422],
    ["json-flatten", `{"data":${deep(100_000)}}`, 422],
    ["json-sort", `{"data":${deepObject(50_000)}}`, 422],
    ["json-schema-validate", `{"schema":${deepObject(50_000)},"instance":1}`, 422],
    ["json-schema-validate", `{"schema":{},"instance":${deep(100_000)}}`, 422],
    ["json-flatten", `{"data":1,"options":{"sep":${deep(100_000)}}}`, 422],
    ["json-flatten", `{"data":${deep(199)}}`, 200],
    ["json-flatten", `{"data":${deep(200)}}`, 422],
    // Many empty containers: 5 MiB of them parsed to ~120 MB (a Worker has 128 MB).
    ["json-sort", `{"data":[${"{},".repeat(600_000)}{}]}`, 422],
    ["uuid-mint", `{"junk":[${"[],".repeat(600_000)}[]]}`, 422],
    ["json-sort", `{"data":[${"{},".repeat(100_000)}{}]}`, 200],
    ["html-clean", JSON.stringify({ html: "<i>".repeat(130_000) }), 422],
    ["html-clean", JSON.stringify({ html: "<div>".repeat(80_000), mode: "markdown" }), 422],
    // Nesting as html-to-text's parser builds it: unclosed <a>, <h1>, tables and foreign content.
    ["html-clean", JSON.stringify({ html: "<a>x".repeat(5000) }), 422],
    ["html-clean", JSON.stringify({ html: "<h1>x".repeat(5000) }), 422],
    ["html-clean", JSON.stringify({ html: "<table><tr><td>".repeat(3000) }), 422],
    ["html-clean", JSON.stringify({ html: "<svg><g>".repeat(3000), mode: "markdown" }), 422],
    ["html-clean", JSON.stringify({ html: `${"<div>".repeat(500)}deep but fine` }), 200],
    ["html-clean", JSON.stringify({ html: `${"<a>x".repeat(500)}deep but fine` }), 200],
    ["html-clean", JSON.stringify({ html: "<p>x".repeat(5000) }), 200],
  ])("%s case %#", async (slug, body, status) => {
    const res = await postJson(`/api/skills/${slug}`, body);
    expect(res.status).toBe(status);
    if (status === 422) expect((await detailOf(res))[0]?.loc[0]).toBe("body");
  });

  it("objects with each skill's own field names and arbitrary values", async () => {
    const utility = skills.filter((s) => s.kind === "utility");
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...utility),
        fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 2 }),
        fc.array(fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string(), fc.integer(), fc.constant(null)), {
          maxLength: 4,
        }),
        async (skill, extra, values) => {
          const fields = Object.keys((inputJsonSchema(skill).properties ?? {}) as object);
          const body: Record<string, unknown> = { ...extra };
          fields.forEach((f, i) => {
            if (i < values.length) body[f] = values[i];
          });
          const res = await postJson(skill.endpoint, body);
          expect([200, 422], `${skill.id} ${JSON.stringify(body)} -> ${res.status}`).toContain(res.status);
        },
      ),
      { numRuns: 400, seed: 42 },
    );
    // 400 requests through every utility (the tokenizer tables among them): explicit, for a busy machine.
  }, 120_000);
});

describe("scanJson finds integers that may pass 2^53 (so only those bodies take the exact-integer parse)", () => {
  it.each([
    ['{"id":1234567890123456}', true],
    ["[-12345678901234567890]", true],
    ["12345678901234567890", true],
    ['{"x":0.30000000000000004}', false],
    ['{"x":1234567890123456.5}', false],
    ['{"x":1e1234567890123456}', false],
    ['{"x":1.5E+1234567890123456}', false],
    ['{"s":"12345678901234567890"}', false],
    ['{"a":123456789012345,"b":true}', false],
  ])("%s → %s", (text, expected) => {
    expect(scanJson(text).longDigits).toBe(expected);
  });
});

describe("scanJson skips strings whole (stop 39: found by indexOf), escapes included", () => {
  it.each([
    ['{"s":"a\\"[[[{{"}', 1, 1],
    ['{"s":"a\\\\"}', 1, 1],
    ['{"s":"a\\\\\\"]]"}', 1, 1],
    ['[{"s":"\\\\\\\\"},["\\""]]', 2, 3],
    ['{"s":"[[[', 1, 1],
    ['["\\\\",[[]]]', 3, 3],
  ])("%s → depth %i, containers %i", (text, depth, containers) => {
    expect(scanJson(text)).toMatchObject({ depth, containers });
  });

  it("counts what JSON.parse finds, for any JSON text", () => {
    const count = (v: unknown, level: number): { depth: number; containers: number } => {
      if (v === null || typeof v !== "object") return { depth: level, containers: 0 };
      let depth = level + 1;
      let containers = 1;
      for (const item of Object.values(v)) {
        const inner = count(item, level + 1);
        depth = Math.max(depth, inner.depth);
        containers += inner.containers;
      }
      return { depth, containers };
    };
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        expect(scanJson(text)).toMatchObject(count(JSON.parse(text), 0));
      }),
      { numRuns: 2000, seed: 39 },
    );
  });
});
