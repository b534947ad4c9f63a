/**
 * Where a JSON text stops being JSON, at the point Python's json names (so FastAPI's `loc`): the
 * start of a value that cannot be read, an unterminated string's opening quote, a bad escape's
 * backslash (a `\u` escape's `u`: also for one whose four characters would end the text, checked
 * before they are, as CPython's C scanner does), the character where a comma, colon or end was
 * due. V8's positions differ for some of these and are missing for others ("Unexpected token 'x',
 * …": a 422 put `[1,]` and a body behind two BOMs at the end of the body). Checked against
 * CPython 3.11's json.loads on mutated documents (test/http/json-positions.test.ts holds a sample
 * of the kinds; agreement is tested, not proven). Run only on a text JSON.parse refused, and only
 * when V8's message does not already say the place (json-text.ts syntaxError); one pass, no
 * recursion (depth is bounded before the parse anyway, json-text.ts scanJson). Its helpers are
 * plain functions of the text and an index (closures over a shared index cost 3-8x JSON.parse on
 * 5 MiB bodies, which anyone may send for free) and long runs of whitespace are matched natively.
 */

/** 1 for the characters that may follow a backslash, but u (a table: a Set lookup costs more). */
const ESCAPE = new Uint8Array(128);
for (const ch of '"\\/bfnrt') ESCAPE[ch.charCodeAt(0)] = 1;

const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** A run of whitespace, matched natively: one spans a whole body of it ("   …"). */
const WS_RUN = /[ \t\n\r]+/y;

/**
 * The index past the whitespace at `i`. Plain functions of their arguments, not closures over the
 * index: those kept it in a context and cost 3-8x JSON.parse on 5 MiB bodies.
 */
function skipWs(text: string, i: number, n: number): number {
  if (i >= n) return i;
  let c = text.charCodeAt(i);
  if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
  if (++i >= n) return i;
  c = text.charCodeAt(i);
  if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
  WS_RUN.lastIndex = i;
  WS_RUN.test(text);
  return WS_RUN.lastIndex;
}

/** A run of a string's characters and escapes, matched natively (a long string in one call). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: a JSON string refuses U+0000-U+001F
const STRING_RUN = /(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})+/y;

/**
 * Reads the string whose quote is at `start`: the index past its closing quote, or the error's as
 * `-1 - index` (an unterminated string, or a backslash last: Python names where it starts). A
 * short string is read here; past 32 characters the rest is matched by STRING_RUN.
 */
function skipString(text: string, start: number, n: number): number {
  let i = start + 1;
  for (; i < n; i++) {
    if (i - start > 32) {
      STRING_RUN.lastIndex = i;
      if (STRING_RUN.test(text)) i = STRING_RUN.lastIndex;
      if (i >= n) {
        // CPython names the u of a \uXXXX escape that reaches the text's end (below): the run took it.
        let k = n - 7;
        while (k > start && text.charCodeAt(k) === 0x5c) k--;
        const escaped = (n - 7 - k) % 2 === 0;
        if (n - 6 > start && escaped && text.charCodeAt(n - 6) === 0x5c && text.charCodeAt(n - 5) === 0x75)
          return -1 - (n - 5);
        break;
      }
    }
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return -1 - i;
    if (c !== 0x5c) continue;
    if (i + 1 >= n) break;
    const e = text.charCodeAt(i + 1);
    if (e === 0x75) {
      // CPython names the u when the escape would reach the text's end (i + 6 >= n), before it
      // looks at the digits: `"\u0041` is an error at 2, not an unterminated string at 0.
      if (
        i + 6 >= n ||
        !isHex(text.charCodeAt(i + 2)) ||
        !isHex(text.charCodeAt(i + 3)) ||
        !isHex(text.charCodeAt(i + 4)) ||
        !isHex(text.charCodeAt(i + 5))
      )
        return -2 - i;
      i += 5;
    } else if (e < 128 && ESCAPE[e] === 1) i++;
    else return -1 - i;
  }
  return -1 - start;
}

/** The UTF-16 index of the first place `text` is no JSON, or -1 if it is JSON. */
export function jsonSyntaxErrorAt(text: string): number {
  const n = text.length;
  let i = 0;
  /** The open containers, as their closing characters (} or ]). */
  const closers: number[] = [];
  /** A member's name is due (after { or an object's comma), not a value. */
  let wantKey = false;
  for (;;) {
    // Whitespace, then a value (or, in an object, a key and its colon, then a value).
    if (text.charCodeAt(i) <= 0x20) i = skipWs(text, i, n);
    const c = i < n ? text.charCodeAt(i) : -1;
    if (wantKey && c !== 0x22) return i;
    if (c === 0x7b || c === 0x5b) {
      const close = c + 2; // } or ]
      if (text.charCodeAt(++i) <= 0x20) i = skipWs(text, i, n);
      if (i >= n || text.charCodeAt(i) !== close) {
        closers.push(close);
        wantKey = close === 0x7d;
        continue;
      }
      i++;
    } else if (c === 0x22) {
      const end = skipString(text, i, n);
      if (end < 0) return -1 - end;
      i = end;
      if (wantKey) {
        // A member's name: its colon, then its value.
        wantKey = false;
        if (text.charCodeAt(i) <= 0x20) i = skipWs(text, i, n);
        if (i >= n || text.charCodeAt(i) !== 0x3a) return i;
        i++;
        continue;
      }
    } else if (
      c === 0x74 &&
      text.charCodeAt(i + 1) === 0x72 &&
      text.charCodeAt(i + 2) === 0x75 &&
      text.charCodeAt(i + 3) === 0x65
    )
      i += 4; // true
    else if (c === 0x66 && text.startsWith("false", i)) i += 5;
    else if (
      c === 0x6e &&
      text.charCodeAt(i + 1) === 0x75 &&
      text.charCodeAt(i + 2) === 0x6c &&
      text.charCodeAt(i + 3) === 0x6c
    )
      i += 4; // null
    else {
      // A number, as Python's pattern reads it: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)? (inline: a
      // call per value cost more than the rest of the loop).
      const start = i;
      let d = c === 0x2d ? text.charCodeAt(++i) : c;
      if (d === 0x30) d = text.charCodeAt(++i);
      else if (d >= 0x31 && d <= 0x39)
        for (d = text.charCodeAt(++i); d >= 0x30 && d <= 0x39; d = text.charCodeAt(++i));
      else return start;
      if (d === 0x2e) {
        const f = text.charCodeAt(i + 1);
        if (f >= 0x30 && f <= 0x39) {
          i += 2;
          for (d = text.charCodeAt(i); d >= 0x30 && d <= 0x39; d = text.charCodeAt(++i));
        }
      }
      if (d === 0x65 || d === 0x45) {
        let j = i + 1;
        d = text.charCodeAt(j);
        if (d === 0x2b || d === 0x2d) d = text.charCodeAt(++j);
        if (d >= 0x30 && d <= 0x39)
          for (i = j, d = text.charCodeAt(++i); d >= 0x30 && d <= 0x39; d = text.charCodeAt(++i));
      }
    }
    // After a value: its container goes on, ends, or the text ends.
    for (;;) {
      if (text.charCodeAt(i) <= 0x20) i = skipWs(text, i, n);
      const depth = closers.length;
      if (depth === 0) return i < n ? i : -1;
      const next = i < n ? text.charCodeAt(i) : -1;
      if (next === closers[depth - 1]) {
        closers.pop();
        i++;
        continue;
      }
      if (next !== 0x2c) return i;
      i++;
      wantKey = closers[depth - 1] === 0x7d;
      break;
    }
  }
}
