import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { flatJson, flatten } from "../../src/skills/json-flatten";
import { canonicalJson } from "../../src/skills/json-sort";
import {
  codePointSortKey,
  sortByCodePoints,
  sortDistinctByCodePoints,
} from "../../src/skills/lib/code-points";
import { postJson } from "../helpers";
import { reportable } from "./reportable";

/**
 * Laws of json_sort and json_flatten over JSON with full-Unicode keys (astral characters, lone
 * surrogates, U+E000..U+FFFF), beside the idempotence law in json.test.ts (fc.jsonValue's default,
 * mostly ASCII, strings).
 */

/** The reference: code points in order, a lone surrogate being its own (Array.from reads it so). */
function byCodePoints(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) as number);
  const y = Array.from(b, (c) => c.codePointAt(0) as number);
  for (let i = 0; i < Math.min(x.length, y.length); i++)
    if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x.length - y.length;
}

const surrogatey = fc.string({
  unit: fc.constantFrom(
    "a",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\ue000",
    "\uffff",
    "\u{10000}",
    "\u{10FFFF}",
    "é",
    "\u0000",
    "\ud7ff",
  ),
  maxLength: 4,
});
const key = fc.oneof(fc.string({ unit: "binary", maxLength: 4 }), surrogatey);
/** Well-formed, nothing from U+E000..U+FFFF: keys whose native order is already code-point order. */
const emojiAndLetters = fc.string({
  unit: fc.constantFrom("a", "é", "\u0000", "\ud7ff", "\u{10000}", "\u{1F600}", "\u{10FFFF}"),
  maxLength: 4,
});
/**
 * A prefix long enough that sort keys pay for keys that change: short keys that change are
 * compared in place, the same keys behind it through sort keys, so each property checks both.
 */
const LONG = "p".repeat(70);
/** Sets of keys mixing the kinds: some take the native sort, some need sort keys. */
const keySets = fc.uniqueArray(fc.oneof(key, emojiAndLetters, fc.string({ maxLength: 3 })), {
  maxLength: 30,
});
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, 0, -1, 0.5, 1e21, 5e-324),
    fc.string({ unit: "binary", maxLength: 6 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 5 }),
  ),
})).value;

/** Keys of every object in `text`, in the order the text writes them (a reviver would reorder). */
function keyOrders(value: unknown, out: string[][] = []): string[][] {
  if (Array.isArray(value)) for (const v of value) keyOrders(v, out);
  else if (value !== null && typeof value === "object") {
    out.push(Object.keys(value));
    for (const v of Object.values(value)) keyOrders(v, out);
  }
  return out;
}

