import { describe, expect, it } from "vitest";
import { call, detailOf, type ErrorItem, postJson } from "../helpers";

// An echoed input is bounded like a string: an array or object past ~1 KB of JSON is echoed as its
// first items or keys, keeping its JSON type. Before, a missing field echoed its whole parent (a
// 5 MB one twice: 44 MB) and a non-object body itself (22 MB).

/** Under this, an answer is bounded (the bodies below are up to 5 MB). */
const SMALL = 64 * 1024;

async function bounded(res: Response) {
  expect(res.status).toBe(422);
  const text = await res.text();
  expect(text.length).toBeLessThan(SMALL);
  return (JSON.parse(text) as { detail: ErrorItem[] }).detail;
}

describe("echoed inputs are bounded: arrays and objects are cut to their first items, keeping their type", () => {
  it("two missing fields of a 5 MB object echo it cut (was 44 MB)", async () => {
    const body = `{"x":[${"1e20,".repeat(1_000_000 - 1)}1e20]}`;
    const detail = await bounded(await postJson("/api/skills/text-diff", body));
    expect(detail.map((i) => [i.loc, i.type, i.msg])).toEqual([
      [["body", "a"], "missing", "Field required"],
      [["body", "b"], "missing", "Field required"],
    ]);
    for (const item of detail) {
      const input = item.input as { x: number[] };
      expect(Object.keys(input)).toEqual(["x"]);
      expect(Array.isArray(input.x)).toBe(true);
      expect(input.x.length).toBeGreaterThan(0);
      expect(input.x.length).toBeLessThanOrEqual(10);
      expect(new Set(input.x)).toEqual(new Set([1e20]));
    }
  });

  it("a 5 MB top-level array is model_attributes_type echoing its first items (was 22 MB)", async () => {
    const detail = await bounded(
      await postJson("/api/skills/sha256", `[${'"abcd",'.repeat(700_000)}"abcd"]`),
    );
    expect(detail).toHaveLength(1);
    expect(detail[0]).toMatchObject({
      loc: ["body"],
      msg: "Input should be a valid dictionary or object to extract fields from",
      type: "model_attributes_type",
    });
    const input = detail[0]?.input as string[];
    expect(Array.isArray(input)).toBe(true);
    expect(input.length).toBeGreaterThan(0);
    expect(input.length).toBeLessThanOrEqual(10);
    expect(new Set(input)).toEqual(new Set(["abcd"]));
  });

  it("a long string inside an echoed object is cut as a lone one is", async () => {
    const a = "y".repeat(200_000);
    const detail = await bounded(await postJson("/api/skills/text-diff", { a }));
    expect(detail).toEqual([
      { loc: ["body", "b"], msg: "Field required", type: "missing", input: { a: `${"y".repeat(256)}…` } },
    ]);
  });

  it("an object of many keys echoes its first keys", async () => {
    const many = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`key${i}`, i]));
    const detail = await bounded(await postJson("/api/skills/sha256", many));
    expect(detail).toHaveLength(1);
    const input = detail[0]?.input as Record<string, number>;
    const keys = Object.keys(input);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.length).toBeLessThanOrEqual(10);
    for (const [i, k] of keys.entries()) expect([k, input[k]]).toEqual([`key${i}`, i]);
  });

  it("a __proto__ key is echoed as a key, not as the echo's prototype", async () => {
    const body = `{"__proto__":{"polluted":1},${Array.from({ length: 2000 }, (_, i) => `"k${i}":"${"v".repeat(20)}"`).join(",")}}`;
    const detail = await bounded(await postJson("/api/skills/sha256", body));
    const input = detail[0]?.input as Record<string, unknown>;
    expect(Object.hasOwn(input, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("small parents are echoed whole, as pydantic does", async () => {
    const parent = { encoding: "hex", extra: [1, 2, 3], nested: { a: "b" } };
    const detail = await detailOf(await postJson("/api/skills/sha256", parent));
    expect(detail).toEqual([
      { loc: ["body", "text"], msg: "Field required", type: "missing", input: parent },
    ]);
  });
});

describe("integers kept as written (json_sort, json_flatten) are echoed as written, cut past 256 digits", () => {
  it("a short one is a number in the echo", async () => {
    const res = await postJson("/api/skills/json-sort", "[12345678901234567890]");
    expect(res.status).toBe(422);
    expect(await res.text()).toContain('"input":[12345678901234567890]');
  });

  it("one of 2,000 digits in a large echo is cut as a string is", async () => {
    const detail = await bounded(await postJson("/api/skills/json-sort", `[${"1".repeat(2000)}]`));
    expect(detail[0]).toMatchObject({
      loc: ["body"],
      type: "model_attributes_type",
      input: [`${"1".repeat(256)}…`],
    });
  });
});

it("the docs page says long inputs are echoed cut", async () => {
  const page = await (await call("/docs/sha256")).text();
  expect(page).toContain("Long inputs are echoed cut, keeping their JSON type");
});
