import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// An invalid schema is answered as one `keyword: "schema"` error (valid: false, checked: false).
// Its message lists the structural problems found before validation; a reviewer found that each
// problem carried its whole path, so one long key repeated into every problem of its subtree.
const validate = async (schema: unknown, instance: unknown = 1) => {
  const text = JSON.stringify({ instance, schema });
  const res = await postJson("/api/skills/json-schema-validate", text);
  const out = await res.text();
  return { status: res.status, text: out, requestBytes: text.length };
};

type Answer = {
  valid: boolean;
  checked: boolean;
  error_count: number;
  errors: { instance_path: string; keyword: string; schema_path: string; message: string }[];
};

/** `properties` of n members that each have an unknown type: one problem apiece. */
const badProps = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 1 }]));

describe("json_schema_validate's invalid-schema answer", () => {
  it(
    "lists ordinary problems as before, in order, joined by '; '",
    async () => {
      const r = await validate({
        type: "strin",
        required: "name",
        properties: { a: { type: 1 }, b: { items: 3 } },
        anyOf: {},
      });
      expect(r.status).toBe(200);
      const body = JSON.parse(r.text) as Answer;
      expect(body).toMatchObject({ valid: false, checked: false, error_count: 1 });
      expect(body.errors).toEqual([
        {
          instance_path: "#",
          keyword: "schema",
          schema_path: "#",
          message:
            'Invalid schema: #/type: unknown type "strin"; #/required: must be an array of strings; ' +
            "#/properties/a/type: unknown type 1; #/properties/b/items: a schema must be an object or a boolean; " +
            "#/anyOf: must be an array",
        },
      ]);
    },
    SKILL_TEST_TIMEOUT,
  );

  it.each([
    [60, 40],
    [2000, 1980],
  ])(
    "a 2,000,000-character key above %i bad properties: a small answer, the key shortened, the rest counted",
    async (n, more) => {
      const key = "k".repeat(2_000_000);
      const r = await validate({ properties: { [key]: { properties: badProps(n) } } });
      expect(r.requestBytes).toBeGreaterThan(2_000_000);
      // Before: n = 60 built a 120 MB message (422 output_too_large), n = 2,000 a 500 (RangeError).
      expect(r.status).toBe(200);
      expect(r.text.length).toBeLessThan(5_000);
      const body = JSON.parse(r.text) as Answer;
      expect(body).toMatchObject({ valid: false, checked: false, error_count: 1 });
      expect(body.errors).toHaveLength(1);
      const { message, keyword } = body.errors[0] ?? { message: "", keyword: "" };
      expect(keyword).toBe("schema");
      const shortKey = `${"k".repeat(63)}…`;
      expect(
        message.startsWith(`Invalid schema: #/properties/${shortKey}/properties/p0/type: unknown type 1; `),
      ).toBe(true);
      expect(message).toContain(
        `#/properties/${shortKey}/properties/p19/type: unknown type 1; and ${more} more`,
      );
      expect(message).not.toContain("p20/");
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a subtree of 200,000 problems is counted, not spread into its parent's list (stack overflow)",
    async () => {
      const r = await validate({ properties: { a: { properties: badProps(200_000) } } });
      expect(r.status).toBe(200);
      expect(r.text.length).toBeLessThan(5_000);
      const body = JSON.parse(r.text) as Answer;
      expect(body).toMatchObject({ valid: false, checked: false, error_count: 1 });
      expect(body.errors[0]?.message).toMatch(/p19\/type: unknown type 1; and 199980 more$/);
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "an unknown type's long value is shortened too",
    async () => {
      const r = await validate({ type: "t".repeat(100_000) });
      expect(r.status).toBe(200);
      expect(r.text.length).toBeLessThan(1_000);
      const body = JSON.parse(r.text) as Answer;
      expect(body.errors[0]?.message).toBe(`Invalid schema: #/type: unknown type "${"t".repeat(62)}…`);
    },
    SKILL_TEST_TIMEOUT,
  );
});
