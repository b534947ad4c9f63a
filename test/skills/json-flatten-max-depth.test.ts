import { describe, expect, it } from "vitest";
import { jsonFlatten } from "../../src/skills/json-flatten";
import { postJson } from "../helpers";

/**
 * json_flatten echoes the depth it used as `max_depth`, an integer of 0..2^53−1 by its own output
 * schema. A depth past that means the same as 2^53−1 (no document is so deep), so every spelling
 * of one is answered as 2^53−1: a raw big integer was, while 1e300 came back as 1e+300 and the
 * string "99999999999999999999999" as 1e+23.
 */
const MAX = Number.MAX_SAFE_INTEGER;
const data = { a: { b: { c: 1 } } };

async function answered(maxDepthJson: string) {
  const res = await postJson(
    "/api/skills/json-flatten",
    `{"data":${JSON.stringify(data)},"options":{"max_depth":${maxDepthJson}}}`,
  );
  expect(res.status, maxDepthJson).toBe(200);
  const text = await res.text();
  return { text, body: JSON.parse(text) as { flat: unknown; max_depth: number } };
}

describe("json_flatten answers a depth past 2^53−1 as 2^53−1, however it is written", () => {
  it.each([
    ["a raw big integer", "123456789012345678901234567890"],
    ["a double, 1e300", "1e300"],
    ["an integer-like string past 2^53", '"99999999999999999999999"'],
    ["an integer-like string past a double's range", `" +${"9".repeat(400)} "`],
    ["2^53 itself", "9007199254740992"],
  ])("%s", async (_, raw) => {
    const { text, body } = await answered(raw);
    expect(body.max_depth).toBe(MAX);
    expect(text).toContain(`"max_depth":${MAX},`);
    expect(body.flat).toEqual({ "a.b.c": 1 });
    // The answer keeps its own schema.
    expect(jsonFlatten.output().shape.max_depth.safeParse(body.max_depth).success).toBe(true);
  });

  it("depths within the range are echoed as they were, negatives as 0", async () => {
    expect((await answered("2")).body.max_depth).toBe(2);
    expect((await answered(String(MAX))).body.max_depth).toBe(MAX);
    expect((await answered('"-99999999999999999999999"')).body.max_depth).toBe(0);
    expect((await answered("-1e300")).body.max_depth).toBe(0);
  });
});
