/**
 * CSS's reading of a style attribute's text: its declarations, their `!important`, escapes,
 * whitespace and keyword case, for inline-style.ts (display, visibility) and css-vars.ts (custom
 * properties).
 *
 * The declaration list is split here rather than by a library: only a few properties are read,
 * and the split needs just CSS's rules for what hides a `;` (strings, escapes, comments and (),
 * [] and {} blocks, `url(` included). inline-style-parser (0.2.7, 1.8 kB minified), the small
 * candidate, reads otherwise than browsers where it matters here: it deletes comments
 * (`display:no/**\/ne` read as `none`, which Chromium does not hide), ends a value at `}` and does
 * not nest blocks, and throws on a malformed declaration unless told to be silent; the values'
 * escapes and `!important` would still be ours to read.
 */

/**
 * A declaration's value without its `!important`, and whether it had one: the last `!` outside
 * strings, followed by `important` (escapes read: `!\69mportant` is one; comments are spaces by now).
 */
export function priority(value: string): { value: string; important: boolean } {
  let bang = -1;
  let quote = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === "\\") i++;
    else if (quote) {
      if (c === quote || c === "\n") quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "!") bang = i;
  }
  if (bang < 0 || asciiLower(cssUnescape(cssTrim(value.slice(bang + 1)))) !== "important")
    return { value, important: false };
  return { value: value.slice(0, bang), important: true };
}

/**
 * A style attribute's declarations, split at each `;` outside strings and blocks, comments read
 * as the whitespace they separate tokens with (`no/**\/ne` is two words, not `none`).
 */
export function declarations(style: string): string[] {
  const out: string[] = [];
  const closers: string[] = [];
  let quote = "";
  let current = "";
  let from = 0;
  // Where the identifier being read began (-1: none), for a `(` to know its function's name.
  let word = -1;
  for (let i = 0; i < style.length; i++) {
    const c = style[i] as string;
    if (c === "\\") {
      if (!quote && word < 0) word = i;
      // A hex escape is up to six digits and one whitespace after them (`\75 rl(` is `url(`).
      const hex = HEX_ESCAPE.exec(style.slice(i + 1, i + 8));
      i += hex ? hex[0].length : 1;
      continue;
    }
    if (quote) {
      // A line break ends a string too (CSS's bad string).
      if (c === quote || c === "\n") quote = "";
      continue;
    }
    const name = c === "(" && word >= 0 ? style.slice(word, i) : "";
    word = identChar(c.charCodeAt(0)) ? (word < 0 ? i : word) : -1;
    if (c === "/" && style[i + 1] === "*") {
      const end = style.indexOf("*/", i + 2);
      current += `${style.slice(from, i)} `;
      i = end < 0 ? style.length : end + 1;
      from = i + 1;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(" && unquotedUrl(name, style, i)) {
      // One URL token up to the first unescaped `)`, whatever it holds (`url(/*)`, `url(it's)`).
      let j = i + 1;
      while (j < style.length && style[j] !== ")") j += style[j] === "\\" ? 2 : 1;
      i = j;
    } else if (c === "(" || c === "[" || c === "{") closers.push(c === "(" ? ")" : c === "[" ? "]" : "}");
    else if (c === closers[closers.length - 1]) closers.pop();
    else if (c === ";" && closers.length === 0) {
      out.push(current + style.slice(from, i));
      current = "";
      from = i + 1;
    }
  }
  out.push(current + style.slice(from));
  return out;
}
export const HEX_ESCAPE = /^[0-9a-fA-F]{1,6}[\t\n ]?/;
/** A character an identifier holds (CSS's ident code points: letters, digits, `-`, `_`, non-ASCII; escapes are read apart). */
export const identChar = (k: number) =>
  k >= 0x80 ||
  k === 0x2d ||
  k === 0x5f ||
  (k >= 0x30 && k <= 0x39) ||
  ((k | 0x20) >= 0x61 && (k | 0x20) <= 0x7a);

/** Trimmed of CSS's whitespace only: `String.trim` also takes U+00A0, U+FEFF, U+2003..., which CSS reads as a name's or value's own characters. */
export function cssTrim(s: string): string {
  // Index by index: a regex anchored at the end retried every space of a long run (quadratic).
  let start = 0;
  let end = s.length;
  while (start < end && CSS_SPACE.has(s[start] as string)) start++;
  while (end > start && CSS_SPACE.has(s[end - 1] as string)) end--;
  return s.slice(start, end);
}
export const CSS_SPACE = new Set(["\t", "\n", "\f", "\r", " "]);

/**
 * The `(` at `at` opens an unquoted `url(`: the identifier before it (`name`) is `url`, escapes
 * read and ASCII case-insensitively (`\75rl(` and `URL(` are), and the first character after
 * its spaces is not a quote (`url("…")` is a function whose string is read as any).
 */
function unquotedUrl(name: string, style: string, at: number): boolean {
  if (name.length < 3 || asciiLower(cssUnescape(name)) !== "url") return false;
  let j = at + 1;
  while (CSS_SPACE.has(style[j] as string)) j++;
  return style[j] !== '"' && style[j] !== "'";
}

/** CSS escapes in an identifier: `\6e one` and `n\one` are `none`. */
export const cssUnescape = (s: string) =>
  s.includes("\\")
    ? s.replace(/\\(?:([0-9a-fA-F]{1,6})[\t\n\f\r ]?|([^\n]))/g, (_, hex: string | undefined, c: string) =>
        hex === undefined ? (c ?? "") : codePoint(Number.parseInt(hex, 16)),
      )
    : s;

/** An escape's code point, U+FFFD for one CSS does not allow (zero, a surrogate, past U+10FFFF). */
const codePoint = (n: number) =>
  String.fromCodePoint(n === 0 || (n >= 0xd800 && n <= 0xdfff) || n > 0x10ffff ? 0xfffd : n);

/** CSS matches keywords ASCII case-insensitively (`toLowerCase` would also fold the Kelvin sign to `k`). */
export const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
