import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { neutralizeScriptLinks } from "../../src/skills/lib/markdown-safety";
import { jsonByteLength, MAX_OUTPUT_BYTES } from "../../src/skills/lib/output-size";
import { RawJson } from "../../src/skills/lib/raw-json";
import { patternSize } from "../../src/skills/lib/schema-patterns";
import { meteredValidation, WORK_BUDGET_BASE, WORK_BUDGET_PER_NODE } from "../../src/skills/lib/schema-work";
import { skills } from "../../src/skills/registry";
import { runSkill } from "../../src/skills/run";
import type { Skill } from "../../src/skills/types";
import { trimTrailingDots } from "../../src/skills/url-normalize";
import { meteredRun } from "./schema-answers";

/** An array of records that require an id and a non-empty name, plus the given properties. */
const recordsSchema = (properties: Record<string, unknown>) => ({
  type: "array",
  items: {
    type: "object",
    required: ["id", "name"],
    properties: { name: { type: "string", minLength: 1 }, ...properties },
  },
});

import { postJson } from "../helpers";

// Issue 19 point 2 and issue 15 "Quotas and abuse": every skill's answer and work are bounded.
// Timeouts are explicit and generous: these tests do real work on a machine other suites load.
const SLOW = 120_000;

const post = async (slug: string, body: unknown) => {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const started = performance.now();
  const res = await postJson(`/api/skills/${slug}`, text);
  const out = await res.text();
  return { status: res.status, text: out, ms: performance.now() - started, bytes: text.length };
};

describe("the response-size cap", () => {
  it("measures JSON exactly as JSON.stringify writes it, in UTF-8 bytes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "grapheme" }), (value, s) => {
        for (const v of [value, s, { s, value }]) {
          expect(jsonByteLength(v), JSON.stringify(v)).toBe(
            new TextEncoder().encode(JSON.stringify(v)).length,
          );
        }
      }),
      { numRuns: 300, seed: 42 },
    );
    expect(jsonByteLength({ a: new RawJson('{"b":[1,2]}') })).toBe('{"a":{"b":[1,2]}}'.length);
    expect(jsonByteLength("\ud800")).toBe(JSON.stringify("\ud800").length);
  });

  it("stops counting past the limit instead of walking the whole value", () => {
    const huge = Array.from({ length: 1000 }, () => "x".repeat(100_000)); // 100 MB of text
    expect(jsonByteLength(huge, 1000)).toBe(1001);
  });

  it("runSkill refuses an answer over 8 MB with 422 output_too_large, whoever calls it", async () => {
    const fake = {
      ...skills[0],
      id: "fake",
      kind: "utility",
      run: () => ({ blob: "x".repeat(MAX_OUTPUT_BYTES) }),
    } as unknown as Skill;
    const err = await runSkill(fake, {}, {} as never, "t").catch((e) => e);
    expect(err.items[0]).toMatchObject({
      loc: ["body"],
      type: "output_too_large",
      ctx: { max_bytes: MAX_OUTPUT_BYTES },
    });
    const small = { ...fake, run: () => ({ blob: "x".repeat(1000) }) } as unknown as Skill;
    expect(await runSkill(small, {}, {} as never, "t")).toMatchObject({ skill: "fake", ok: true });
  });
});

