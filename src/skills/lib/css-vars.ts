import {
  asciiLower,
  cssTrim,
  cssUnescape,
  declarations,
  HEX_ESCAPE,
  identChar,
  priority,
} from "./css-declarations";

/**
 * CSS custom properties (`--d: none`) as inline styles declare them, and the `var()` a display or
 * visibility reads them through (`display: var(--d)`, `display: var(--x, none)`): a page hid text
 * from readers this way while html_clean, which did not read `var()`, wrote it out. As CSS
 * Variables Level 1 says and Chromium does: a custom property inherits (an ancestor's `--d: none`
 * is its descendants'), a declaration's `var()`s are replaced in the element that declares it, a
 * fallback stands in for a property that is not set, `initial` unsets one and `inherit`, `unset`,
 * `revert` and `revert-layer` take the parent's, a cycle makes every property in it unset, and a
 * replacement ends the token before it (`--d:no; display:var(--d)ne` is not `none`), and `var` is
 * any function so named once its escapes are read, in any ASCII case (`v\61r(`, `\56 AR(`). Stylesheets
 * are not read (inline-style.ts).
 *
 * Bounded: one property's value goes through at most MAX_VAR_REFERENCES `var()`s (memoised values
 * counted too); past that its text is taken as hidden (no page written for readers nests so deep,
 * and one written to hide text from them should not win by it). A value is kept whitespace-folded and
 * past MAX_VAR_TEXT characters is invalid, which CSS allows a browser to say of a long one (no
 * display or visibility is that long). Each element's values are computed once per name, and the
 * walk up to an ancestor's passes only elements that declare custom properties.
 */

/** A node of the converters' DOMs (domhandler's, html-to-text's): its attributes and its parent. */
export interface StyledNode {
  attribs?: Record<string, string>;
  parent?: StyledNode | null;
}

export const MAX_VAR_REFERENCES = 32;
export const MAX_VAR_TEXT = 1024;
/**
 * Steps (an ancestor looked at, a `var()` replaced) all of a document's resolutions may take
 * together; past it, what is left to resolve is taken as hidden. A page declaring custom
 * properties on each of 500 nested elements walks 500 of them for each name its leaves ask for.
 */
export const MAX_VAR_WORK = 500_000;

/** A value's replacement went past MAX_VAR_REFERENCES. */
export const PAST_BOUNDS = Symbol("past the var() bounds");

interface Custom {
  /** Its own declarations, as the cascade picks them: the name's raw value, whitespace folded. */
  declared: Map<string, string>;
  /**
   * Computed values by name (its own, or inherited); null: not set (the guaranteed-invalid value);
   * PAST_BOUNDS: its resolution went past the bounds (kept, so the next asker stops at once).
   */
  values: Map<string, string | null | typeof PAST_BOUNDS>;
}

const customs = new WeakMap<object, Custom | null>();
const declaringParents = new WeakMap<object, StyledNode | null>();

/**
 * A node's own custom properties, read once: the converters drop a style once they have read it,
 * so an element is read here when its own rendering is (before its descendants ask for it).
 */
export function customOf(node: StyledNode): Custom | null {
  let custom = customs.get(node);
  if (custom !== undefined) return custom;
  const style = node.attribs?.style;
  custom = style?.includes("--") ? readCustom(style) : null;
  customs.set(node, custom);
  return custom;
}

function readCustom(attribute: string): Custom | null {
  const declared = new Map<string, string>();
  const important = new Set<string>();
  for (const declaration of declarations(attribute.replace(/\r\n?|\f/g, "\n"))) {
    const colon = declaration.indexOf(":");
    if (colon < 0) continue;
    // Custom property names are case-sensitive; their escapes are read (`--\64` is `--d`).
    const name = cssUnescape(cssTrim(declaration.slice(0, colon)));
    if (!name.startsWith("--") || name.length < 3) continue;
    const p = priority(declaration.slice(colon + 1));
    if (important.has(name) && !p.important) continue;
    if (p.important) important.add(name);
    declared.set(name, fold(p.value));
  }
  return declared.size > 0 ? { declared, values: new Map() } : null;
}

