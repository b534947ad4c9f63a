import { describe, expect, it } from "vitest";
import { storedAnswerView } from "../../src/pages/stored-answer";

describe("the success page's view of a stored first-call answer", () => {
  it("is the body indented as JSON.stringify indents it, digits and key order as stored", async () => {
    const body = { skill: "json_sort", ok: true, sorted: { "10": 1, a: [1, { b: 'x"y' }], e: {} }, bytes: 3 };
    const view = await storedAnswerView(`{"status":200,"body":${JSON.stringify(body)}}`);
    expect(view).toEqual({ status: 200, text: JSON.stringify(body, null, 2) });
    const exact = await storedAnswerView('{"status":200,"body":{"10":1,"9":12345678901234567890}}');
    expect(exact.text).toBe('{\n  "10": 1,\n  "9": 12345678901234567890\n}');
  });

  it("is linear up to the largest answer it indents (jsonc-parser's applyEdits took 12.5 s at 260 KB)", async () => {
    const items = Array.from({ length: 30_000 }, (_, i) => i % 10);
    const text = JSON.stringify({ skill: "json_sort", ok: true, sorted: items });
    expect(text.length).toBeGreaterThan(60_000);
    const big = `[${Array.from({ length: 4 }, () => text).join(",")}]`;
    expect(big.length).toBeLessThan(256 * 1024);
    const started = performance.now();
    const view = await storedAnswerView(`{"status":200,"body":${big}}`);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(view.text).toBe(JSON.stringify(JSON.parse(big), null, 2));
  });
});
