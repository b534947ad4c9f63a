import { describe, expect, it } from "vitest";
import { nativeCheckMicroseconds } from "../../src/skills/lib/schema-patterns";
import { meteredValidation, WorkLimitExceeded } from "../../src/skills/lib/schema-work";
import { postJson } from "../helpers";

// `format: "regex"` checks an instance string with the native `new RegExp(s, "u")`, whose cost is
// what the string holds (a Unicode property is ~60 µs to read), not its length. Counted in units:
// nothing here times anything.
const SLOW = 120_000;
/** What one work unit costs at least (schema-work.ts, docs/LIMITS.md). */
const MICROSECONDS_PER_WORK_UNIT = 3;

const validate = async (schema: unknown, instance: unknown) => {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("format: regex is charged what checking the string costs", () => {
  it(
    "4,800 [\\p{L}\\p{N}\\p{M}] (81 KB, one call) is a 422 before it is read (it was 200 after 1.3 s)",
    async () => {
      const repro = "[\\p{L}\\p{N}\\p{M}]".repeat(4800);
      const r = await validate({ format: "regex" }, repro);
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ detail: [{ loc: ["body", "schema"], type: "work_limit_exceeded" }] });
      expect(() => meteredValidation({ format: "regex" }, repro, "2020-12")).toThrow(WorkLimitExceeded);
      // 14,400 properties: its check alone is counted at 1.4 s (it took 0.9 to 1.3), far past the
      // budget of a two-node request (5,012 units, 15 ms).
      expect(nativeCheckMicroseconds(repro)).toBeGreaterThan(1_000_000);
    },
    SLOW,
  );

  it("charges a checked string what its check costs, converted to work units", () => {
    const pattern = "^[\\p{L}\\p{N}]+(?:-\\p{L}+)*$";
    const checked = meteredValidation({ format: "regex" }, pattern, "2020-12");
    const plain = meteredValidation({ type: "string" }, pattern, "2020-12");
    expect(checked.valid).toBe(true);
    // Three properties, at most ~100 µs each: 100 units (it was charged 0.5 + 28 / 1,024).
    expect(checked.used - plain.used).toBeGreaterThan(90);
    expect(checked.used - plain.used).toBeGreaterThanOrEqual(
      nativeCheckMicroseconds(pattern) / MICROSECONDS_PER_WORK_UNIT,
    );
  });

  it.each([
    ["an ordinary pattern", "^[a-z0-9_-]{3,16}$", true],
    ["a Unicode property", "^\\p{Lu}\\p{Ll}+$", true],
    ["an unclosed group", "^(a", false],
    ["an unclosed class", "[a-z", false],
    ["a backreference to nothing in u mode", "\\k<x>", false],
    ["a \\Z anchor (the library refuses it)", "^a\\Z", false],
    // V8 does not expand counted repetition: charged once, not 131,000 times.
    ["counted repetition", "^.{0,65535}$", true],
  ])("%s still validates as before: %s", async (_, instance, valid) => {
    const r = await validate({ format: "regex" }, instance);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ valid, checked: true });
  });

  it("an array of ordinary regex strings stays within its budget; one of many properties does not", async () => {
    const items = { type: "array", items: { format: "regex" } };
    const ordinary = Array.from({ length: 2_000 }, (_, i) => `^item-${i}-[a-z]{2,8}(?:\\.[0-9]+)?$`);
    const r = await validate(items, ordinary);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ valid: true, error_count: 0 });
    // Each string alone is small; together they are ~370 ms of property sets for a 13,000-unit
    // budget: what a per-string bound would have let through.
    const dear = Array.from({ length: 2_000 }, (_, i) => `^[\\p{L}\\p{N}\\p{M}]${i}$`);
    const refused = await validate(items, dear);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ detail: [{ type: "work_limit_exceeded" }] });
  });
});