/** Whitespace runs as one space, trimmed: what CSS's tokens keep of them. */
const fold = (s: string) => cssTrim(s.replace(/[\t\n\f\r ]+/g, " "));

/** The nearest ancestor that declares a custom property, memoised along the way. */
function declaringParent(node: StyledNode): StyledNode | null {
  const known = declaringParents.get(node);
  if (known !== undefined) return known;
  const path: StyledNode[] = [];
  let found: StyledNode | null = null;
  for (let n = node; ; ) {
    const parent = n.parent ?? null;
    if (parent === null) break;
    path.push(n);
    if (customOf(parent)) {
      found = parent;
      break;
    }
    const memo = declaringParents.get(parent);
    if (memo !== undefined) {
      path.push(parent);
      found = memo;
      break;
    }
    n = parent;
  }
  for (const n of path) declaringParents.set(n, found);
  return found;
}

interface Resolution {
  references: number;
  /** The document's work so far (every resolution in it draws on MAX_VAR_WORK). */
  budget: { work: number };
  /** Values being computed, for cycles: a frame marked cyclic computes to unset. */
  stack: { node: StyledNode; name: string; cyclic: boolean }[];
}

/**
 * `--name`'s computed value at `node`: declared there or on the nearest ancestor that declares it.
 * Memoised where the walk began (the node, or its nearest declaring ancestor, which its siblings
 * share) and where the name is declared, not at every element passed: that held an entry per
 * ancestor for every name asked (500 levels × 9,000 names: 6 s).
 */
function valueAt(node: StyledNode, name: string, r: Resolution): string | null {
  const start = customOf(node) ? node : declaringParent(node);
  if (!start) return null;
  const memo = (customOf(start) as Custom).values;
  const known = memo.get(name);
  if (known === PAST_BOUNDS) throw PAST_BOUNDS;
  if (known !== undefined) return known;
  let value: string | null = null;
  for (let n: StyledNode | null = start; n; n = declaringParent(n)) {
    spend(r, 1);
    const custom = customOf(n) as Custom;
    const seen = custom.values.get(name);
    if (seen === PAST_BOUNDS) throw PAST_BOUNDS;
    if (seen !== undefined) {
      value = seen;
      break;
    }
    if (!custom.declared.has(name)) continue;
    const at = r.stack.findIndex((f) => f.node === n && f.name === name);
    if (at >= 0) {
      for (let i = at; i < r.stack.length; i++) (r.stack[i] as Resolution["stack"][number]).cyclic = true;
      return null; // not memoised: the frame that began the cycle records its own answer
    }
    try {
      value = declaredValue(n, name, custom.declared.get(name) as string, r);
    } catch (e) {
      if (e === PAST_BOUNDS) {
        custom.values.set(name, PAST_BOUNDS);
        memo.set(name, PAST_BOUNDS);
      }
      throw e;
    }
    custom.values.set(name, value);
    break;
  }
  memo.set(name, value);
  return value;
}

/** Counts `units` of work against the document's budget (MAX_VAR_WORK); throws PAST_BOUNDS past it. */
function spend(r: Resolution, units: number): void {
  r.budget.work += units;
  if (r.budget.work > MAX_VAR_WORK) throw PAST_BOUNDS;
}

/** The document a node is in (its topmost ancestor), memoised along the way. */
function rootOf(node: StyledNode): StyledNode {
  const path: StyledNode[] = [];
  let n = node;
  let root: StyledNode | undefined;
  for (;;) {
    root = roots.get(n);
    if (root) break;
    const parent = n.parent ?? null;
    path.push(n);
    if (parent === null) {
      root = n;
      break;
    }
    n = parent;
  }
  for (const p of path) roots.set(p, root);
  return root;
}
const roots = new WeakMap<object, StyledNode>();
const budgets = new WeakMap<object, { work: number }>();

