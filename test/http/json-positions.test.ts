import { describe, expect, it } from "vitest";
import { parseJsonText } from "../../src/http/json-text";
import { call, detailOf, postJson } from "../helpers";

// A json_invalid item's loc is where Python's json (FastAPI's parser) puts the error, counted in
// characters (code points). It was V8's UTF-16 index (16 for `{"text":"😀😀", }`, Python 14), the
// end of the body when V8's message named no position (`[1,]`, a body behind two BOMs), and V8's
// excerpt of the text could quote half a surrogate pair in ctx.error.

/** Bodies JSON refuses, with CPython 3's json.loads(str) JSONDecodeError.pos for each. */
const PYTHON_POSITIONS: [string, number][] = [
  ['{"a":[1,2,"b":"x\\u00e9y"}],"c":true,"d":null,"e":-1:.5e3}', 13], // Expecting ',' delimiter
  ['{"k" :"n":[[t,{}]}}', 9], // Expecting ',' delimiter
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,"e":-1.5e3\ud83d\ude00', 56], // Expecting ',' delimiter
  ["[true,false,null\ud83d\ude00", 16], // Expecting ',' delimiter
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,"e":-1e.5e3}', 52], // Expecting ',' delimiter
  ['{"a":[1, 2,{"b":"x\\u00e9y"}],"c":true,"d":null,"e":-1.5ee3}', 55], // Expecting ',' delimiter
  ['{"k"1{"n:[[],{}]}}', 4], // Expecting ':' delimiter
  ['{"k"x:{"n\u0001:[[],}]}}', 4], // Expecting ':' delimiter
  ['{"k"-{"n":[\ud83d\ude00,{}]}}', 4], // Expecting ':' delimiter
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d"\ud83d\ude00:null,"e":-1.5e3}', 40], // Expecting ':' delimiter
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,["e":-1.5e3}', 46], // Expecting property name enclosed in double quotes
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,\u0001e":-1.5]e3}', 46], // Expecting property name enclosed in double quotes
  ['{s\ud83d\ude00r"', 1], // Expecting property name enclosed in double quotes
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,\ufeff"e":-1.5e3}', 46], // Expecting property name enclosed in double quotes
  ["[tru0e,false,ull]", 1], // Expecting value
  ['t"sr', 0], // Expecting value
  ["-str\ud83d\ude00", 0], // Expecting value
  ["-[1\ud83d\ude00,2,3]", 0], // Expecting value
  ["[tr]e,fase,null]", 1], // Expecting value
  ['s.tr"', 0], // Expecting value
  ["\ud83d\ude00[1,2,3]", 0], // Expecting value
  ["\ud83d\ude001,2,3]-", 0], // Expecting value
  ["1.2,3]", 3], // Extra data
  ["1,2,3]", 1], // Extra data
  ["1,\ud83d\ude00,3]", 1], // Extra data
  ['0"k":\ud83d\ude00{"n":[[],{}"]}}', 1], // Extra data
  ['{"a":[1,2,{"b":"x\\100e9y"}],c":tue,"d":null,"e":-1.5e3}', 17], // Invalid \escape
  ['{"a":[1,2,{"b":"x\\0u00e9y"}],"c":true,"d":null, "e":-1.5e3}', 17], // Invalid \escape
  ['{"a":[1,2,{"b":"x\\\ud83d\ude00u00e9y"}],"c":true,"d":null,"e":-1.53}', 17], // Invalid \escape
  ['{"a":[1,2,{"b":"x\\\ufeff00e9y"}],"c":true""d":null,"e":-1.5e3}', 17], // Invalid \escape
  ['{"a":[1,2,{"b":"x\\u0 0e9y"}],"c0":true,:"d":null,"e":-1.5e3}', 18], // Invalid \uXXXX escape
  ['{"a":[1,2,{"b":"x\\u0e9y"}],"c":t1rue,"d":null,"e":-1.53}', 18], // Invalid \uXXXX escape
  ['{"a":[1,2,{"b":"x\\u0"e9y"}],"c":true,"d"tnull,"e":-1.5e3\ud83d\ude00}', 18], // Invalid \uXXXX escape
  ['{"a":[1,2,{"\ud83d\ude00b":"x\\u0u0e9y"}],"c":true,"d":null,"e":-1.5e3}', 19], // Invalid \uXXXX escape
  ['"st\u0001r"', 3], // Invalid control character at
  ['{"k":{"n\u0001.":[[],.{}]}}', 8], // Invalid control character at
  ['{"k":"n\ufeff\u0001:[[],{}]}}', 8], // Invalid control character at
  ['{"k":{"n":[[],{"}', 15], // Unterminated string starting at
  ['"str-', 0], // Unterminated string starting at
  ['{"a":[1,2,{"b":"x\\u00e9y"}],"c":true,"d":null,"e::\ufeff-1.5e3}', 46], // Unterminated string starting at
  ['"\ufeffstr', 0], // Unterminated string starting at
  ['"str\\', 0], // Unterminated string starting at
  // CPython names the u of a \uXXXX that ends the text (i + 6 >= n) before it reads the digits.
  ['"\\u0041', 2], // Invalid \uXXXX escape
  ['"ab\\u00e9', 4], // Invalid \uXXXX escape
  ['"\\u004', 2], // Invalid \uXXXX escape
  // The same past 32 characters, where the rest of a string is matched natively.
  [`"${"x".repeat(40)}\\u0041`, 42], // Invalid \uXXXX escape
  [`"${"x".repeat(40)}\\\\\\u0041`, 44], // Invalid \uXXXX escape
  [`"${"x".repeat(40)}\\\\u0041`, 0], // Unterminated string starting at
  [`"${'\\"'.repeat(40)}`, 0], // Unterminated string starting at
  [`["${"x".repeat(40)}\\q"]`, 42], // Invalid \escape
  [`["${"x".repeat(40)}\u0001"]`, 42], // Invalid control character at
  ['\ufeff{"text":"a"}', 0], // Unexpected UTF-8 BOM (decode using utf-8-sig)
  ["[1,]", 3], // Expecting value
  ['{"a":}', 5], // Expecting value
  ['{"text":"\ud83d\ude00\ud83d\ude00", }', 14], // Expecting property name enclosed in double quotes
  ['{"a": \ud83d\ude00}', 6], // Expecting value
  ['"abc', 0], // Unterminated string starting at
  ['[tr"', 1], // Expecting value
  ["", 0], // Expecting value
  ["  ", 2], // Expecting value
  ['{"a":1} x', 8], // Extra data
  ["[1,2", 4], // Expecting ',' delimiter
  ['{"\ud83d\ude00":"\ud83d\ude00" x}', 9], // Expecting ',' delimiter
  ['{"a":"\\q"}', 6], // Invalid \escape
  ['{"a":\n [1,\n \ud83d\ude00]}', 12], // Expecting value
];

