import { afterEach, describe, expect, it, vi } from "vitest";
import { flatten } from "../../src/skills/json-flatten";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "../../src/skills/lib/output-size";
import { detailOf, postJson } from "../helpers";

/**
 * Spec §2.3: json_flatten's `sep` is "any value, stringified, default `.`", with no length. The
 * 16-character bound it had is gone; what stops a long separator from multiplying the answer is
 * the 8 MB answer cap, counted while keys and paths are made, never after building them.
 */

const SLOW = 60_000;

/** Every text JSON.stringify makes while `run` runs: the largest one is what a call built. */
function watchStringify() {
  const lengths: number[] = [];
  const stringify = JSON.stringify;
  vi.spyOn(JSON, "stringify").mockImplementation((...args: Parameters<typeof stringify>) => {
    const text = stringify(...args);
    lengths.push(text?.length ?? 0);
    return text;
  });
  return () => Math.max(0, ...lengths);
}
afterEach(() => vi.restoreAllMocks());

/** Posts a body already written as text (so the test's own stringify is not watched). */
async function flat(text: string) {
  return { res: await postJson("/api/skills/json-flatten", text) };
}

const nested = (levels: number, leaf: unknown = 1) => {
  let data: unknown = leaf;
  for (let i = 0; i < levels; i++) data = { k: data };
  return data;
};

describe("json_flatten takes any separator, of any length (spec §2.3)", () => {
  it.each([
    ["17 characters", "x".repeat(17), `a${"x".repeat(17)}b`],
    ["17 emoji", "😀".repeat(17), `a${"😀".repeat(17)}b`],
    ["a 100-character sep", "-".repeat(100), `a${"-".repeat(100)}b`],
  ])("%s", async (_, sep, key) => {
    const { res } = await flat(JSON.stringify({ data: { a: { b: 1 } }, options: { sep } }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ flat: { [key]: 1 }, sep, keys: 1 });
  });

  it("a big integer or an object, stringified", async () => {
    const big = "123456789012345678901234567890";
    const r1 = await flat(`{"data":{"a":{"b":1}},"options":{"sep":${big}}}`);
    expect(r1.res.status).toBe(200);
    expect(await r1.res.json()).toMatchObject({ flat: { [`a${big}b`]: 1 }, sep: big });
    const obj = { join: ["with", "this", "separator"], note: "longer than sixteen characters" };
    const r2 = await flat(JSON.stringify({ data: { a: { b: 1 } }, options: { sep: obj } }));
    expect(r2.res.status).toBe(200);
    expect(await r2.res.json()).toMatchObject({
      flat: { [`a${JSON.stringify(obj)}b`]: 1 },
      sep: JSON.stringify(obj),
    });
  });

  it(
    "a 10,000-character sep over 100 levels to one leaf is a 1 MB key, within the cap: answered",
    async () => {
      const sep = "s".repeat(10_000);
      const { res } = await flat(JSON.stringify({ data: nested(100), options: { sep, max_depth: 1000 } }));
      expect(res.status).toBe(200);
      const body = await res.json<{ flat: Record<string, number>; keys: number }>();
      expect(body.keys).toBe(1);
      const key = Object.keys(body.flat)[0] ?? "";
      expect(key.length).toBe(100 + 99 * 10_000);
      expect(key === Array(100).fill("k").join(sep)).toBe(true); // not printed whole if it fails
    },
    SLOW,
  );
});

describe("a long separator meets the answer's cap quickly, having built at most the cap", () => {
  const refused = async (label: string, text: string) => {
    const largest = watchStringify();
    const { res } = await flat(text);
    vi.restoreAllMocks();
    expect(res.status, label).toBe(422);
    expect((await detailOf(res))[0], label).toMatchObject({
      loc: ["body"],
      type: "output_too_large",
      ctx: { max_bytes: MAX_OUTPUT_BYTES },
    });
    // Not timed (a wall-clock bound failed once on a loaded machine, 2.2 s against 2 s, where it
    // answers in 0.1 s): that no path past the cap is built is checked where it is made, below
    // ("flatten measures a path before it builds it"); here, that no text past it is written.
    expect(largest(), label).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
  };

  it(
    "4 MB of x between three keys (the sep, echoed, and two 4 MB keys)",
    async () => {
      const sep = "x".repeat(4_000_000);
      await refused("4 MB", JSON.stringify({ data: { a: { b: 1, c: 2 } }, options: { sep } }));
    },
    SLOW,
  );

  it(
    "the probe's shape: a 10,000-character sep with a leaf at each of 100 levels (50 MB of keys)",
    async () => {
      let data: unknown = 1;
      for (let i = 0; i < 100; i++) data = { v: i, k: data };
      const sep = "s".repeat(10_000);
      await refused("probe", JSON.stringify({ data, options: { sep, max_depth: 1000 } }));
    },
    SLOW,
  );

  it(
    "a 1 MB sep over 10,000 leaves",
    async () => {
      const sep = "y".repeat(1_000_000);
      await refused("1 MB", JSON.stringify({ data: { a: new Array(10_000).fill(0) }, options: { sep } }));
    },
    SLOW,
  );

  it(
    "a 4.5 MB sep over 150 levels: its one path would be 675 million characters",
    async () => {
      const sep = "z".repeat(4_500_000);
      await refused("150 levels", JSON.stringify({ data: nested(150), options: { sep, max_depth: 1000 } }));
    },
    SLOW,
  );

  it(
    "a sep whose JSON text passes the cap is refused before it is stringified (1e20 is 21 digits)",
    async () => {
      const text = `{"data":{"a":1},"options":{"sep":[${new Array(1_000_000).fill("1e20").join(",")}]}}`;
      expect(text.length).toBeLessThan(5 * 1024 * 1024);
      await refused("1e20s", text);
    },
    SLOW,
  );
});

describe("flatten measures a path before it builds it", () => {
  /** A chain of `levels` objects that records the deepest level whose child was read. */
  function watchedChain(levels: number) {
    const seen = { deepest: 0 };
    const level = (d: number): unknown =>
      d === levels
        ? 1
        : new Proxy(
            { k: null },
            {
              get(target, key, receiver) {
                if (key === "k") {
                  seen.deepest = Math.max(seen.deepest, d + 1);
                  return level(d + 1);
                }
                return Reflect.get(target, key, receiver);
              },
            },
          );
    return { data: level(0), seen };
  }

  it("no path longer than the budget is made: the walk stops at the level that would pass it", () => {
    const { data, seen } = watchedChain(100);
    const sep = "s".repeat(1000);
    expect(() => flatten(data, sep, 1000, 10_000)).toThrow(OutputTooLarge);
    // Level d's path is d keys and d - 1 seps: 10 levels (9,010 characters) fit, the 11th does not.
    expect(seen.deepest).toBe(10);
  });

  it("a 5 MB sep over 200 levels is OutputTooLarge, not a RangeError of a billion-character path", () => {
    const sep = "s".repeat(5_000_000);
    expect(() => flatten(nested(200), sep, 1000)).toThrow(OutputTooLarge);
  });
});
