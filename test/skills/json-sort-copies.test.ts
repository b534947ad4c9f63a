import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { canonicalJson, jsonSort } from "../../src/skills/json-sort";
import { assertOutputSize, utf8Length } from "../../src/skills/lib/output-size";
import { postJson } from "../helpers";

/**
 * json_sort near the answer's cap held 17–32 MB beside its text (node): a string per element
 * joined at every level, the text encoded once for `bytes` and once more to measure the answer.
 * The answer is the same byte for byte; only the copies are gone.
 */

afterEach(() => vi.restoreAllMocks());

const run = (data: unknown, reverse = false) =>
  jsonSort.run({ data, reverse } as never, {} as never) as {
    sorted: unknown;
    canonical: string;
    bytes: number;
  };

describe("json_sort answers without copies of its text", () => {
  it("the whole answer is what it was, byte for byte, with non-ASCII keys and values", async () => {
    const body =
      '{"data":{"z":"ü€😀","é":[{"中":1,"b":"\\u0001"},"\\ud800"],"😀":null,"\\ue000":2,"10":1,"9":0}}';
    const canonical = '{"10":1,"9":0,"z":"ü€😀","é":[{"b":"\\u0001","中":1},"\\ud800"],"\ue000":2,"😀":null}';
    const res = await postJson("/api/skills/json-sort", body);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      `{"skill":"json_sort","ok":true,"sorted":${canonical},"canonical":${JSON.stringify(canonical)},"bytes":${new TextEncoder().encode(canonical).length}}`,
    );
    const reversed = await postJson("/api/skills/json-sort", {
      data: { a: [{ é: 1, e: 2 }], "😀": 0 },
      reverse: true,
    });
    expect((await reversed.json<{ canonical: string }>()).canonical).toBe('{"😀":0,"a":[{"é":1,"e":2}]}');
  });

  it("canonical text is the value's JSON, written in chunks at any size", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value, false))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
    // 80,000 scalars, past many chunks of pieces: where no key is reordered, JSON.stringify's text.
    const big = Array.from({ length: 20_000 }, (_, i) => [i, `s${i}`, null, true]);
    expect(canonicalJson(big, false)).toBe(JSON.stringify(big));
  });

  it("bytes and the answer's size are counted, not encoded, and the text is not joined from a piece per element", () => {
    const data = Array.from({ length: 100_000 }, (_, i) => ({ b: i, a: "é" }));
    const encode = vi.spyOn(TextEncoder.prototype, "encode");
    const joined: number[] = [];
    const join = Array.prototype.join;
    vi.spyOn(Array.prototype, "join").mockImplementation(function (this: unknown[], sep?: string) {
      joined.push(this.length);
      return join.call(this, sep);
    });
    const out = run(data);
    assertOutputSize({ skill: "json_sort", ok: true, ...out });
    vi.restoreAllMocks();
    expect(encode).not.toHaveBeenCalled();
    expect(Math.max(...joined)).toBeLessThanOrEqual(4096);
    expect(out.canonical).toBe(JSON.stringify(data.map(({ b, a }) => ({ a, b }))));
    expect(out.bytes).toBe(new TextEncoder().encode(out.canonical).length);
  });

  it("utf8Length is TextEncoder's length for any string, lone surrogates too", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)) }),
        (a, b) => {
          for (const s of [a, b, a + b]) expect(utf8Length(s)).toBe(new TextEncoder().encode(s).length);
        },
      ),
    );
    expect(utf8Length("\ud83d")).toBe(3);
    expect(utf8Length("\ude00\ud83d")).toBe(6);
    expect(utf8Length("😀é€a")).toBe(10);
  });
});
