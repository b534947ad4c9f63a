import { type ChildNode, type Element, isTag, type ParentNode, Text } from "domhandler";
import { DomUtils, parseDocument } from "htmlparser2";
import { htmlInteger } from "./html-integer";
import { DROPPED } from "./html-prepass";
import { ownRendering } from "./inline-style";

/**
 * mdream copies what it is handed into Markdown as it is (URLs, titles, code, raw HTML for what it
 * cannot write as Markdown), and whoever renders the answer reads that Markdown again: a page could
 * end a link, a code block or a table cell early and write Markdown or HTML of its own. So the DOM
 * is reshaped before mdream sees it, until nothing it copies can end or open anything. Apart from
 * markdown-safety.ts because this side writes mdream's input and knows HTML; that side reads
 * mdream's output as a renderer would, and checks what this side's passes could still have missed.
 */

// Markdown also drops the raw-text elements: mdream copies their content verbatim, so
// `<title><img src=x onerror=…></title>` came out as an HTML block a renderer runs.
export const MD_DROPPED = [...DROPPED, "title", "xmp", "plaintext", "textarea", "noembed", "noframes"];

/**
 * mdream copies a link's or image's `href`, `src` and `title` into the Markdown as they are, and a
 * renderer then reads them as Markdown: a line break, a space, a control character or a bracket in
 * them could end the link and leave what followed as Markdown of its own (an autolink
 * `<javascript:…>`, a reference definition, raw `<img onerror>`). So before mdream runs, through
 * htmlparser2's own DOM (the parser the prepass runs): titles are dropped (a tooltip, not content),
 * every URL is percent-encoded down to characters that cannot end or open anything (mdream then
 * writes it bare, no `<…>`), comments and directives go (neither converter writes them, and
 * the two parsers disagree on where some end: `--!>`), and so do the elements mdream drops.
 */
