import { describe, expect, it } from "vitest";
import { nativeCheckMicroseconds } from "../../src/skills/lib/schema-patterns";
import { postJson } from "../helpers";

/**
 * Named groups cost V8's syntax check time quadratic in their number (duplicate names are allowed
 * in workerd): 20,000 `(?<a>x)` with 20,000 `\k<a>` held the isolate 7–16 s, priced by length alone
 * at a few ms. The estimate counts them, so such a pattern is refused before the check runs.
 */
const dup = (groups: number, references: number) =>
  `(?:${Array.from({ length: groups }, () => "(?<a>x)").join("|")})${"\\k<a>".repeat(references)}`;

async function validate(schema: unknown, instance: unknown) {
  const res = await postJson("/api/skills/json-schema-validate", JSON.stringify({ schema, instance }));
  return { status: res.status, body: await res.json<Record<string, unknown>>() };
}

describe("json_schema_validate: named groups", () => {
  it("the native check's estimate grows with groups × references, not with length alone", () => {
    const big = dup(20_000, 20_000);
    expect(nativeCheckMicroseconds(big)).toBeGreaterThan(1_000_000);
    // Length alone (0.03 µs a character) said ~8 ms.
    expect(big.length * 0.03).toBeLessThan(10_000);
    expect(nativeCheckMicroseconds("^(?<y>\\d{4})-(?<m>\\d{2})$")).toBeLessThan(10);
  });

  it("as a schema pattern: refused as too large, its native check estimated past the 20 ms it may run first", async () => {
    expect(nativeCheckMicroseconds(dup(20_000, 20_000))).toBeGreaterThan(20_000);
    const { status, body } = await validate({ type: "string", pattern: dup(20_000, 20_000) }, "a");
    expect(status).toBe(422);
    expect(JSON.stringify(body)).toMatch(/pattern_unsupported/);
  });

  it("as a format: regex string: charged past the budget (422), never answered unchecked", async () => {
    const { status, body } = await validate({ format: "regex" }, `${dup(20_000, 20_000)}2`);
    expect(status).toBe(422);
    expect(JSON.stringify(body)).toMatch(/work_limit_exceeded/);
  });

  it("distinct names cost what their characters do; a name spelled with an escape is not a new one", async () => {
    const distinct =
      Array.from({ length: 900 }, (_, i) => `(?<g${i}>x)`).join("") +
      Array.from({ length: 900 }, (_, i) => `\\k<g${i}>`).join("");
    expect(nativeCheckMicroseconds(distinct)).toBeLessThan(1_000);
    expect((await validate({ format: "regex" }, distinct)).body).toMatchObject({ valid: true });
    // (?<\u0061>x) is a group named "a": written so, it shares the bucket of every escaped name.
    const escaped = `(?:${Array.from({ length: 20_000 }, (_, i) => (i % 2 ? "(?<a>x)" : "(?<\\u0061>x)")).join("|")})`;
    expect(nativeCheckMicroseconds(escaped)).toBeGreaterThan(20_000);
    // An unclosed name, repeated, is read no further than a name can be.
    expect(nativeCheckMicroseconds("(?<".repeat(200_000))).toBeGreaterThan(0);
  });

  it("ordinary named groups still validate", async () => {
    const schema = { type: "string", pattern: "^(?<y>\\d{4})-(?<m>\\d{2})$" };
    expect((await validate(schema, "2024-01")).body).toMatchObject({ valid: true, checked: true });
    expect((await validate(schema, "2024-1")).body).toMatchObject({ valid: false, checked: true });
    expect((await validate({ format: "regex" }, "(?<y>\\d{4})\\k<y>")).body).toMatchObject({ valid: true });
  });
});
