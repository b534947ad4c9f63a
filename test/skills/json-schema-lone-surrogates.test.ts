import { describe, expect, it } from "vitest";
import { lookupSize } from "../../src/skills/lib/schema-work";
import { postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

// The Unicode audit: a key holding a lone surrogate ("\ud800", which JSON allows) in the instance or
// the schema made the library's encodeURI throw, and the answer was "Invalid schema: URI malformed",
// checked: false, whatever the schema said. Locations now name such a key as U+FFFD (%EF%BF%BD);
// the keywords still test the key as sent.

type Answer = {
  valid: boolean;
  checked: boolean;
  error_count: number;
  errors: { instance_path: string; keyword: string; schema_path: string; message: string }[];
};

/** A lone surrogate as JSON.stringify writes one ("\ud800"), anywhere in an answer's text. */
const LONE = /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i;

const validate = async (schema: unknown, instance: unknown) => {
  const res = await postJson("/api/skills/json-schema-validate", { schema, instance });
  expect(res.status).toBe(200);
  const text = await res.text();
  // Strict decoders (serde_json, Swift) refuse an answer holding one, whatever the request held.
  expect(text).not.toMatch(LONE);
  return JSON.parse(text) as Answer;
};

const FFFD = "%EF%BF%BD";

describe("json_schema_validate with lone surrogates in keys", () => {
  it(
    "checks an instance whose key is a lone surrogate (the audit's case: valid, not a schema error)",
    async () => {
      const schema = {
        type: "object",
        properties: { o: { type: "object", additionalProperties: { type: "string" } } },
      };
      expect(await validate(schema, { o: { "\ud800": "s" } })).toMatchObject({
        valid: true,
        checked: true,
        error_count: 0,
      });
      const wrong = await validate(schema, { o: { "\ud800": 1 } });
      expect(wrong).toMatchObject({ valid: false, checked: true });
      expect(wrong.errors).toContainEqual(
        expect.objectContaining({
          instance_path: `#/o/${FFFD}`,
          keyword: "type",
          schema_path: "#/properties/o/additionalProperties/type",
        }),
      );
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "additionalProperties: false, patternProperties and unevaluatedProperties name the key as U+FFFD",
    async () => {
      const extra = await validate({ type: "object", additionalProperties: false }, { a: 1, "\ud800": 1 });
      expect(extra).toMatchObject({ valid: false, checked: true });
      expect(extra.errors.map((e) => e.instance_path)).toContain(`#/${FFFD}`);

      const pattern = await validate({ patternProperties: { "^x": { type: "string" } } }, { "x\ud800": 1 });
      expect(pattern).toMatchObject({ valid: false, checked: true });
      expect(pattern.errors).toContainEqual(
        expect.objectContaining({ instance_path: `#/x${FFFD}`, keyword: "type" }),
      );

      expect(await validate({ unevaluatedProperties: false }, { "\udc00": 1 })).toMatchObject({
        valid: false,
        checked: true,
      });
      expect(await validate({ unevaluatedProperties: false }, {})).toMatchObject({
        valid: true,
        checked: true,
      });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "propertyNames tests the key as sent, not its U+FFFD spelling",
    async () => {
      // "\ud800x" is two characters; "\ud800" is not the character U+FFFD.
      const long = await validate({ propertyNames: { maxLength: 1 } }, { "\ud800x": 1 });
      expect(long).toMatchObject({ valid: false, checked: true });
      // The message quotes the key as the paths name it.
      expect(long.errors[0]?.message).toBe('Property name "\ufffdx" does not match schema.');
      const notFffd = { propertyNames: { not: { const: "\ufffd" } } };
      expect(await validate(notFffd, { "\ud800": 1 })).toMatchObject({ valid: true, checked: true });
      expect(await validate(notFffd, { "\ufffd": 1 })).toMatchObject({ valid: false, checked: true });
    },
    SKILL_TEST_TIMEOUT,
  );

  it(
    "a schema's property or $defs name that is a lone surrogate is indexed, and a $ref finds it",
    async () => {
      const props = { additionalProperties: false, properties: { "\ud800": { type: "string" } } };
      expect(await validate(props, {})).toMatchObject({ valid: true, checked: true });
      expect(await validate(props, { "\ud800": "s" })).toMatchObject({ valid: true, checked: true });
      const wrong = await validate(props, { "\ud800": 1 });
      expect(wrong).toMatchObject({ valid: false, checked: true });
      expect(wrong.errors).toContainEqual(
        expect.objectContaining({ instance_path: `#/${FFFD}`, schema_path: `#/properties/${FFFD}/type` }),
      );

      // An invalid schema's message quotes the key the same way.
      const bad = await validate({ properties: { "\ud800": 5 } }, 1);
      expect(bad).toMatchObject({ valid: false, checked: false });
      expect(bad.errors[0]?.message).toBe(
        "Invalid schema: #/properties/\ufffd: a schema must be an object or a boolean",
      );

      const ref = { $defs: { "\ud800": { type: "string" } }, $ref: "#/$defs/\ud800" };
      expect(await validate(ref, "s")).toMatchObject({ valid: true, checked: true });
      expect(await validate(ref, 1)).toMatchObject({ valid: false, checked: true });
    },
    SKILL_TEST_TIMEOUT,
  );

  it("the index of subschemas counts a lone surrogate as the U+FFFD the library now writes", () => {
    const size = (key: string) => lookupSize({ properties: { [key]: { properties: { [key]: {} } } } });
    expect(size("a\ud800b")).toEqual(size("a\ufffdb"));
    expect(size("\udc00")).toEqual(size("\ufffd"));
  });
});