describe("json_flatten amplification (issue 19)", () => {
  const nested = (levels: number) => {
    let data: unknown = 1;
    for (let i = 0; i < levels; i++) data = { k: data };
    return data;
  };
  /** 100 levels joined by `sep`, with depth allowed: the key grows by `sep` at every level. */
  const deepWithSep = (sep: string) =>
    post("json-flatten", { data: nested(100), options: { sep, max_depth: 1000 } });

  it(
    "the probe's attack: a 10,000-character sep with a leaf at each of 100 levels is a 422, not 50 MB",
    async () => {
      // The spec puts no bound on sep (§2.3): the answer's cap, counted as keys are made, is what stops it.
      let data: unknown = 1;
      for (let i = 0; i < 100; i++) data = { v: i, k: data };
      const r = await post("json-flatten", { data, options: { sep: "s".repeat(10_000), max_depth: 1000 } });
      expect(r.status).toBe(422);
      expect(JSON.parse(r.text).detail[0]).toMatchObject({ loc: ["body"], type: "output_too_large" });
      expect(r.text.length).toBeLessThan(2000);
    },
    SLOW,
  );

  it(
    "the same sep to a single leaf is one 1 MB key, answered",
    async () => {
      const r = await deepWithSep("s".repeat(10_000));
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).keys).toBe(1);
    },
    SLOW,
  );

  it(
    "a 101 KB sep over 100 levels is a 422 output_too_large (it used to throw RangeError: a 500)",
    async () => {
      const r = await deepWithSep("s".repeat(101_000));
      expect(r.status).toBe(422);
      expect(JSON.parse(r.text).detail[0].type).toBe("output_too_large");
    },
    SLOW,
  );

  it(
    "long keys repeated down to many leaves are 422 output_too_large (not hundreds of MB)",
    async () => {
      // 40 levels of 1,000-character keys, then 8,000 leaves: every leaf key is 40 KB long.
      let data: Record<string, unknown> = Object.fromEntries(
        Array.from({ length: 8000 }, (_, i) => [`k${i}`, 0]),
      );
      for (let i = 0; i < 40; i++) data = { [`${i}`.padEnd(1000, "k")]: data };
      const r = await post("json-flatten", { data, options: { max_depth: 100 } });
      expect(r.bytes).toBeLessThan(150_000);
      expect(r.status).toBe(422);
      expect(JSON.parse(r.text).detail[0]).toMatchObject({ loc: ["body"], type: "output_too_large" });
    },
    SLOW,
  );
});