export function safeForMarkdown(html: string): {
  html: string;
  mark?: string;
  linkMark?: string;
  breakMark?: string;
  /** Some list may start past 1 (`<ol start>`, `reversed`, `<li value>`): mdream's own start at 1. */
  numbered: boolean;
} {
  const doc = parseDocument(html);
  dropUnshown(doc, false);
  // Private-use characters the page holds, decoded (`&#xE000;` is one): none of them is a mark.
  const taken = new Set<string>();
  const take = (s: string) => {
    if (PRIVATE_USE.test(s)) for (const [c] of s.matchAll(PRIVATE_USE_ALL)) taken.add(c);
  };
  take(html);
  // Text that starts a line after a <br> (see markdown-continuations.ts): the first text after a
  // <br> with only inline elements between them.
  const afterBreak: Text[] = [];
  let breakOpen = false;
  let numbered = false;
  const removed: ChildNode[] = [];
  const spaced: Element[] = [];
  // Until the first character the answer shows.
  let opening = true;
  const endingInLt: Text[] = [];
  const codes: { node: Element; inLink: boolean }[] = [];
  // What each node's ancestors are, carried down (one walk, linear: asking each node's ancestors
  // made 400 KB of code 500 elements deep cost over a second).
  const walk = (nodes: ChildNode[], at: Ancestry) => {
    for (const node of nodes) {
      if (node.type === "comment" || node.type === "directive") removed.push(node);
      // Dropped by mdream anyway; and the serializer writes the text of <noscript>, <iframe>,
      // <noembed>, <noframes>, <plaintext>, <xmp>, <style> and <script> unescaped, which htmlparser2
      // had decoded (`&lt;a title=…&gt;` inside <noscript>, or after a self-closed `<style/>`):
      // mdream then read it as markup this pass never saw.
      else if ("name" in node && MD_DROPPED.includes(node.name)) removed.push(node);
      else if (node.type === "text") {
        // A bare carriage return (from `&#13;`, or the page's own line ends) is a line break to a
        // renderer but not to mdream, which sized a <pre>'s fence by "\n" lines only: "\r```\r"
        // closed it early and let the rest out as Markdown.
        if (node.data.includes("\r")) node.data = node.data.replace(/\r\n?/g, "\n");
        take(node.data);
        if (breakOpen && (at.pre || at.code)) breakOpen = false;
        else if (breakOpen && /\S/.test(node.data)) {
          afterBreak.push(node);
          breakOpen = false;
        }
        if (opening) {
          // mdream trims the answer's start, a no-break space included, after deciding what to
          // escape on the first line: `<p>&nbsp;+ a</p>` came out "+ a", a list. It goes first.
          if (!at.pre && !at.code) node.data = node.data.replace(LEADING_SPACE, "");
          if (node.data) opening = false;
        }
        if (node.data.endsWith("<") && !at.pre && !at.code) endingInLt.push(node);
      } else if ("attribs" in node) {
        if (PRINTED.has(node.name)) opening = false;
        capAttributes(node);
        for (const v of Object.values(node.attribs)) take(v);
        if (
          (node.name === "ol" && ("start" in node.attribs || "reversed" in node.attribs)) ||
          (node.name === "li" && "value" in node.attribs)
        )
          numbered = true;
        if (node.name === "br" && !at.pre && !at.code) breakOpen = true;
        else if (!inline(node)) breakOpen = false;
        delete node.attribs.title;
        // An alt with a blank line would end its image (mdream escapes what it could open).
        if (node.attribs.alt) node.attribs.alt = node.attribs.alt.replace(/[\r\n]+/g, " ");
        for (const a of ["href", "src"]) {
          const v = node.attribs[a];
          if (v !== undefined) node.attribs[a] = inertUrl(v);
        }
        const original = node.name;
        renameForMarkdown(node, at.table, at.cell);
        // mdream writes code as it is (`&lt;` back to `<`): safe only while it stays a code block
        // or span. A <pre> inside an inline element or a heading got its fence on the line of `**`
        // or `## ` (no code block), and a blank line or a table inside <code> split the span: the
        // code became Markdown and HTML of its own. Such a <pre> becomes inline code, and inline
        // code (the outermost) one line of text.
        if (node.name === "pre" && !at.blocks) node.name = "code";
        // Emphasis inside emphasis of its own kind shows as the outer one does; written again, its
        // delimiters ran into the outer's ("<em><em>x</em>y</em>": "**x*y*").
        const kind = DELIMITER_KIND[node.name] ?? 0;
        if (at.delimited & kind) node.name = "span";
        const opensCode = node.name === "code" && !at.pre && !at.code;
        if (opensCode) codes.push({ node, inLink: at.link });
        if (
          !at.pre &&
          !at.code &&
          SPACED_BEFORE.has(node.name) &&
          (node.name !== "a" || "href" in node.attribs)
        )
          spaced.push(node);
        const inside: Ancestry = {
          table: at.table || original === "table",
          cell: at.cell || (at.table && (original === "td" || original === "th")),
          blocks: at.blocks && BLOCK_PARENTS.has(node.name),
          pre: at.pre || (node.name === "pre" && !at.code),
          code: at.code || opensCode,
          link: at.link || node.name === "a",
          // A block starts afresh: mdream writes the outer delimiters around it, where they
          // render as nothing, so emphasis inside it is written again.
          delimited: ENDS_DELIMITERS.has(node.name) ? 0 : at.delimited | (node.name === "span" ? 0 : kind),
        };
        walk(node.children, inside);
        // Not in a <pre> or code, whose spaces are its text (`<pre><span> a</span>` kept its indent).
        if (!inside.pre && !inside.code) hoistInlineEdges(node);
      } else if ("children" in node) walk(node.children, at);
    }
  };
  walk(doc.children, {
    table: false,
    cell: false,
    blocks: true,
    pre: false,
    code: false,
    link: false,
    delimited: 0,
  });
  hoistInlineEdges(doc);
  // Taken out of their parents in one pass each: removing them one by one searched the parent's
  // children every time (57,000 comments in one element took 1.6 s).
  const doomed = new Set(removed);
  for (const parent of new Set(removed.map((n) => n.parent))) {
    if (parent) parent.children = parent.children.filter((n) => !doomed.has(n));
  }
  // Inline code right after inline code (nothing between them once comments are gone) joins it:
  // mdream wrote `<code>a</code><code>b</code>` as "`a``b`", one span holding "a``b".
  // What is right before each, read from the children as rebuilt: `prev` still named what stood
  // there before hoisting (an empty <span> now gone, or nothing where two <b> became one).
  const previous = new Map<ChildNode, ChildNode | undefined>();
  for (const parent of new Set(codes.map((c) => c.node.parent))) {
    let before: ChildNode | undefined;
    for (const child of parent?.children ?? []) {
      previous.set(child, before);
      before = child;
    }
  }
  const joined = new Map<Element, Text>();
  const spans: { node: Element; text: Text; inLink: boolean }[] = [];
  for (const { node, inLink } of codes) {
    const data = DomUtils.textContent(node).replace(/\s+/g, " ");
    const before = previous.get(node);
    const into = before && isTag(before) ? joined.get(before) : undefined;
    // In place: replacing an element searches its parent's children, quadratic for a parent
    // holding tens of thousands of them.
    node.attribs = {};
    if (into) {
      into.data += data;
      node.name = "span";
      node.children = [];
      joined.set(node, into);
      continue;
    }
    const text = new Text(data);
    node.children = [text];
    text.parent = node;
    joined.set(node, text);
    spans.push({ node, text, inLink });
  }
  for (const { node, text, inLink } of spans) {
    // Where marked reads a code span differently from CommonMark, code that holds a "<" is written
    // as escaped text (a <span>): inside link text (marked can end the span early) and with a
    // backslash before a "|" (marked counts a run of backslashes to decide whether a pipe splits a
    // table cell, even inside code; markdown-it does not).
    if (text.data.includes("<") && (inLink || /\\\|/.test(text.data))) {
      node.name = "span";
      if (text.data.endsWith("<")) endingInLt.push(text);
    }
  }
  const mark = endingInLt.length ? unusedMark(taken) : undefined;
  for (const text of endingInLt) text.data = `${text.data.slice(0, -1)}${mark ?? "&lt;"}`;
  const linkMark = spaced.length ? unusedMark(taken) : undefined;
  if (linkMark) insertBefore(spaced, linkMark);
  const breakMark = afterBreak.length ? unusedMark(taken) : undefined;
  if (breakMark) {
    for (const text of afterBreak) {
      const at = text.data.search(/\S/);
      if (at >= 0) text.data = `${text.data.slice(0, at)}${breakMark}${text.data.slice(at)}`;
    }
  }
  return { html: DomUtils.getOuterHTML(doc), mark, linkMark, breakMark, numbered };
}

