import { afterEach, describe, expect, it, vi } from "vitest";
import { flatJson, flatten, MAX_FLAT_KEYS } from "../../src/skills/json-flatten";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "../../src/skills/lib/output-size";
import { detailOf, postJson } from "../helpers";
import { SKILL_TEST_TIMEOUT } from "./timeouts";

/**
 * json_flatten holds one key and one Map entry per leaf while it makes the answer, however short
 * the leaf's text: 5 MiB of `{"data":[0,0,…]}` is 2.6 million leaves, and a budget that counted
 * only key characters let ~760,000 of them in (~165 MB of heap in node before the 422), then wrote
 * a string per entry. Now each entry's whole text is charged as it is made and `flat` holds at
 * most 500,000 entries.
 */

afterEach(() => vi.restoreAllMocks());

/** Entries `flatten` puts in Maps while `run` runs (Map.prototype.set is nothing else's then). */
function countSets() {
  const set = vi.spyOn(Map.prototype, "set");
  return () => set.mock.calls.length;
}

/** The throw of `f`, for its 422 items. */
function thrown(f: () => unknown): OutputTooLarge {
  try {
    f();
  } catch (e) {
    if (e instanceof OutputTooLarge) return e;
    throw e;
  }
  throw new Error("no OutputTooLarge");
}

const zeros = (n: number) => new Array<number>(n).fill(0);

describe("json_flatten's entries are bounded while they are made", () => {
  it("2.6 million leaves are refused at the 500,001st entry, not after ~760,000", () => {
    const sets = countSets();
    const e = thrown(() => flatten({ data: zeros(2_600_000) }, ".", 12));
    expect(sets()).toBe(500_000);
    expect(e.items[0]).toMatchObject({
      loc: ["body"],
      type: "output_too_large",
      input: null,
      ctx: { max_bytes: MAX_OUTPUT_BYTES, max_keys: 500_000 },
    });
    expect(e.items[0]?.msg).toContain("more than 500000 keys");
  });

  it("500,000 leaves are an answer, 500,001 are not (a root array's keys, the shortest there are)", () => {
    expect(MAX_FLAT_KEYS).toBe(500_000);
    const flat = flatten(zeros(500_000), ".", 12);
    expect(flat.size).toBe(500_000);
    expect(flatJson(flat)).toBe(JSON.stringify({ ...zeros(500_000) }));
    expect(() => flatten(zeros(500_001), ".", 12)).toThrow(OutputTooLarge);
  });

  it("an entry's value, quotes, colon and comma are charged, not only its key's characters", () => {
    // 100,000 entries: 0.7 MB of key characters, 10.2 MB of text.
    const data = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, "x".repeat(100)]));
    const stringify = vi.spyOn(JSON, "stringify");
    expect(() => flatten(data, ".", 12)).toThrow(OutputTooLarge);
    // Refused by counting (values once the walk is over: a later duplicate path may replace one),
    // before any entry's text is written.
    expect(stringify).not.toHaveBeenCalled();
    // Keys: their text (quotes, colon, comma: 99 bytes each here) is refused as soon as it passes
    // the cap, where their 95 characters alone let ~88,300 entries in.
    const long = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`${"k".repeat(90)}${i}`, 0]));
    const sets = countSets();
    expect(() => flatten(long, ".", 12)).toThrow(OutputTooLarge);
    expect(sets()).toBeLessThanOrEqual(MAX_OUTPUT_BYTES / 96);
  });

  it("a later duplicate path replaces the value charged for the first: the answer is unchanged", () => {
    // "a.b" first holds a value past the cap; the later {"a":{"b":1}} takes its place.
    const data = JSON.parse(`{"a.b":${JSON.stringify("q".repeat(MAX_OUTPUT_BYTES))},"a":{"b":1},"c":2}`);
    const flat = flatten(data, ".", 12);
    expect(flatJson(flat)).toBe('{"a.b":1,"c":2}');
    // The other way round it is refused: the value that stays is past the cap.
    const other = JSON.parse(`{"a":{"b":1},"a.b":${JSON.stringify("q".repeat(MAX_OUTPUT_BYTES))}}`);
    expect(() => flatten(other, ".", 12)).toThrow(OutputTooLarge);
  });

  it(
    'over HTTP, 5 MiB of {"data":[0,0,…]} is the 422 output_too_large with max_keys',
    async () => {
      const body = `{"data":[${"0,".repeat(2_600_000)}0]}`;
      expect(body.length).toBeLessThan(5 * 1024 * 1024);
      const res = await postJson("/api/skills/json-flatten", body);
      expect(res.status).toBe(422);
      expect((await detailOf(res))[0]).toMatchObject({
        loc: ["body"],
        type: "output_too_large",
        ctx: { max_keys: 500_000 },
      });
      // Within the bound the answer is what it was: every index, in order.
      const ok = await postJson("/api/skills/json-flatten", `{"data":{"data":[${"0,".repeat(99_999)}0]}}`);
      expect(ok.status).toBe(200);
      const text = await ok.text();
      const flat = Array.from({ length: 100_000 }, (_, i) => `"data.${i}":0`).join(",");
      expect(text).toBe(
        `{"skill":"json_flatten","ok":true,"flat":{${flat}},"sep":".","max_depth":12,"keys":100000}`,
      );
    },
    SKILL_TEST_TIMEOUT,
  );
});
