/**
 * What an element's own attributes say about whether a browser shows it: `hidden`, and the
 * `display` and `visibility` its `style` attribute declares. Text hidden this way is the classic
 * carrier of instructions meant for an agent and never seen by a reader, so both modes of
 * html_clean leave it out. Stylesheets and classes are not read (a page's CSS can hide anything;
 * reading it means a cascade and selector matching), nor is a `var()` resolved.
 *
 * The declaration list is split here rather than by a library: only two properties' keywords are
 * read, and the split needs just CSS's rules for what hides a `;` (strings, escapes, comments and
 * (), [] and {} blocks, `url(` included). inline-style-parser (0.2.7, 1.8 kB minified), the small
 * candidate, reads otherwise than browsers where it matters here: it deletes comments
 * (`display:no/**\/ne` read as `none`, which Chromium does not hide), ends a value at `}` and does
 * not nest blocks, and throws on a malformed declaration unless told to be silent; the values'
 * escapes and `!important` would still be this module's to read.
 */

/** Declared visibility: hidden (or collapse), visible again, or none said (as the parent's). */
export type Visibility = "hidden" | "visible" | undefined;

export interface OwnRendering {
  /** Rendered at all: not `display: none`, not `hidden` (unless its style sets a display). */
  rendered: boolean;
  visibility: Visibility;
}

const SHOWN: OwnRendering = { rendered: true, visibility: undefined };
const NOT_RENDERED: OwnRendering = { rendered: false, visibility: undefined };

/**
 * How an element's own attributes show it. `hidden` (not `until-found`, which browsers show or
 * reveal) hides it unless its style sets a `display` (Chromium maps `hidden` to a presentational
 * `display: none`, which any declared display but `revert-layer` overrides).
 */
export function ownRendering(attribs: Record<string, string> | undefined): OwnRendering {
  const hiddenAttr = attribs?.hidden;
  const hidden = hiddenAttr !== undefined && asciiLower(hiddenAttr) !== "until-found";
  const style = attribs?.style;
  if (style === undefined) return hidden ? NOT_RENDERED : SHOWN;
  const { display, visibility } = readStyle(style);
  if (display === "none" || (display === undefined && hidden)) return NOT_RENDERED;
  return visibility === undefined ? SHOWN : { rendered: true, visibility };
}

/** The `display` (none, or another) and `visibility` a style attribute declares, as CSS's cascade picks them. */
function readStyle(attribute: string): { display?: "none" | "other"; visibility?: Visibility } {
  if (!STYLE_WORDS.test(attribute)) return {};
  // CSS's preprocessing (a browser's HTML parser has already made CR LF one LF; htmlparser2 keeps both).
  const style = attribute.replace(/\r\n?|\f/g, "\n");
  let display: { value: string; important: boolean } | undefined;
  let visibility: { value: string; important: boolean } | undefined;
  for (const declaration of declarations(style)) {
    const colon = declaration.indexOf(":");
    if (colon < 0) continue;
    const name = asciiLower(cssUnescape(cssTrim(declaration.slice(0, colon))));
    if (name !== "display" && name !== "visibility") continue;
    const { value: raw, important } = priority(declaration.slice(colon + 1));
    const value = asciiLower(cssUnescape(cssTrim(raw)));
    const valid = name === "display" ? validDisplay(value) : VISIBILITY.has(value) || VAR.test(value);
    if (!valid) continue;
    // The last valid declaration wins, an !important one over any that is not.
    const winner = name === "display" ? display : visibility;
    if (winner?.important && !important) continue;
    if (name === "display") display = { value, important };
    else visibility = { value, important };
  }
  return {
    // `revert-layer` rolls back to what `hidden` says; an unresolved `var()` computes to `inline`.
    display:
      display === undefined || display.value === "revert-layer"
        ? undefined
        : display.value === "none"
          ? "none"
          : "other",
    visibility:
      visibility?.value === "hidden" || visibility?.value === "collapse"
        ? "hidden"
        : visibility?.value === "visible" || visibility?.value === "initial"
          ? "visible"
          : undefined,
  };
}

