import { describe, expect, it } from "vitest";
import { inputForToolCalling, outputForToolCalling } from "../../src/mcp/tool-calling-schema";

// Schemas the registry does not hold today but a new skill could: the copy must stay free of what
// the converters refuse wherever it sits, and mean the same where it can.
describe("the tool-calling copy of a schema", () => {
  it("turns every boolean subschema into an object one, at any depth", () => {
    const copy = inputForToolCalling({
      type: "object",
      properties: {
        any: true,
        list: { type: "array", items: false, prefixItems: [true, { type: "string" }] },
        map: { type: "object", additionalProperties: { type: "object", additionalProperties: false } },
        either: { anyOf: [true, { type: "object", unevaluatedProperties: false }] },
      },
      additionalProperties: false,
    });
    expect(copy).toEqual({
      type: "object",
      properties: {
        any: {},
        list: { type: "array", items: { not: {} }, prefixItems: [{}, { type: "string" }] },
        map: { type: "object", additionalProperties: { type: "object" } },
        either: { anyOf: [{}, { type: "object" }] },
      },
    });
    expect(
      outputForToolCalling({ type: "object", properties: { a: false }, additionalProperties: true }),
    ).toEqual({
      type: "object",
      properties: { a: { not: {} } },
      additionalProperties: {},
    });
  });

  it("writes a choice of numbers as a number type naming the values; string choices and examples stay", () => {
    const copy = inputForToolCalling({
      type: "object",
      properties: {
        ratio: { enum: [0.5, 1], default: 1 },
        level: { const: 3 },
        mode: { type: "string", enum: ["a", "b"] },
        mixed: { anyOf: [{ const: 1 }, { type: "string" }] },
      },
      examples: [{ level: 3 }],
    });
    expect(copy.properties).toEqual({
      ratio: { type: "number", default: 1, description: "Allowed values: 0.5 or 1 (default 1)." },
      level: { type: "integer", description: "Allowed values: 3." },
      mode: { type: "string", enum: ["a", "b"] },
      mixed: { anyOf: [{ type: "integer", description: "Allowed values: 1." }, { type: "string" }] },
    });
    expect(copy.examples).toEqual([{ level: 3 }]);
  });
});
