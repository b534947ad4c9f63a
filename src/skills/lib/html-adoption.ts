import type { ChildNode, Element, ParentNode } from "domhandler";

/**
 * A nested <a> or <nobr>, as a browser's parser places it. HTML's tree construction does not nest
 * them: an <a> start tag while an <a> is open (a <nobr> in a <nobr>) first closes the open one and
 * every element opened inside it, then opens the formatting elements among those again (<b>, <i>,
 * <font> …, with their attributes), and the new one inside them ("adoption agency"). htmlparser2,
 * which text mode's DOM comes from, nests it, so what follows it stayed inside whatever it stood in:
 * `<a><span style="display:none">x<a>y</a>z</span></a>` showed "y z" in Chromium, nothing here.
 *
 * `adoptNested(outer)` takes out of `outer` the first such element inside it and everything after
 * it, wrapped in copies of the formatting elements between (the browser's reopened ones), and
 * returns those nodes, which stand right after `outer` (its parent's; the formatter walking
 * `outer` walks them next). Only where the elements between are all inline (a block between
 * makes the browser move the block out too, and what it held before: not followed) and none is a
 * scope boundary (table parts, <template>, <object>, <marquee>, <applet>: there the inner one
 * opens inside them, nested). Linear over a page: a search stops at the first nested one, so each
 * node is searched from one <a> (or <nobr>) at most, the nearest around it, and each node moved
 * is linked into one new parent.
 */
export function adoptNested(outer: Element): ChildNode[] {
  if (!ADOPTING.has(outer.name)) return [];
  const path = nestedSameName(outer);
  if (path === undefined) return [];
  // From the innermost level out: what follows the nested element at each level leaves it.
  let carried: ChildNode[] = [path[path.length - 1] as Element];
  for (let level = path.length - 2; level >= 0; level--) {
    const holder = path[level] as Element;
    const at = holder.children.indexOf(path[level + 1] as Element);
    // Appended in place: a run of levels that are not reopened passes one array up.
    const moved = carried;
    for (let i = at + 1; i < holder.children.length; i++) moved.push(holder.children[i] as ChildNode);
    // The nested element leaves its holder; an element between stays, holding what came before.
    const kept = level === path.length - 2 ? at : at + 1;
    holder.children.length = kept;
    const last = holder.children[kept - 1];
    if (last) last.next = null;
    carried = level > 0 && REOPENED.has(holder.name) ? [reopened(holder, moved)] : moved;
  }
  link(outer.parent, carried);
  const first = carried[0];
  if (first) first.prev = outer;
  return carried;
}

/**
 * The path from `outer` down to the first element named as it is inside it (document order), or
 * undefined: none, or one past a boundary, or one with an element between that is not inline.
 */
function nestedSameName(outer: Element): Element[] | undefined {
  const path: Element[] = [outer];
  const search = (node: Element): boolean => {
    for (const child of node.children) {
      if (child.type !== "tag") continue;
      const elem = child as Element;
      if (elem.name === outer.name) {
        path.push(elem);
        return true;
      }
      if (BOUNDARY.has(elem.name)) continue;
      path.push(elem);
      if (search(elem)) return true;
      path.pop();
    }
    return false;
  };
  if (!search(outer)) return undefined;
  return path.slice(1, -1).every((e) => INLINE.has(e.name)) ? path : undefined;
}

/** A copy of `elem` (its name and attributes) holding `nodes`. */
function reopened(elem: Element, nodes: ChildNode[]): Element {
  const copy = elem.cloneNode(false);
  copy.children = nodes;
  link(copy, nodes);
  return copy;
}

/** `nodes` as siblings under `parent`. */
function link(parent: ParentNode | null, nodes: ChildNode[]): void {
  nodes.forEach((node, i) => {
    node.parent = parent;
    node.prev = nodes[i - 1] ?? null;
    node.next = nodes[i + 1] ?? null;
  });
}

const ADOPTING = new Set(["a", "nobr"]);
/** HTML's formatting elements: the ones a browser opens again after the nested one closes them. */
const REOPENED = new Set("a b big code em font i nobr s small strike strong tt u".split(" "));
/** Where an <a> or <nobr> start tag stops looking for an open one (scope and marker elements). */
const BOUNDARY = new Set("applet caption html marquee object table td template th".split(" "));
/** Elements between the two that are not HTML's "special" ones (no block moved out). */
const INLINE = new Set([
  ...REOPENED,
  ..."abbr acronym bdi bdo cite data del dfn ins kbd label mark q rb rp rt rtc ruby samp span sub sup time var".split(
    " ",
  ),
]);