const INHERITING = new Set(["inherit", "unset", "revert", "revert-layer"]);

function declaredValue(node: StyledNode, name: string, raw: string, r: Resolution): string | null {
  const keyword = asciiLower(cssUnescape(raw));
  if (keyword === "initial") return null;
  if (INHERITING.has(keyword)) {
    const above = declaringParent(node);
    return above ? valueAt(above, name, r) : null;
  }
  const frame = { node, name, cyclic: false };
  r.stack.push(frame);
  const value = substitute(raw, node, r);
  r.stack.pop();
  return frame.cyclic ? null : value;
}

/**
 * `text` with each `var()` replaced by its value at `node` (or its fallback), folded; null when one
 * has neither or is malformed (the declaration is then invalid at computed-value time), or when
 * the result is past MAX_VAR_TEXT. Throws PAST_BOUNDS past MAX_VAR_REFERENCES.
 */
function substitute(text: string, node: StyledNode, r: Resolution): string | null {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      while (++i < text.length && text[i] !== c && text[i] !== "\n") if (text[i] === "\\") i++;
      continue;
    }
    if (c !== "\\" && !identChar(c.charCodeAt(0))) continue;
    // An identifier, read whole: a function named `var` in any ASCII case, its escapes read
    // (`v\61r(`, `\56 AR(`), is a var() to Chromium too.
    const start = i;
    let end = i;
    while (end < text.length) {
      if (text[end] === "\\") end += 1 + (HEX_ESCAPE.exec(text.slice(end + 1, end + 8))?.[0].length ?? 1);
      else if (identChar(text.charCodeAt(end))) end++;
      else break;
    }
    i = end - 1;
    if (text[end] !== "(" || asciiLower(cssUnescape(text.slice(start, end))) !== "var") continue;
    const close = closing(text, end + 1);
    const args = text.slice(end + 1, close);
    if (++r.references > MAX_VAR_REFERENCES) throw PAST_BOUNDS;
    spend(r, 1);
    const comma = topLevelComma(args);
    const name = cssUnescape(cssTrim(comma < 0 ? args : args.slice(0, comma)));
    if (!/^--./s.test(name)) return null;
    let value = valueAt(node, name, r);
    if (value === null) {
      if (comma < 0) return null;
      value = substitute(fold(args.slice(comma + 1)), node, r);
      if (value === null) return null;
    }
    out += `${text.slice(from, start)} ${value} `;
    if (out.length > MAX_VAR_TEXT * 2) return null;
    i = close;
    from = close + 1;
  }
  const value = fold(out + text.slice(from));
  return value.length > MAX_VAR_TEXT ? null : value;
}

/** The index of the `)` closing a function whose arguments begin at `from` (the text's end if none). */
function closing(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === '"' || c === "'") {
      while (++i < text.length && text[i] !== c && text[i] !== "\n") if (text[i] === "\\") i++;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return text.length;
}

/** The first `,` of a function's arguments outside strings and blocks (-1: none). */
function topLevelComma(args: string): number {
  let depth = 0;
  for (let i = 0; i < args.length; i++) {
    const c = args[i];
    if (c === "\\") i++;
    else if (c === '"' || c === "'") {
      while (++i < args.length && args[i] !== c && args[i] !== "\n") if (args[i] === "\\") i++;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    else if (c === "," && depth === 0) return i;
  }
  return -1;
}

/**
 * A display's or visibility's declared value with its `var()`s replaced as at `node`: the text, null
 * when it is invalid at computed-value time (the property is then unset), PAST_BOUNDS past the bounds.
 */
export function resolveVars(value: string, node: StyledNode): string | null | typeof PAST_BOUNDS {
  try {
    const root = rootOf(node);
    let budget = budgets.get(root);
    if (!budget) {
      budget = { work: 0 };
      budgets.set(root, budget);
    }
    return substitute(fold(value), node, { references: 0, budget, stack: [] });
  } catch (e) {
    if (e === PAST_BOUNDS) return PAST_BOUNDS;
    throw e;
  }
}