describe("json_sort laws", () => {
  it("orders strings by their code points, lone surrogates included, through native comparison of their sort keys", () => {
    // UTF-16 order put the astral U+10000 before U+FFFF; shifting every surrogate up put the lone
    // 0xD800 and 0xDC00 after U+FFFF and U+10000 as well.
    const sortsBefore = (a: string, b: string) => codePointSortKey(a) < codePointSortKey(b);
    reportable(() => {
      for (const [lo, hi] of [
        ["\uffff", "\u{10000}"],
        ["\ud800", "\uffff"],
        ["\udc00", "\u{10000}"],
        ["\udbff", "\ud800\udc00"],
        ["\ud800", "\ud800\udc00"],
        ["\ud800a", "\ud800b"],
        ["\u{10000}", "\u{10001}"],
        ["\ud800\ue000", "\ud800\udc00"],
        ["\u{10000}a", "\u{10000}\u{10000}"],
        ["\u{10000}\uffff", "\u{10000}\u{10000}"],
        ["\u{10000}", "\u{10000}\u0000"],
        ["\uffff\u{10000}", "\u{10000}"],
        ["\u{10FFFF}", "\u{10FFFF}a"],
        ["\ud7ff\u{10000}", "\ud800"],
      ] as [string, string][])
        expect([sortsBefore(lo, hi), sortsBefore(hi, lo)], JSON.stringify([lo, hi])).toEqual([true, false]);
    })();
    // A shared prefix, as long as the keys whose comparator walked it unit by unit (~0.5 s).
    const long = "p\u{1F600}".repeat(700);
    fc.assert(
      fc.property(
        fc.oneof(key, surrogatey),
        fc.oneof(key, surrogatey),
        fc.boolean(),
        reportable((a, b, prefixed) => {
          const [x, y] = prefixed ? [long + a, long + b] : [a, b];
          const sign = (s: string, t: string) => (s < t ? -1 : s > t ? 1 : 0);
          expect(sign(codePointSortKey(x), codePointSortKey(y))).toBe(Math.sign(byCodePoints(x, y)));
        }),
      ),
      { numRuns: 5000, seed: 3 },
    );
  });

  it("sorts stably by code points, whether the keys take the native sort, the comparator or sort keys", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ key: fc.oneof(key, emojiAndLetters, fc.string({ maxLength: 3 })), n: fc.nat() }),
          {
            maxLength: 30,
          },
        ),
        fc.boolean(),
        reportable((rawItems, prefixed) => {
          const items = prefixed ? rawItems.map((item) => ({ ...item, key: LONG + item.key })) : rawItems;
          const expected = items
            .map((item, i) => ({ item, i }))
            .sort((a, b) => byCodePoints(a.item.key, b.item.key) || a.i - b.i)
            .map((e) => e.item);
          expect(sortByCodePoints([...items], (item) => item.key)).toEqual(expected);
        }),
      ),
      { numRuns: 2000, seed: 5 },
    );
  });

  it("sorts an object's keys by code points, alike when one astral key or one U+E000..U+FFFF or lone surrogate key is among them", () => {
    // Native order is kept only without a high surrogate, or with well-formed keys below U+E000;
    // a key of each kind beside an astral one makes the set need code-point order: compared in
    // place when short, through sort keys behind a long prefix.
    const cases = [
      ["\u{10000}", "\udc00"],
      ["\u{10000}", "\ue000", "a"],
      ["\u{10000}", "\ud8ff"],
      ["\u{10000}", "\uffff", "\uffff\u{10000}", "\uffff\uffff", "\uffff\u0000"],
      ["\u{1F600}a\u{1F600}", "\u{1F600}a", "\u{1F600}b", "\u{1F600}\u{1F600}", "\u{1F600}\ud7ff"],
      ["\uffff\uffff", "\uffff", "\ufffe"],
    ];
    reportable(() => {
      for (const short of cases)
        for (const keys of [short, short.map((k) => LONG + k)]) {
          const expected = [...keys].sort(byCodePoints);
          for (const order of [keys, [...keys].reverse()])
            expect(sortDistinctByCodePoints([...order]), JSON.stringify(keys)).toEqual(expected);
        }
    })();
    fc.assert(
      fc.property(
        keySets,
        fc.boolean(),
        reportable((rawKeys, prefixed) => {
          const keys = prefixed ? rawKeys.map((k) => LONG + k) : rawKeys;
          expect(sortDistinctByCodePoints([...keys])).toEqual([...keys].sort(byCodePoints));
        }),
      ),
      { numRuns: 3000, seed: 11 },
    );
  });

  it("writes every object's keys in code-point order (reversed when asked), idempotently, the value unchanged", () => {
    fc.assert(
      fc.property(
        json,
        fc.boolean(),
        reportable((value, reverse) => {
          const once = canonicalJson(value, reverse);
          const back = JSON.parse(once);
          expect(back).toEqual(JSON.parse(JSON.stringify(value)));
          expect(canonicalJson(back, reverse)).toBe(once);
          // Reading the text's own key order needs a parse that keeps it: the keys as written.
          const written = [...once.matchAll(/"((?:[^"\\]|\\.)*)":/g)].length;
          expect(written).toBe(keyOrders(back).reduce((n, ks) => n + ks.length, 0));
          for (const keys of keyOrdersOfText(once)) {
            const sorted = [...keys].sort(byCodePoints);
            expect(keys).toEqual(reverse ? sorted.reverse() : sorted);
          }
        }),
      ),
      { numRuns: 1500, seed: 5 },
    );
  });

  it("over HTTP: duplicate keys keep the last value, -0 is 0, 1e400 is refused, big integers stay whole", async () => {
    const sort = async (body: string) => {
      const res = await postJson("/api/skills/json-sort", body);
      return { status: res.status, text: await res.text() };
    };
    const dup = await sort('{"data":{"b":1,"a":2,"b":3,"\\udc00":0,"\\ud800\\udc00":1}}');
    expect(dup.status).toBe(200);
    const body = JSON.parse(dup.text);
    expect(body.canonical).toBe('{"a":2,"b":3,"\\udc00":0,"𐀀":1}');
    expect(body.bytes).toBe(new TextEncoder().encode(body.canonical).length);
    expect(dup.text).toContain(`"sorted":${body.canonical},`);
    expect(JSON.parse((await sort('{"data":[-0,-0.0,1E2,1e-400]}')).text).canonical).toBe("[0,0,100,0]");
    expect((await sort('{"data":{"x":1e400}}')).status).toBe(422);
    expect(JSON.parse((await sort('{"data":[-12345678901234567890,9007199254740993]}')).text).canonical).toBe(
      "[-12345678901234567890,9007199254740993]",
    );
  });
});

/** Each object's keys as `text` writes them, by a scan of the canonical text (no reordering parse). */
function keyOrdersOfText(text: string): string[][] {
  const out: string[][] = [];
  const stack: (string[] | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && text[j + 1] === ":") top.push(JSON.parse(text.slice(i, j + 1)));
      i = j;
    } else if (c === "{") stack.push([]);
    else if (c === "[") stack.push(null);
    else if (c === "}" || c === "]") {
      const top = stack.pop();
      if (top) out.push(top);
    }
  }
  return out;
}

describe("json_flatten laws", () => {
  it("every leaf is at its path, each path once, in walk order; where two paths meet the later leaf's value is kept", () => {
    fc.assert(
      fc.property(
        json,
        fc.constantFrom(".", "/", "", "→", "\ud800"),
        reportable((value, sep) => {
          const flat = flatten(value, sep, 1e9);
          const text = flatJson(flat);
          expect(JSON.parse(text)).toBeTypeOf("object");
          // Walk the value: each leaf's path is a key of flat holding it, unless a later leaf has
          // the same path (a key holding sep, or "" with sep "": README's "a later duplicate path wins").
          const paths: [string, unknown][] = [];
          const walk = (v: unknown, path: string, root: boolean) => {
            const entries =
              v !== null && typeof v === "object"
                ? Array.isArray(v)
                  ? v.map((x, i) => [String(i), x] as const)
                  : Object.entries(v)
                : [];
            if (entries.length === 0) {
              if (!root || v === null || typeof v !== "object") paths.push([path, v]);
              return;
            }
            for (const [k, x] of entries) walk(x, root ? k : path + sep + k, false);
          };
          walk(value, "", true);
          const last = new Map(paths);
          expect(JSON.stringify([...flat.keys()])).toBe(JSON.stringify([...last.keys()]));
          for (const [p, v] of last) expect(flat.get(p)).toEqual(v);
        }),
      ),
      { numRuns: 1500, seed: 9 },
    );
  });
});