/**
 * What a style that can say anything read here holds (ASCII case-insensitively): the properties'
 * names, or a backslash (an escape may spell them; written as a selector's string writes it). Most
 * styles (`color:red`) hold none, and are not split.
 */
export const STYLE_READ = ["display", "visibility", "\\\\"];
const STYLE_WORDS = /display|visibility|\\/i;
const VAR = /var\(/;
const VISIBILITY = new Set("visible hidden collapse initial inherit unset revert revert-layer".split(" "));
/** Single-keyword displays Chromium accepts (`run-in` it does not), CSS-wide keywords included. */
const DISPLAY = new Set(
  `none contents block inline flow flow-root table flex grid ruby math list-item inline-block
  inline-table inline-flex inline-grid table-row-group table-header-group table-footer-group
  table-row table-cell table-column-group table-column table-caption ruby-text -webkit-box
  -webkit-inline-box -webkit-flex -webkit-inline-flex initial inherit unset revert revert-layer`.split(/\s+/),
);
const OUTSIDE = new Set(["block", "inline"]);
const INSIDE = new Set(["flow", "flow-root", "table", "flex", "grid", "ruby", "math"]);

/** CSS's display grammar: one keyword, an outside and an inside one, or a list item's keywords. */
function validDisplay(value: string): boolean {
  if (DISPLAY.has(value) || VAR.test(value)) return true;
  const words = value.split(/[\t\n\f\r ]+/);
  if (words.length > 3) return false;
  const item = words.filter((w) => w === "list-item").length;
  const outside = words.filter((w) => OUTSIDE.has(w)).length;
  const inside = words.filter((w) => INSIDE.has(w));
  if (item + outside + inside.length !== words.length || item > 1 || outside > 1 || inside.length > 1)
    return false;
  if (item === 1) return inside.every((w) => w === "flow" || w === "flow-root");
  return words.length === 2;
}

/**
 * A declaration's value without its `!important`, and whether it had one: the last `!` outside
 * strings, followed by `important` (escapes read: `!\69mportant` is one; comments are spaces by now).
 */
function priority(value: string): { value: string; important: boolean } {
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
function declarations(style: string): string[] {
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
const HEX_ESCAPE = /^[0-9a-fA-F]{1,6}[\t\n ]?/;
/** A character an identifier holds (CSS's ident code points: letters, digits, `-`, `_`, non-ASCII; escapes are read apart). */
const identChar = (k: number) =>
  k >= 0x80 ||
  k === 0x2d ||
  k === 0x5f ||
  (k >= 0x30 && k <= 0x39) ||
  ((k | 0x20) >= 0x61 && (k | 0x20) <= 0x7a);

/** Trimmed of CSS's whitespace only: `String.trim` also takes U+00A0, U+FEFF, U+2003..., which CSS reads as a name's or value's own characters. */
function cssTrim(s: string): string {
  // Index by index: a regex anchored at the end retried every space of a long run (quadratic).
  let start = 0;
  let end = s.length;
  while (start < end && CSS_SPACE.has(s[start] as string)) start++;
  while (end > start && CSS_SPACE.has(s[end - 1] as string)) end--;
  return s.slice(start, end);
}
const CSS_SPACE = new Set(["\t", "\n", "\f", "\r", " "]);

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
const cssUnescape = (s: string) =>
  s.includes("\\")
    ? s.replace(/\\(?:([0-9a-fA-F]{1,6})[\t\n\f\r ]?|([^\n]))/g, (_, hex: string | undefined, c: string) =>
        hex === undefined ? (c ?? "") : codePoint(Number.parseInt(hex, 16)),
      )
    : s;

/** An escape's code point, U+FFFD for one CSS does not allow (zero, a surrogate, past U+10FFFF). */
const codePoint = (n: number) =>
  String.fromCodePoint(n === 0 || (n >= 0xd800 && n <= 0xdfff) || n > 0x10ffff ? 0xfffd : n);

/** CSS matches keywords ASCII case-insensitively (`toLowerCase` would also fold the Kelvin sign to `k`). */
const asciiLower = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