describe("json_schema_validate bounds (issues 15 and 19)", () => {
  const validate = async (schema: unknown, instance: unknown) =>
    post("json-schema-validate", { schema, instance });

  it(
    "the probe's attack: 5,000 zeros against 20 failing minimums is bounded (no 13 MB of errors)",
    async () => {
      const schema = { items: { allOf: Array.from({ length: 20 }, (_, i) => ({ minimum: i + 1 })) } };
      const r = await validate(schema, Array(5000).fill(0));
      expect(r.bytes).toBeLessThan(11_000);
      expect(r.status).toBe(422);
      expect(JSON.parse(r.text).detail[0]).toMatchObject({
        loc: ["body", "schema"],
        type: "work_limit_exceeded",
      });
      expect(r.text.length).toBeLessThan(2000);
    },
    SLOW,
  );

  it(
    "lists the first 100 errors and counts them all",
    async () => {
      const r = await validate({ items: { minimum: 1 } }, Array(1000).fill(0));
      expect(r.status).toBe(200);
      const body = JSON.parse(r.text);
      expect(body.valid).toBe(false);
      expect(body.errors).toHaveLength(100);
      expect(body.error_count).toBe(2000); // per item: "items" + "minimum"
      expect(body.errors[0]).toMatchObject({ keyword: "items" });
    },
    SLOW,
  );

  it(
    "a catastrophic-backtracking pattern answers at once on RE2",
    async () => {
      const r = await validate({ pattern: "^(a+)+$" }, `${"a".repeat(40)}!`);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text)).toMatchObject({ valid: false, errors: [{ keyword: "pattern" }] });
      // Native RegExp needs minutes on 40 characters; RE2 is linear. The margin absorbs a busy machine.
      expect(r.ms).toBeLessThan(5000);
      const ok = await validate(
        { pattern: "^(a+)+$", patternProperties: { "^x(y|z)+$": { type: "integer" } } },
        "aaaa",
      );
      expect(JSON.parse(ok.text).valid).toBe(true);
      const props = await validate(
        { patternProperties: { "^(a+)+$": { type: "integer" } } },
        { [`${"a".repeat(40)}!`]: "s", aa: "t" },
      );
      expect(JSON.parse(props.text)).toMatchObject({ valid: false, error_count: 2 });
    },
    SLOW,
  );

  it.each([
    [{ pattern: "^(?=a)a$" }, ["pattern"]],
    [{ properties: { x: { pattern: "(?<!b)a" } } }, ["properties", "x", "pattern"]],
    [{ patternProperties: { "(a)\\1": {} } }, ["patternProperties", "(a)\\1"]],
    // A named backreference: re2js's translation read `\k<n>` as the letters "k<n>".
    [{ pattern: "^(?<n>a)\\k<n>$" }, ["pattern"]],
  ])(
    "a pattern RE2 cannot run (%j) is a 422 pattern_unsupported at its place",
    async (schema, at) => {
      const r = await validate(schema, "a");
      expect(r.status).toBe(422);
      const [item] = JSON.parse(r.text).detail;
      expect(item).toMatchObject({ loc: ["body", "schema", ...at], type: "pattern_unsupported" });
      expect(item.msg).toContain("RE2");
    },
    SLOW,
  );

  it("estimates the size RE2 expands a pattern to", () => {
    for (const [pattern, size] of [
      ["abc", 3],
      ["a{3}", 3],
      ["(?:ab){10}", 40],
      ["[a-z]{1,100}", 199],
      ["(?:x{0,99}){0,9}", 1809],
      ["(?:a.{0,999}z)", 2002],
      ["\\u{1F600}{2}", 2],
      ["(?<name>a)b|c", 6],
      ["^\\d{3}-\\d{4}$", 10],
      // Empty groups are not free: RE2 compiles 1.2 million instructions (308 MB) from this one.
      [`(?:${"()".repeat(400)}){1000}`, 802_000],
    ] as const)
      expect(patternSize(pattern), pattern).toBe(size);
  });

  it(
    "a pattern too large to compile (counted repetition) is a 422 at its place, before any compile",
    async () => {
      // 8.4 KB: compiling it took 2 s and ~200 MB (a Worker has 128 MB).
      const huge = "(?:a.{0,999}z)".repeat(600);
      const r = await validate({ properties: { x: { pattern: huge } } }, { x: "az" });
      expect(r.status).toBe(422);
      const [item] = JSON.parse(r.text).detail;
      expect(item).toMatchObject({
        loc: ["body", "schema", "properties", "x", "pattern"],
        type: "pattern_unsupported",
      });
      expect(item.msg).toContain("too large");
      // Each under the bound, together over it.
      const parts = {
        allOf: Array.from({ length: 6 }, (_, i) => ({ pattern: `${i}${"(?:a.{0,999}z)".repeat(2)}` })),
      };
      const together = await validate(parts, "x");
      expect(together.status).toBe(422);
      expect(JSON.parse(together.text).detail[0].ctx.error).toContain("together");
      // Real-world patterns stay far below: an email-ish pattern, a 256-digit bound.
      const ok = await validate({ pattern: "^[a-z]{1,100}@[a-z]{1,50}\\.[a-z]{2,24}$" }, "ada@example.org");
      expect(JSON.parse(ok.text).valid).toBe(true);
    },
    SLOW,
  );

  it(
    "testing a big pattern on a long string is priced by the pattern's size, so it meets the work budget",
    async () => {
      // An anchored NFA over 1,000 instructions: 1 MB took 6 s, charged as if it were a one-character pattern.
      const r = await validate({ pattern: "a[ab]{999}$" }, `${"ab".repeat(100_000)}c`);
      expect(r.status).toBe(422);
      expect(JSON.parse(r.text).detail[0].type).toBe("work_limit_exceeded");
      const small = await validate({ pattern: "a[ab]{9}$" }, `${"ab".repeat(100_000)}c`);
      expect(small.status).toBe(200);
    },
    SLOW,
  );

  it(
    "a pattern JavaScript itself rejects stays an invalid schema (checked: false), as before",
    async () => {
      const r = await validate({ pattern: "(" }, "a");
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text)).toMatchObject({ valid: false, checked: false, error_count: 1 });
    },
    SLOW,
  );

  it(
    "the library's exponential url format is replaced by a linear check with the same intent",
    async () => {
      const r = await validate({ format: "url" }, `http://${"a".repeat(60)}\u0000`);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).valid).toBe(false);
      expect(r.ms).toBeLessThan(5000);
      for (const [url, valid] of [
        ["https://example.com/a?b=1", true],
        ["ftp://files.example.org", true],
        ["http://10.0.0.1/", false],
        ["mailto:a@b.co", false],
        ["http://localhost/", false],
      ] as const)
        expect(JSON.parse((await validate({ format: "url" }, url)).text).valid, url).toBe(valid);
    },
    SLOW,
  );

  it(
    "exponential $ref expansion and uniqueItems checked again and again stop at the work budget",
    async () => {
      const defs: Record<string, unknown> = { d30: { type: "number" } };
      for (let i = 0; i < 30; i++)
        defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      for (const [schema, instance] of [
        [{ $defs: defs, $ref: "#/$defs/d0" }, 1],
        [
          { allOf: Array.from({ length: 100 }, () => ({ uniqueItems: true })) },
          Array.from({ length: 40_000 }, (_, i) => i),
        ],
      ]) {
        const r = await validate(schema, instance);
        expect(r.status).toBe(422);
        expect(JSON.parse(r.text).detail[0].type).toBe("work_limit_exceeded");
      }
      // Ordinary sizes pass: 40,000 unique items, 2,000 records of 4 fields.
      expect(
        (
          await validate(
            { uniqueItems: true },
            Array.from({ length: 40_000 }, (_, i) => i),
          )
        ).status,
      ).toBe(200);
      const records = Array.from({ length: 2000 }, (_, i) => ({
        id: i,
        name: `n${i}`,
        email: `a${i}@b.co`,
        tags: ["x"],
      }));
      const schema = recordsSchema({ id: { type: "integer" }, email: { format: "email" } });
      const r = await validate(schema, records);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).valid).toBe(true);
    },
    SLOW,
  );

  // The bound is asserted on work units, which are deterministic: a wall-clock limit of 50 ms
  // cannot hold on a 2-core machine running several suites (load average 16 was measured while
  // these were written). The unit is calibrated to 3-6 µs (docs/LIMITS.md), so the budget of a
  // 10 KB input (<= 5,000 + 2 x nodes units) is the figure the issue asks for; wall time is also
  // checked, with a margin wide enough for a loaded machine but far below any super-linear case.
  it(
    "property: no schema and instance of <= 10 KB spends more than its budget or takes seconds",
    () => {
      const patterns = ["^(a+)+$", "(a|aa)+$", "^([a-z]+)*\\d$", "(x+x+)+y", "a{2,5}b", "^\\p{L}+$"];
      const leaf = fc.oneof(
        fc.record({ minimum: fc.integer() }),
        fc.record({ pattern: fc.constantFrom(...patterns) }),
        fc.record({ format: fc.constantFrom("url", "email", "hostname", "uri", "date-time", "ipv6") }),
        fc.record({ uniqueItems: fc.constant(true) }),
        fc.record({ type: fc.constantFrom("string", "number", "object", "array") }),
        fc.record({ $ref: fc.constantFrom("#", "#/$defs/a", "#/$defs/b") }),
      );
      const schema = fc.letrec((tie) => ({
        node: fc.oneof(
          { depthSize: "small" },
          leaf,
          fc.record({ allOf: fc.array(tie("node"), { maxLength: 4 }) }),
          fc.record({ anyOf: fc.array(tie("node"), { maxLength: 4 }) }),
          fc.record({ items: tie("node") }),
          fc.record({
            patternProperties: fc.dictionary(fc.constantFrom(...patterns), tie("node"), { maxKeys: 2 }),
          }),
          fc.record({ additionalProperties: tie("node") }),
        ),
      })).node;
      const withDefs = fc.tuple(schema, schema, schema).map(([root, a, b]) => ({
        ...(root as object),
        $defs: { a: { allOf: [a, { $ref: "#/$defs/b" }, { $ref: "#/$defs/b" }] }, b: { anyOf: [b, b] } },
      }));
      const instance = fc.oneof(
        fc.jsonValue({ maxDepth: 4 }),
        fc.nat({ max: 4000 }).map((n) => Array(n).fill(0)),
        fc.nat({ max: 300 }).map((n) => `${"a".repeat(n)}!`),
        fc.nat({ max: 1000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
        fc
          .nat({ max: 400 })
          .map((n) =>
            Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${"a".repeat(i % 30)}${i}`, i])),
          ),
      );
      let worst = 0;
      fc.assert(
        fc.property(withDefs, instance, (s, inst) => {
          const text = JSON.stringify({ schema: s, instance: inst });
          fc.pre(text.length <= 10_240);
          // Anything but a refusal must be a library error for a bad schema.
          const { used, budget, ms } = meteredRun(s, inst, (e) => /Unresolved \$ref/.test(e.message));
          worst = Math.max(worst, ms);
          expect(used).toBeLessThanOrEqual(budget);
          expect(budget).toBeLessThanOrEqual(WORK_BUDGET_BASE + WORK_BUDGET_PER_NODE * 10_240);
          expect(ms).toBeLessThan(2000);
        }),
        { numRuns: 200, seed: 42 },
      );
      expect(worst).toBeGreaterThan(0);
    },
    SLOW,
  );
});

describe("property: no request of <= 100 KB to any skill yields a 5xx or more than 8 MB", () => {
  // Values shaped like each skill's own fields, plus the amplifiers found so far.
  const big = fc.oneof(
    fc.jsonValue({ maxDepth: 5 }),
    fc.string({ maxLength: 2000 }),
    fc.nat({ max: 40_000 }).map((n) => "ab. ".repeat(n / 4)),
    fc.nat({ max: 5000 }).map((n) => Array(n).fill(0)),
    fc.nat({ max: 60 }).map((n) => JSON.parse(`${'{"k":'.repeat(n)}1${"}".repeat(n)}`)),
    fc.integer({ min: -5, max: 1_000_000 }),
    fc.constantFrom(
      "x".repeat(16),
      "^(a+)+$",
      "https://example.com/?utm_source=x&a=1",
      "<p>x</p>".repeat(500),
    ),
  );

  it(
    "random bodies with each skill's field names",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...skills.filter((s) => s.kind === "utility")),
          fc.array(big, { maxLength: 4 }),
          async (skill, values) => {
            const fields = Object.keys(skill.example_request as object);
            const body: Record<string, unknown> = { ...(skill.example_request as object) };
            fields.forEach((f, i) => {
              if (i < values.length) body[f] = values[i];
            });
            if (skill.id === "json_flatten") body.options = { sep: values[2] ?? ".", max_depth: 1000 };
            const text = JSON.stringify(body);
            fc.pre(text.length <= 100_000);
            const res = await postJson(skill.endpoint, text);
            const out = await res.arrayBuffer();
            expect(res.status, `${skill.id} -> ${res.status}`).toBeLessThan(500);
            expect(out.byteLength).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
          },
        ),
        { numRuns: 150, seed: 42 },
      );
    },
    SLOW * 3,
  );

  it(
    "the known amplifiers at 100 KB: deep flatten with a long sep, schema errors, diff hunks",
    async () => {
      let data: unknown = Array.from({ length: 500 }, (_, i) => i);
      for (let i = 0; i < 190; i++) data = { [`k${i}`.padEnd(300, "x")]: data };
      const cases: [string, unknown][] = [
        ["json-flatten", { data, options: { sep: "x".repeat(1000), max_depth: 1000 } }],
        [
          "json-schema-validate",
          {
            schema: { items: { allOf: Array.from({ length: 20 }, () => ({ minimum: 1 })) } },
            instance: Array(45_000).fill(0),
          },
        ],
        ["text-diff", { a: "a\n".repeat(16_000), b: "b\na\n".repeat(8_000) }],
      ];
      for (const [slug, body] of cases) {
        const r = await post(slug, body);
        expect(r.bytes, slug).toBeLessThanOrEqual(110_000);
        expect(r.status, slug).toBeLessThan(500);
        expect(r.text.length, slug).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
      }
    },
    SLOW,
  );
});

describe("schema work budget", () => {
  it("grows with the request, so large ordinary validations still pass", () => {
    const records = Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `n${i}` }));
    const r = meteredValidation({ items: { properties: { id: { type: "integer" } } } }, records, "2020-12");
    expect(r.valid).toBe(true);
    expect(r.budget).toBeGreaterThan(WORK_BUDGET_BASE + WORK_BUDGET_PER_NODE * 15_000);
    expect(r.used).toBeLessThan(r.budget / 2);
  });

  it("validating the same schema object again costs the same: the meter never instruments the caller's copy", () => {
    const schema = { items: { type: "object", properties: { id: { type: "integer" } } } } as Parameters<
      typeof meteredValidation
    >[0];
    const records = Array.from({ length: 500 }, (_, i) => ({ id: i }));
    const first = meteredValidation(schema, records, "2020-12");
    for (let i = 0; i < 5; i++) expect(meteredValidation(schema, records, "2020-12").used).toBe(first.used);
  });

  it("a typical record schema over 1,000 and 20,000 items validates through the skill, not a 422", async () => {
    const schema = recordsSchema({
      id: { type: "integer", minimum: 0 },
      tags: { type: "array", items: { type: "string" } },
    });
    for (const n of [1000, 20_000]) {
      const instance = Array.from({ length: n }, (_, i) => ({ id: i, name: `item ${i}`, tags: ["x", "y"] }));
      const res = await postJson("/api/skills/json-schema-validate", { instance, schema });
      expect(res.status, `${n} items`).toBe(200);
      expect(await res.json(), `${n} items`).toMatchObject({ valid: true, checked: true });
    }
  }, 60_000);
});

// Audit of the other skills (docs/LIMITS.md): each finding reproduced on its own.
describe("super-linear work found in the audit", () => {
  it(
    "url_normalize trims trailing host dots in linear time (the regex was quadratic)",
    async () => {
      // Before: /\.+$/ retried from every dot, 8,000 dots took 57 ms, 32,000 took 2.1 s in node.
      const host = `a${".".repeat(7900)}b`;
      const started = performance.now();
      for (let i = 0; i < 20; i++) trimTrailingDots(host);
      expect(performance.now() - started).toBeLessThan(500);
      expect(trimTrailingDots("example.com...")).toBe("example.com");
      expect(trimTrailingDots(host)).toBe(host);
      const r = await post("url-normalize", { url: `https://${host}/` });
      expect(r.status).toBe(200);
      expect((await post("url-normalize", { url: "https://Example.com../x" })).text).toContain(
        '"host":"example.com"',
      );
    },
    SLOW,
  );

  it("html_clean's script-link filter is linear on 400 KB of hostile '](' runs", () => {
    // Before: a regex's `<…>` branch rescanned to the end from every occurrence (112 KB: 830 ms).
    for (const unit of [
      "](<javascript:",
      "](javascript:(",
      "](<x",
      "](&#x09;&#x09;",
      "](java\\",
      "\\](javascript:",
    ]) {
      // Closed by a last "](y)": an alt or link text of such runs, as mdream escapes it.
      const hostile = `![${unit.repeat(Math.floor(400_000 / unit.length))}](y)`;
      const started = performance.now();
      neutralizeScriptLinks(hostile);
      expect(performance.now() - started, unit).toBeLessThan(2000);
    }
    // Every script target disarmed, including JavaScript's Unicode spaces before the scheme.
    expect(neutralizeScriptLinks("[a](javascript:alert(1)) [b](<data:text/html,x>) [c](https://x.y)")).toBe(
      "[a](#) [b](#) [c](https://x.y)",
    );
    expect(neutralizeScriptLinks("[a](\u00a0JavaScript:x)")).toBe("[a](#)");
    // A long one goes whole; one whose end cannot be told keeps its text, as a fragment.
    expect(neutralizeScriptLinks(`[a](javascript:${"x".repeat(30_000)})`)).toBe("[a](#)");
    expect(neutralizeScriptLinks("[a](<javascript:x] y")).toBe("[a](<#x] y");
  });
});
