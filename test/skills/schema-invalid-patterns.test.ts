import { describe, expect, it } from "vitest";
import { MAX_PATTERN_SIZE, patternSize } from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

// A pattern JavaScript rejects makes the caller's schema invalid (200, valid:false, checked:false,
// one keyword:"schema" error), whatever compiling it would have cost had it been valid: the native
// syntax check runs before the estimate refuses it, where the check is cheap (its text is short).
const validate = async (schema: unknown, instance: unknown) => {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const expectInvalidSchema = (r: { status: number; body: Record<string, unknown> }) => {
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ valid: false, checked: false, error_count: 1 });
  const errors = r.body.errors as { keyword: string; message: string }[];
  expect(errors).toHaveLength(1);
  expect(errors[0]?.keyword).toBe("schema");
  expect(errors[0]?.message).toMatch(/^Invalid schema: /);
};

const expectTooLarge = (
  r: { status: number; body: Record<string, unknown> },
  error = "compiling it costs",
) => {
  expect(r.status).toBe(422);
  const [item] = (r.body as { detail: { type: string; msg: string; ctx: { error: string } }[] }).detail;
  expect(item?.type).toBe("pattern_unsupported");
  expect(item?.msg).toContain("too large");
  expect(item?.ctx.error).toContain(error);
};

const BOGUS = "\\p{Bogus}".repeat(101);
const NOTHING_TO_REPEAT = "a{1000}{1000}";

describe("an invalid pattern is an invalid schema whatever its estimate", () => {
  it("the examples are invalid in JavaScript and estimated past one pattern's bound", () => {
    for (const pattern of [BOGUS, NOTHING_TO_REPEAT]) {
      expect(() => new RegExp(pattern, "u")).toThrow(SyntaxError);
      expect(patternSize(pattern)).toBeGreaterThan(MAX_PATTERN_SIZE);
    }
  });

  it.each([
    ["101 unknown properties \\p{Bogus}", BOGUS],
    ["nothing to repeat, a{1000}{1000}", NOTHING_TO_REPEAT],
    ["an unclosed group after a large repetition", "(?:a{1000}){1000}("],
  ])("%s: 200, checked:false (it was 422 too large)", async (_, pattern) => {
    expectInvalidSchema(await validate({ type: "string", pattern }, "a"));
    expectInvalidSchema(await validate({ patternProperties: { [pattern]: true } }, { a: 1 }));
  });

  it("one that would take the schema's patterns past their total is invalid too", async () => {
    const big = (i: number) => ({ pattern: `^a{1000}b{1000}c{1000}d{1000}${i}$` }); // ~4,000 units each
    const four = [0, 1, 2, 3].map(big);
    expectTooLarge(await validate({ allOf: [...four, big(4)] }, "a"), "together");
    const unclosed = `(${"a".repeat(4_500)}`; // within one pattern's bound, past the total
    expect(patternSize(unclosed)).toBeLessThan(MAX_PATTERN_SIZE);
    expectInvalidSchema(await validate({ allOf: [...four, { pattern: unclosed }] }, "a"));
  });

  it("a valid pattern past the bound is still the 422, and a long one is refused before the native check", async () => {
    // Short: checked natively (V8 does not expand counted repetition), then refused by its estimate.
    expectTooLarge(await validate({ pattern: "(?:a{1000}){1000}" }, "a"));
    // Long (4,800 property classes, 81 KB: the check alone took 1 s): refused from its estimate
    // alone, so the syntax error at its end is never read.
    const long = "[\\p{L}\\p{N}\\p{M}]".repeat(4_800);
    expectTooLarge(await validate({ pattern: long }, "a"));
    expectTooLarge(await validate({ pattern: `${long}(` }, "a"));
  });
});