const enc = new TextEncoder();
/** A POST of these bytes (text parts as UTF-8), as sent: postJson would send JSON of them. */
const postBytes = (path: string, ...parts: (string | number[])[]) =>
  call(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...enc.encode(p)] : p))),
  });

describe("json_invalid positions", () => {
  it("are Python's, in code points, for every kind of syntax error", () => {
    const got = PYTHON_POSITIONS.map(([text]) => {
      const parsed = parseJsonText(text);
      return parsed.ok ? "parsed" : parsed.item.loc[1];
    });
    expect(got).toEqual(PYTHON_POSITIONS.map(([, pos]) => pos));
  });

  it("ctx.error says the same position, line and column, and never holds half a surrogate pair", () => {
    const message = (text: string) => {
      const parsed = parseJsonText(text);
      return parsed.ok ? "" : String(parsed.item.ctx?.error);
    };
    expect(message('{"text":"😀😀", }')).toBe(
      "Expected double-quoted property name in JSON at position 14 (line 1 column 15)",
    );
    expect(message('{"😀":\n "😀" x}')).toBe(
      "Expected ',' or '}' after property value in JSON at position 11 (line 2 column 6)",
    );
    // V8: "Unexpected token '\ud83d', …" and an excerpt cut inside a pair.
    for (const text of ['{"a": 😀}', `{"a": x, "b": "${"😀".repeat(20)}"}`, `["${"😀".repeat(7)}", x]`]) {
      expect(message(text)).toBe("Expecting value");
    }
  });

  it("a body behind two byte order marks: the second is at 0, as FastAPI answers", async () => {
    const res = await postBytes("/api/skills/sha256", [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf], '{"text":"a"}');
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual([
      {
        loc: ["body", 0],
        msg: "JSON decode error",
        type: "json_invalid",
        input: {},
        ctx: { error: "Expecting value, found U+FEFF (a byte order mark: one at most, first)" },
      },
    ]);
    // One BOM is dropped, as Python's utf-8-sig drops it: positions count from after it.
    const one = await postBytes("/api/skills/sha256", [0xef, 0xbb, 0xbf], '{"text":"😀", }');
    expect((await detailOf(one))[0]?.loc).toEqual(["body", 13]);
  });

  it("bytes that are no UTF-8: loc counts the characters before them, ctx.error names the byte offset", async () => {
    const res = await postBytes("/api/skills/sha256", '{"text":"é😀', [0xff], '"}');
    expect(res.status).toBe(422);
    const [item] = await detailOf(res);
    expect(item).toMatchObject({ loc: ["body", 11], type: "json_invalid" });
    expect(item?.ctx?.error).toBe("invalid UTF-8: byte 0xff at byte offset 15 begins no character");
  });
});

describe("a long string's echo", () => {
  it("is its first 256 characters (code points) and …, never half a pair", async () => {
    for (const unit of ["😀", "é", "a"]) {
      const res = await postJson("/api/skills/slugify", { text: unit.repeat(4001) });
      expect(res.status).toBe(422);
      const [item] = await detailOf(res);
      expect(item?.type).toBe("string_too_long");
      expect(item?.input).toBe(`${unit.repeat(256)}…`);
    }
  });
});
