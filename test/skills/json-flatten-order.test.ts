import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";

/** The answer's `flat` exactly as written (JSON.parse of it would list integer-like keys first again). */
const flatText = async (body: string) => {
  const res = await postJson("/api/skills/json-flatten", body);
  expect(res.status).toBe(200);
  const text = await res.text();
  const start = text.indexOf('"flat":') + '"flat":'.length;
  return text.slice(start, text.indexOf(',"sep":', start));
};

// A document as written: objects as their entries in order, so the test knows their order.
type Doc = null | boolean | number | string | { items: Doc[] } | { entries: [string, Doc][] };

const textOf = (d: Doc): string =>
  d !== null && typeof d === "object"
    ? "items" in d
      ? `[${d.items.map(textOf).join(",")}]`
      : `{${d.entries.map(([k, v]) => `${JSON.stringify(k)}:${textOf(v)}`).join(",")}}`
    : JSON.stringify(d);

/** Path → leaf text in document order (a later duplicate path keeps the first one's place). */
function pathsOf(d: Doc, sep: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (v: Doc, path: string | undefined) => {
    const children =
      v !== null && typeof v === "object"
        ? "items" in v
          ? v.items.map((x, i) => [String(i), x] as const)
          : v.entries
        : [];
    if (children.length === 0) {
      if (path !== undefined) out.set(path, textOf(v));
      else if (v === null || typeof v !== "object") out.set("", textOf(v)); // a scalar root
      return;
    }
    for (const [k, x] of children) walk(x, path === undefined ? k : path + sep + k);
  };
  walk(d, undefined);
  return out;
}

const INTEGER_LIKE = /^(?:0|[1-9]\d*)$/;

describe("json_flatten answers its paths in document order", () => {
  it("a root array's scalar after a container stays after it", async () => {
    expect(await flatText('{"data":[{"id":1},"x",[true]]}')).toBe('{"0.id":1,"1":"x","2.0":true}');
  });

  it("a separator that makes a path integer-like does not move it first", async () => {
    expect(await flatText('{"data":{"a":{"b":1},"x":[[5,6]]},"options":{"sep":""}}')).toBe(
      '{"ab":1,"x00":5,"x01":6}',
    );
    expect(await flatText('{"data":[{"a":1},[7]],"options":{"sep":"1"}}')).toBe('{"01a":1,"110":7}');
  });

  it("keeps integers past 2^53 digit for digit in that order", async () => {
    expect(await flatText('{"data":[{"id":12345678901234567890},-9007199254740993]}')).toBe(
      '{"0.id":12345678901234567890,"1":-9007199254740993}',
    );
  });

  it("in random documents whose object keys are not integer-like (arrays anywhere)", async () => {
    const key = fc.string({ maxLength: 3 }).filter((k) => !INTEGER_LIKE.test(k));
    const { doc } = fc.letrec<{ doc: Doc }>((tie) => ({
      doc: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constantFrom<Doc>(null, true, false, 0, -1.5, "s"),
        fc.integer(),
        fc.string({ maxLength: 3 }),
        fc.record({ items: fc.array(tie("doc"), { maxLength: 4 }) }),
        fc.record({
          entries: fc.uniqueArray(fc.tuple(key, tie("doc")), { maxLength: 4, selector: ([k]) => k }),
        }),
      ),
    }));
    await fc.assert(
      fc.asyncProperty(doc, fc.constantFrom(".", "", "1", "/"), async (d, sep) => {
        const expected = [...pathsOf(d, sep)].map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",");
        const body = `{"data":${textOf(d)},"options":{"sep":${JSON.stringify(sep)},"max_depth":50}}`;
        expect(await flatText(body)).toBe(`{${expected}}`);
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});
