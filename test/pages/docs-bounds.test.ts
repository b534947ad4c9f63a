import { describe, expect, it } from "vitest";
import { skills } from "../../src/skills/registry";
import { bodySchema } from "../../src/skills/schema-docs";
import { call } from "../helpers";

interface Row {
  type: string;
  required: string;
  bounds: string;
}

const fromHtml = (s: string) =>
  s
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

/** The "Request body" table of a docs page: field name → its cells, as text. */
async function fieldTable(slug: string): Promise<Map<string, Row>> {
  const html = await (await call(`/docs/${slug}`)).text();
  const rows = new Map<string, Row>();
  const row = /<tr><td><code>([^<]*)<\/code><\/td><td>([^<]*)<\/td><td>([^<]*)<\/td><td>([^<]*)<\/td>/g;
  for (const m of html.matchAll(row)) {
    rows.set(fromHtml(m[1] ?? ""), {
      type: fromHtml(m[2] ?? ""),
      required: m[3] ?? "",
      bounds: fromHtml(m[4] ?? ""),
    });
  }
  return rows;
}

type Schema = Record<string, unknown>;

/**
 * Every bound a schema states (maxLength, minimum, maximum, enum, const, default), with the field it
 * belongs to: walked through properties (nested ones as `options.sep`), anyOf branches and items,
 * wherever they sit, so a bound the page's own walk skips is found here.
 */
function statedBounds(schema: Schema, field = ""): { field: string; text: string }[] {
  const found: { field: string; text: string }[] = [];
  const at = (text: string) => found.push({ field, text });
  if (field) {
    if (typeof schema.maxLength === "number") at(`..${schema.maxLength}`);
    if (typeof schema.minimum === "number") at(`${schema.minimum}..`);
    if (typeof schema.maximum === "number") at(`..${schema.maximum}`);
    for (const v of (schema.enum as unknown[] | undefined) ?? []) at(JSON.stringify(v));
    if ("const" in schema) at(JSON.stringify(schema.const));
    if ("default" in schema) at(`default ${JSON.stringify(schema.default)}`);
  }
  for (const [name, sub] of Object.entries((schema.properties as Record<string, Schema>) ?? {}))
    found.push(...statedBounds(sub, field ? `${field}.${name}` : name));
  for (const b of (schema.anyOf as Schema[] | undefined) ?? []) found.push(...statedBounds(b, field));
  if (schema.items && typeof schema.items === "object")
    found.push(...statedBounds(schema.items as Schema, field));
  return found;
}

describe("each skill's docs page states its body's bounds", () => {
  it("every bound of each skill's JSON Schema, in the row of its field, for all 15 skills", async () => {
    expect(skills).toHaveLength(15);
    let checked = 0;
    for (const s of skills) {
      const table = await fieldTable(s.slug);
      for (const { field, text } of statedBounds(bodySchema(s))) {
        // ai_detector's top-level anyOf ("text or url", minLength 1 each) reaches the same rows.
        const row = table.get(field);
        expect(row, `${s.id}: no row for ${field}`).toBeDefined();
        expect(row?.bounds, `${s.id} ${field}`).toContain(text);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it("nullable fields keep their limits, literal unions read as integer values, options list their keys", async () => {
    const ai = await fieldTable("ai-detector");
    for (const field of ["url", "text"])
      expect(ai.get(field)).toEqual({
        type: "string or null",
        required: "no",
        bounds: "length 0..8000; default null",
      });
    const uuid = await fieldTable("uuid-mint");
    expect(uuid.get("version")).toEqual({
      type: "integer",
      required: "no",
      bounds: "one of 1, 4; default 4",
    });
    const flatten = await fieldTable("json-flatten");
    expect(flatten.get("options")?.type).toBe("object or null");
    expect([...flatten.keys()]).toEqual(["data", "options", "options.sep", "options.max_depth"]);
    const flattenPage = await (await call("/docs/json-flatten")).text();
    expect(fromHtml(flattenPage)).toContain('Default ".".');
    expect(flattenPage).toContain("default 12.");
    const diff = await fieldTable("text-diff");
    expect(diff.get("options.mode")?.bounds).toBe('one of "char", "word", "line"');
    expect((await fieldTable("seo")).get("keywords")?.type).toBe("array of string or null");
  });
});
