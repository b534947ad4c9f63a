import { describe, expect, it, vi } from "vitest";
import { flatJson, flatten } from "../../src/skills/json-flatten";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "../../src/skills/lib/output-size";
import { postJson } from "../helpers";

/**
 * json_flatten's answer is written as text in document order; the 8 MB cap must hold while that
 * text is built, not after. Keys of control characters are written six bytes each: 8,000 paths of
 * a 1,000-character key made a 48-million-character text (~96 MB, two bytes a character) from a
 * 22 KB request before the cap refused it, past an isolate's 128 MB.
 */
const key = `€${"\u0001".repeat(999)}`;
const data = { [key]: new Array(8000).fill(0) };

describe("json_flatten's answer is measured before it is written", () => {
  it("an answer past the cap is refused having written at most the cap", () => {
    const written: number[] = [];
    const stringify = JSON.stringify;
    const spy = vi.spyOn(JSON, "stringify").mockImplementation((...args: Parameters<typeof stringify>) => {
      const text = stringify(...args);
      written.push(text?.length ?? 0);
      return text;
    });
    try {
      expect(() => flatJson(flatten(data, ".", 12))).toThrow(OutputTooLarge);
    } finally {
      spy.mockRestore();
    }
    expect(written.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
  });

  it("over HTTP it is the 422 output_too_large, and an answer under the cap is written whole", async () => {
    const res = await postJson("/api/skills/json-flatten", { data });
    expect(res.status).toBe(422);
    expect(JSON.stringify(await res.json())).toContain("output_too_large");
    const small = { [key]: [0, 1] };
    const ok = await postJson("/api/skills/json-flatten", { data: small });
    expect(ok.status).toBe(200);
    expect((await ok.json<{ flat: Record<string, number> }>()).flat).toEqual({
      [`${key}.0`]: 0,
      [`${key}.1`]: 1,
    });
  });
});