/**
 * mdream starts a link, a strikethrough or inline code holding a backtick with a space after any
 * character but "(" or a space: `foo<a href="/u">bar</a>` came out "foo [bar](/u)", a word the
 * page did not split. Each such
 * element gets a mark (a private-use character the page does not contain) right before it, and
 * joinAtMarks takes the mark out with the space mdream put after it.
 */
const SPACED_BEFORE = new Set(["a", "code", "del", "q", "s", "strike"]);
function insertBefore(elements: Element[], mark: string) {
  const marked = new Set<ChildNode>(elements);
  // Each parent's children rebuilt once: inserting one by one searched them every time.
  for (const parent of new Set(elements.map((e) => e.parent))) {
    if (!parent) continue;
    const children: ChildNode[] = [];
    for (const child of parent.children) {
      if (marked.has(child)) {
        const text = new Text(mark);
        text.parent = parent;
        children.push(text);
      }
      children.push(child);
    }
    parent.children = children;
  }
}
export function joinAtMarks(md: string, mark: string): string {
  // The space goes only before what such an element starts with (one that writes nothing keeps the
  // page's own space after it); a "!" before a link, not itself escaped, would make it an image: it
  // is escaped instead. Found with indexOf and looked back from by hand: `(\\*)(!?)mark` tried
  // every start in a run of backslashes (40,000 of them: 7.6 s).
  const out: string[] = [];
  let from = 0;
  for (let at = md.indexOf(mark); at >= 0; at = md.indexOf(mark, from)) {
    let kept = md.slice(from, at);
    if (kept.endsWith("!")) {
      let slashes = 0;
      while (slashes < kept.length - 1 && kept.charCodeAt(kept.length - 2 - slashes) === 0x5c) slashes++;
      if (slashes % 2 === 0) kept = `${kept.slice(0, -1)}\\!`;
    }
    out.push(kept);
    from = at + mark.length;
    if (md[from] === " " && /[[~`"]/.test(md[from + 1] ?? "")) from++;
  }
  out.push(md.slice(from));
  return out.join("");
}

/**
 * Emphasis, strong emphasis and strikethrough open only before, and close only after, a character
 * that is not whitespace (CommonMark's flanking rules): mdream wrote `a<b> b</b>c` as "a** b**c",
 * shown with its asterisks; and it drops an inline element's whitespace when that is all it holds
 * (`a<span> </span>b` and `a<i> </i>b` came out "ab"). So whitespace (a no-break space too) and
 * line breaks at either edge of an inline element move out of it, innermost first (the walk calls
 * this after an element's children), each parent's children rebuilt once. Not from a link (its
 * text may start with a space; an <a> without href is plain text) nor from code (whose spaces are
 * its text).
 */
const DELIMITER: Record<string, string> = {
  b: "**",
  strong: "**",
  i: "*",
  em: "*",
  del: "~~",
  s: "~~",
  strike: "~~",
};
const DELIMITED = new Set(Object.keys(DELIMITER));
/** One bit per delimiter: elements writing the same one are one kind (b and strong, del and s). */
const DELIMITERS = [...new Set(Object.values(DELIMITER))];
const DELIMITER_KIND: Record<string, number> = Object.fromEntries(
  Object.entries(DELIMITER).map(([name, d]) => [name, 1 << DELIMITERS.indexOf(d)]),
);
const INLINE = new Set([
  ...DELIMITED,
  ..."abbr acronym bdi bdo big cite data dfn font ins label mark nobr q small span sub sup time tt u var".split(
    " ",
  ),
]);
/**
 * What rises out of an inline element (whitespace and <br>s) stays one node while it rises through
 * the elements around it: moved node by node at every level, a nest 500 deep cost depth x run
 * (500 spans, each ending in 150 " <br>": 11.6 s). A run is an empty Text standing for its nodes,
 * written out where it stops rising (inside a block, or kept in the middle of an element).
 */
const runs = new WeakMap<Text, ChildNode[]>();
function flatten(nodes: ChildNode[], out: ChildNode[]): ChildNode[] {
  const stack = [...nodes].reverse();
  while (stack.length > 0) {
    const node = stack.pop() as ChildNode;
    const run = node.type === "text" ? runs.get(node as Text) : undefined;
    if (run) for (let i = run.length - 1; i >= 0; i--) stack.push(run[i] as ChildNode);
    else out.push(node);
  }
  return out;
}
function hoistInlineEdges(parent: ParentNode) {
  if (!parent.children.some(inline)) return;
  // An inline parent's own parent moves its edges on: what rose stays one run until then.
  const rising = isTag(parent as ChildNode) && inline(parent as ChildNode);
  const children: ChildNode[] = [];
  const emit = (moved: ChildNode[]) => {
    if (moved.length === 0) return;
    if (!rising) flatten(moved, children);
    else if (moved.length === 1 && runs.has(moved[0] as Text)) children.push(moved[0] as ChildNode);
    else {
      const run = new Text("");
      runs.set(run, moved);
      children.push(run);
    }
  };
  for (const child of parent.children) {
    // Comments go anyway (below); gone now, emphasis on either side of one meets and joins.
    if (child.type === "comment") continue;
    if (!inline(child)) {
      children.push(child);
      continue;
    }
    const inner = child.children;
    const before: ChildNode[] = [];
    let from = 0;
    while (from < inner.length) {
      const moved = splitEdge(inner[from] as ChildNode, true);
      if (!moved) break;
      before.push(moved);
      if (moved !== inner[from]) break;
      from++;
    }
    let to = inner.length;
    const after: ChildNode[] = [];
    while (to > from) {
      const moved = splitEdge(inner[to - 1] as ChildNode, false);
      if (!moved) break;
      after.push(moved);
      if (moved !== inner[to - 1]) break;
      to--;
    }
    after.reverse();
    emit(before);
    const kept = flatten(inner.slice(from, to), []);
    // The same delimiter right after itself ("**a****b**") reads as neither: one element holds both.
    const last = children.at(-1);
    if (last && isTag(last) && DELIMITED.has(child.name) && DELIMITER[last.name] === DELIMITER[child.name]) {
      for (const c of kept) {
        c.parent = last;
        last.children.push(c);
      }
      child.children = [];
    } else if (kept.length > 0) {
      for (const c of kept) c.parent = child;
      child.children = kept;
      children.push(child);
    }
    // (An inline element left empty writes nothing and goes.)
    emit(after);
  }
  for (const c of children) c.parent = parent;
  parent.children = children;
}
/** An inline element, or an <a> without href (mdream writes its text only). */
const inline = (node: ChildNode): node is Element =>
  isTag(node) && (INLINE.has(node.name) || (node.name === "a" && !("href" in node.attribs)));
const SPACE = /[\p{Zs}\t\n\f\r]/u;
/** The whitespace or <br> at one edge of an inline element, as a node of its own (or the edge itself). */
function splitEdge(edge: ChildNode, leading: boolean): ChildNode | undefined {
  if (isTag(edge)) return edge.name === "br" ? edge : undefined;
  if (edge.type !== "text") return undefined;
  const text = edge as Text;
  if (runs.has(text)) return text;
  const data = text.data;
  // Counted char by char from the edge: /\s+$/ tried every start of a long inner run (quadratic).
  let n = 0;
  if (leading) while (n < data.length && SPACE.test(data[n] as string)) n++;
  else while (n < data.length && SPACE.test(data[data.length - 1 - n] as string)) n++;
  if (n === data.length) return text;
  if (n === 0) return undefined;
  text.data = leading ? data.slice(n) : data.slice(0, data.length - n);
  return new Text(leading ? data.slice(0, n) : data.slice(data.length - n));
}

const LEADING_SPACE = new RegExp(`^${SPACE.source}+`, "u");
/** Elements mdream writes something for with no text of their own. */
const PRINTED = new Set(["img", "br", "hr", "pre", "code", "input", "a"]);

/**
 * Leaves out what an element's own attributes hide (inline-style.ts), as text mode does: elements
 * with `hidden` or `display: none`, and under `visibility: hidden` every text but what sets
 * `visibility: visible` again (an element left with none goes whole: no empty item or heading).
 * mdream's own check of these attributes is a case-sensitive substring test (it kept
 * `DISPLAY:NONE`, and dropped `hidden style="display:block"` a browser shows), so what passes here
 * goes to it without them. Says whether anything shown is left in `parent`.
 */
function dropUnshown(parent: ParentNode, invisible: boolean): boolean {
  let shows = false;
  let dropped = false;
  // Items an <ol> leaves out for their visibility before its first written one: they keep their
  // numbers in a browser, so the list starts past them (a gap further down Markdown cannot say:
  // renderers number items on from the first).
  let skipped = 0;
  let itemKept = false;
  const kept: ChildNode[] = [];
  for (const node of parent.children) {
    if (isTag(node)) {
      const own = "hidden" in node.attribs || "style" in node.attribs ? ownRendering(node) : undefined;
      if (own && !own.rendered) {
        dropped = true;
        continue;
      }
      if (own) {
        delete node.attribs.style;
        delete node.attribs.hidden;
      }
      const hidden = own?.visibility === "hidden" || (invisible && own?.visibility !== "visible");
      const inner = dropUnshown(node, hidden);
      if (hidden && !inner) {
        dropped = true;
        if (node.name === "li" && !itemKept) skipped++;
        continue;
      }
      shows = true;
      itemKept ||= node.name === "li";
    } else if (node.type === "text" && invisible) {
      dropped = true;
      continue;
    } else shows ||= node.type === "text";
    kept.push(node);
  }
  // Once per parent: removing nodes one by one searched the parent's children every time.
  if (dropped) parent.children = kept;
  if (skipped > 0 && isTag(parent as ChildNode) && (parent as Element).name === "ol") {
    const ol = parent as Element;
    ol.attribs.start = String((htmlInteger(ol.attribs.start) ?? 1) + skipped);
  }
  return shows;
}

/** Where a node sits: in a table (and a cell of it), under block containers only, in code. */
interface Ancestry {
  table: boolean;
  cell: boolean;
  /** Every ancestor a block container mdream starts on a new line (BLOCK_PARENTS). */
  blocks: boolean;
  /** Inside a <pre> that stays a code block. */
  pre: boolean;
  /** Inside inline code (a <code>, or a <pre> made inline code). */
  code: boolean;
  link: boolean;
  /** The kinds of emphasis open (DELIMITER_KIND's bits). */
  delimited: number;
}

/**
 * mdream's filter reads an element's attributes in quadratic time (40,000 on one <div>: 2.7 s);
 * the few it reads (href, src, alt, start, colspan …) are among the first 256 on any real page.
 */
export const MAX_ATTRIBUTES = 256;
function capAttributes(node: Element) {
  let count = 0;
  for (const _ in node.attribs) {
    if (++count > MAX_ATTRIBUTES) {
      const kept = Object.keys(node.attribs).slice(0, MAX_ATTRIBUTES);
      node.attribs = Object.fromEntries(kept.map((name) => [name, node.attribs[name] as string]));
      return;
    }
  }
}

/**
 * mdream writes some elements as raw HTML, and text after such a tag escaped the Markdown way
 * (`\<img …>`), which a raw HTML block does not read as an escape: those become plain containers.
 * Table parts outside a table made it think it was in a cell, and inside a cell it writes lists,
 * headings, rules, <pre> and nested tables raw: there they become inline text.
 */
const RAW_AS_BLOCK = new Set(["address", "dd", "details", "dl", "dt", "summary"]);
const RAW_AS_INLINE = new Set(["ins", "mark", "sub", "sup", "u"]);
const TABLE_PARTS = new Set(["thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup", "col"]);
const BLOCKS_IN_CELL = new Set([
  ...TABLE_PARTS,
  ...RAW_AS_BLOCK,
  "table",
  "ul",
  "ol",
  "menu",
  "blockquote",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
]);
function renameForMarkdown(node: Element, inTable: boolean, inCell: boolean) {
  const name = node.name;
  if (inCell) {
    if (name === "pre") node.name = "code";
    else if (name === "hr") node.name = "br";
    else if (name === "li") {
      node.name = "span";
      DomUtils.appendChild(node, new Text(" "));
    } else if (BLOCKS_IN_CELL.has(name) || RAW_AS_INLINE.has(name)) node.name = "span";
  } else if (RAW_AS_BLOCK.has(name) || (!inTable && TABLE_PARTS.has(name))) node.name = "div";
  else if (RAW_AS_INLINE.has(name)) node.name = "span";
}

/**
 * mdream escapes "<" only when the character after it, in the same text node, could open a tag:
 * a "<" that ends one (`a &lt;<span>img onerror…`) came out bare before the next node's text. So
 * it goes through mdream as a mark (a private-use character the page does not contain) and comes
 * back as `&lt;` where a tag or autolink could start after it (read the same, opens nothing, in
 * Markdown text and in the raw HTML mdream writes), else as "<". A page holding every candidate
 * gets the text `&lt;` (mdream escapes its "&": shown as "&lt;", still inert).
 */
function unusedMark(taken: Set<string>): string | undefined {
  for (let c = 0xe000; c <= 0xe0ff; c++) {
    const mark = String.fromCharCode(c);
    if (!taken.has(mark)) {
      taken.add(mark);
      return mark;
    }
  }
  return undefined;
}
const PRIVATE_USE = /[\ue000-\ue0ff]/;
const PRIVATE_USE_ALL = new RegExp(PRIVATE_USE.source, "g");
export const restoreMark = (md: string, mark: string) =>
  md.replace(new RegExp(`${mark}(?=[A-Za-z/!?])`, "g"), "&lt;").replaceAll(mark, "<");

// Where a <pre> stays a code block: every ancestor a block container mdream starts on a new line
// and writes as Markdown (not <figcaption>, which it writes as emphasis; those it writes as raw
// HTML, where a fence is no fence, are plain <div>s by now: renameForMarkdown).
const BLOCK_PARENTS = new Set([
  "html",
  "body",
  "main",
  "article",
  "section",
  "aside",
  "header",
  "footer",
  "nav",
  "div",
  "form",
  "fieldset",
  "figure",
  "blockquote",
  "details",
  "li",
  "ul",
  "ol",
  "dd",
  "table",
  "thead",
  "tbody",
  "tfoot",
  "tr",
  "td",
  "th",
  "caption",
  "center",
  "hgroup",
]);
/** Blocks (as renamed, so not those inline in a table cell): emphasis outside does not reach in. */
const ENDS_DELIMITERS = new Set([
  ...BLOCK_PARENTS,
  ..."p h1 h2 h3 h4 h5 h6 pre hr dl dt menu legend".split(" "),
]);
/**
 * A URL as a browser reads it (tabs and line breaks dropped, leading and trailing controls and
 * spaces trimmed), then everything but RFC 3986's unreserved and reserved characters, less
 * ( ) [ ] and ', percent-encoded.
 */
function inertUrl(url: string) {
  let start = 0;
  let end = url.length;
  while (start < end && url.charCodeAt(start) <= 0x20) start++;
  while (end > start && url.charCodeAt(end - 1) <= 0x20) end--;
  return url
    .slice(start, end)
    .replace(/[\t\n\r]/g, "")
    .replace(/[^A-Za-z0-9\-._~:/?#@!$&*+,;=%]/gu, (ch) =>
      [...new TextEncoder().encode(ch)]
        .map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`)
        .join(""),
    );
}
