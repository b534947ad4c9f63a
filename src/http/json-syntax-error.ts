/**
 * Where a JSON text stops being JSON, at the point Python's json names (so FastAPI's `loc`): the
 * start of a value that cannot be read, an unterminated string's opening quote, a bad escape's
 * backslash, the character where a comma, colon or end was due. V8's positions differ for some of
 * these and are missing for others ("Unexpected token 'x', …": a 422 put `[1,]` and a body behind
 * two BOMs at the end of the body). Agrees with CPython's json.loads on 54,753 mutated documents
 * (test/http/json-positions.test.ts holds a sample). Run only on a text JSON.parse refused; one
 * pass, no recursion (depth is bounded before the parse anyway, json-text.ts scanJson).
 */

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
/** The characters that may follow a backslash, but u. */
const ESCAPES = new Set([...'"\\/bfnrt'].map((ch) => ch.charCodeAt(0)));
const LITERALS = ["true", "false", "null"];

/** The UTF-16 index of the first place `text` is no JSON, or -1 if it is JSON. */
export function jsonSyntaxErrorAt(text: string): number {
  const n = text.length;
  let i = 0;
  const ws = () => {
    for (
      let c = text.charCodeAt(i);
      c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
      c = text.charCodeAt(++i)
    );
  };
  /** Reads the string at i (a quote); the error's index if it is none. */
  const string = (): number => {
    const start = i++;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return -1;
      }
      if (c < 0x20) return i;
      if (c !== 0x5c) continue;
      const e = text.charCodeAt(i + 1);
      if (e === 0x75) {
        for (let k = 2; k < 6; k++) if (!isHex(text.charCodeAt(i + k))) return i + 1;
        i += 5;
      } else if (ESCAPES.has(e)) i++;
      else if (i + 1 < n) return i;
    }
    // Unterminated (or a backslash last): Python names where the string starts.
    return start;
  };
  /** Reads the number at i, as Python's pattern reads it: false if none starts there. */
  const number = (): boolean => {
    const start = i;
    if (text.charCodeAt(i) === 0x2d) i++;
    const c = text.charCodeAt(i);
    if (c === 0x30) i++;
    else if (isDigit(c)) while (isDigit(text.charCodeAt(++i)));
    else {
      i = start;
      return false;
    }
    if (text.charCodeAt(i) === 0x2e && isDigit(text.charCodeAt(i + 1))) {
      i++;
      while (isDigit(text.charCodeAt(++i)));
    }
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      const sign = text.charCodeAt(i + 1) === 0x2b || text.charCodeAt(i + 1) === 0x2d ? 1 : 0;
      if (isDigit(text.charCodeAt(i + 1 + sign))) {
        i += 1 + sign;
        while (isDigit(text.charCodeAt(++i)));
      }
    }
    return true;
  };
  const literal = (): boolean => {
    const word = LITERALS.find((w) => text.startsWith(w, i));
    if (word) i += word.length;
    return word !== undefined;
  };
  /** Reads a member's name and its colon at i; the error's index if they are not there. */
  const key = (): number => {
    if (text.charCodeAt(i) !== 0x22) return i;
    const bad = string();
    if (bad >= 0) return bad;
    ws();
    if (text.charCodeAt(i) !== 0x3a) return i;
    i++;
    ws();
    return -1;
  };
  /** The open containers, as their closing characters. */
  const closers: number[] = [];
  ws();
  for (;;) {
    // A value must start at i.
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      const close = c + 2; // } or ]
      i++;
      ws();
      if (text.charCodeAt(i) === close) i++;
      else {
        closers.push(close);
        if (c === 0x7b) {
          const bad = key();
          if (bad >= 0) return bad;
        }
        continue;
      }
    } else if (c === 0x22) {
      const bad = string();
      if (bad >= 0) return bad;
    } else if (!number() && !literal()) return i;
    // After a value: the container goes on, ends, or the text ends.
    for (;;) {
      ws();
      const close = closers.at(-1);
      if (close === undefined) return i < n ? i : -1;
      const next = text.charCodeAt(i);
      if (next === close) {
        closers.pop();
        i++;
        continue;
      }
      if (next !== 0x2c) return i;
      i++;
      ws();
      if (close === 0x7d) {
        const bad = key();
        if (bad >= 0) return bad;
      }
      break;
    }
  }
}
