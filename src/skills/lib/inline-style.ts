import { asciiLower, cssTrim, cssUnescape, declarations, priority } from "./css-declarations";
import { customOf, PAST_BOUNDS, resolveVars, type StyledNode } from "./css-vars";

/**
 * What an element's own attributes say about whether a browser shows it: `hidden`, and the
 * `display` and `visibility` its `style` attribute declares. Text hidden this way is the classic
 * carrier of instructions meant for an agent and never seen by a reader, so both modes of
 * html_clean leave it out. Stylesheets and classes are not read (a page's CSS can hide anything;
 * reading it means a cascade and selector matching); a `var()` is read from the inline styles of
 * the element and its ancestors (css-vars.ts).
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
 * `display: none`, which any declared display but `revert-layer` overrides, one whose `var()` is
 * invalid included). A `var()` is read from the custom properties of the element's own style and
 * its ancestors' (css-vars.ts), so the element's node is asked for, not only its attributes.
 */
export function ownRendering(node: StyledNode): OwnRendering {
  const attribs = node.attribs;
  const hiddenAttr = attribs?.hidden;
  const hidden = hiddenAttr !== undefined && asciiLower(hiddenAttr) !== "until-found";
  const style = attribs?.style;
  if (style === undefined) return hidden ? NOT_RENDERED : SHOWN;
  // Its custom properties are read now: a converter drops the style once it is decided.
  customOf(node);
  const declared = readStyle(style);
  const display = computedDisplay(declared.display, node);
  if (display === "none" || (display === undefined && hidden)) return NOT_RENDERED;
  const visibility = computedVisibility(declared.visibility, node);
  return visibility === undefined ? SHOWN : { rendered: true, visibility };
}

/** A declared value: ASCII-lowercased with its escapes read, and as written (a `var()`'s names are case-sensitive). */
interface Declared {
  value: string;
  raw: string;
  important: boolean;
}

/** What a declared display computes to: none, another, or none said (`revert-layer`: back to `hidden`'s). */
function computedDisplay(d: Declared | undefined, node: StyledNode): "none" | "other" | undefined {
  if (d === undefined) return undefined;
  let value = d.value;
  if (VAR.test(value)) {
    const resolved = resolveVars(d.raw, node);
    if (resolved === PAST_BOUNDS) return "none";
    // Invalid at computed-value time: unset, which for display (not inherited) is `inline`.
    if (resolved === null) return "other";
    value = asciiLower(cssUnescape(resolved));
    if (!validDisplay(value)) return "other";
  }
  return value === "revert-layer" ? undefined : value === "none" ? "none" : "other";
}

/** What a declared visibility computes to: hidden, visible again, or the parent's. */
function computedVisibility(v: Declared | undefined, node: StyledNode): Visibility {
  if (v === undefined) return undefined;
  let value = v.value;
  if (VAR.test(value)) {
    const resolved = resolveVars(v.raw, node);
    if (resolved === PAST_BOUNDS) return "hidden";
    // Invalid at computed-value time: unset, which for visibility (inherited) is the parent's.
    if (resolved === null) return undefined;
    value = asciiLower(cssUnescape(resolved));
  }
  return value === "hidden" || value === "collapse"
    ? "hidden"
    : value === "visible" || value === "initial"
      ? "visible"
      : undefined;
}

/** The `display` and `visibility` a style attribute declares, as CSS's cascade picks them. */
function readStyle(attribute: string): { display?: Declared; visibility?: Declared } {
  if (!STYLE_WORDS.test(attribute)) return {};
  // CSS's preprocessing (a browser's HTML parser has already made CR LF one LF; htmlparser2 keeps both).
  const style = attribute.replace(/\r\n?|\f/g, "\n");
  let display: Declared | undefined;
  let visibility: Declared | undefined;
  for (const declaration of declarations(style)) {
    const colon = declaration.indexOf(":");
    if (colon < 0) continue;
    const name = asciiLower(cssUnescape(cssTrim(declaration.slice(0, colon))));
    if (name !== "display" && name !== "visibility") continue;
    const { value: written, important } = priority(declaration.slice(colon + 1));
    const raw = cssTrim(written);
    const value = asciiLower(cssUnescape(raw));
    const valid =
      name === "display" ? validDisplay(value) || VAR.test(value) : VISIBILITY.has(value) || VAR.test(value);
    if (!valid) continue;
    // The last valid declaration wins, an !important one over any that is not.
    const winner = name === "display" ? display : visibility;
    if (winner?.important && !important) continue;
    if (name === "display") display = { value, raw, important };
    else visibility = { value, raw, important };
  }
  return { display, visibility };
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
  if (DISPLAY.has(value)) return true;
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
