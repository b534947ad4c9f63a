import { compile, type FormatCallback } from "html-to-text";
import { htmlInteger } from "./html-integer";
import { DROPPED, MAX_PREFIX_NESTING } from "./html-prepass";
import { ownRendering, STYLE_READ } from "./inline-style";

/**
 * html-to-text as text mode uses it: its selectors, and the formatters it lacks or gets wrong for
 * the text a reader expects (quotes and lists bounded in depth, ordered lists numbered as a browser
 * numbers them, captions, elements a browser lays out as blocks), compiled once per table layout
 * and kept for the isolate. Apart from the entry points because it is one library's configuration,
 * which lives as long as the isolate does; what it is handed, and how much, is the prepass's call.
 */

/**
 * What a browser never shows (its stylesheet hides it, whatever the page's CSS) beyond DROPPED:
 * html-to-text wrote it into the text, often glued to the next word ("<title>T</title>Hi" was
 * "THi", a <datalist>'s suggestions read as page text). An element with `hidden` is not shown
 * either (nor, already, counted by the prepass), nor a <dialog> that is not `open` (shownDialog),
 * nor what a <video> or <audio> holds (fallback for browsers without them: "Your browser does not
 * support video"). Markdown mode keeps its own list (MD_DROPPED). `hidden="until-found"` is shown
 * (shownOnly): a browser shows it on an inline element and reveals it on a block to find-in-page,
 * the same case as a closed <details>, whose content text mode keeps.
 */
const UNSHOWN = ["title", "datalist", "noembed", "noframes", "video", "audio"];

const COMMON_SELECTORS = [
  ...DROPPED.map((selector) => ({ selector, format: "skip" })),
  ...UNSHOWN.map((selector) => ({ selector, format: "skip" })),
  // Either may hide the element (inline-style.ts); the formatter walks it as its tag when shown.
  // Only a style naming display or visibility (or escaping a character) can: the formatter's
  // second walk cost 40,000 `<p style>` 440 → 761 ms.
  ...["[hidden]", ...STYLE_READ.map((word) => `[style*="${word}" i]`)].map((selector) => ({
    selector,
    format: "shownOnly",
  })),
  { selector: "a", options: { ignoreHref: true } },
  { selector: "img", format: "skip" },
  { selector: "h1", options: { uppercase: false } },
  { selector: "h2", options: { uppercase: false } },
  { selector: "h3", options: { uppercase: false } },
  { selector: "h4", options: { uppercase: false } },
  { selector: "h5", options: { uppercase: false } },
  { selector: "h6", options: { uppercase: false } },
  // html-to-text's own formatters up to MAX_PREFIX_NESTING levels (prefixBounded).
  { selector: "blockquote", format: "boundedQuote" },
  { selector: "ul", format: "boundedUnorderedList" },
  { selector: "ol", format: "boundedOrderedList" },
];
/**
 * Elements a browser lays out as blocks that html-to-text writes inline unless told (its defaults
 * cover p, div, the sectioning elements, headings, lists, quotes, pre, table and form): their text
 * ran into the next ("<dt>Price</dt><dd>$5</dd>" came out "Price$5"). A list and a figure keep a
 * blank line around them, as a <p> or a <ul> does (a browser gives them its margins); <menu> is a
 * block whose items are lines, unmarked. A <li> outside a list is a line of its own (itemBlock).
 */
const TEXT_BLOCKS = [
  ...["dl", "figure"].map((selector) => ({
    selector,
    format: "block",
    options: { leadingLineBreaks: 2, trailingLineBreaks: 2 },
  })),
  ..."address center details dd dt fieldset figcaption hgroup legend menu search summary"
    .split(" ")
    .map((selector) => ({
      selector,
      format: "block",
      options: { leadingLineBreaks: 1, trailingLineBreaks: 1 },
    })),
  { selector: "li", format: "itemBlock" },
  { selector: "dialog", format: "shownDialog" },
  // <pre> by their older names: a browser keeps their lines; inline, they ran into the next text.
  ...["listing", "plaintext", "xmp"].map((selector) => ({ selector, format: "pre" })),
  // A break opportunity, not a character: html-to-text kept it open until a line overflowed, which
  // only a table cell's 60-column wrap does, and there it split a later word in two ("a(" "b)").
  { selector: "wbr", format: "skip" },
];
/**
 * HTML's whitespace (ASCII: space, tab, CR, LF, FF). html-to-text adds U+200B (zero width space) to
 * it by default: "foo\u200bbar" came out "foo bar" here and "foo\u200bbar" in markdown mode (a
 * browser shows no space either). Both modes now keep it as the character it is.
 */
const HTML_WHITESPACE = " \t\r\n\f";
/** Tables laid out as text grids: what a reader of the text expects. */
const TEXT_OPTIONS = {
  wordwrap: false as const,
  whitespaceCharacters: HTML_WHITESPACE,
  selectors: [
    ...COMMON_SELECTORS,
    ...TEXT_BLOCKS,
    { selector: "table", format: "captionedTable", options: { uppercaseHeaderCells: false } },
  ],
};
/** Tables as plain blocks, one cell per line: for documents whose tables are too big to lay out. */
const BLOCK_TABLE_OPTIONS = {
  wordwrap: false as const,
  whitespaceCharacters: HTML_WHITESPACE,
  selectors: [
    ...COMMON_SELECTORS,
    ...TEXT_BLOCKS,
    ...["table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption"].map((selector) => ({
      selector,
      format: "block",
    })),
  ],
};

/**
 * Text mode's quotes and lists: html-to-text's own formatters up to MAX_PREFIX_NESTING levels,
 * plain blocks past it (a list's items one per line, no marker). Formatters run depth first, so
 * one count of the levels open says how deep an element is.
 */
function prefixBounded(): Record<string, FormatCallback> {
  let levels = 0;
  const bounded =
    (own: string): FormatCallback =>
    (whole, walk, builder, options) => {
      // A list's formatter is handed its written children only: a hidden item takes no marker
      // and no number, as in a browser (an ordered list reads them all: an item hidden by its
      // visibility still takes its number).
      const elem = own === "blockquote" ? whole : writtenOnly(whole);
      if (own === "blockquote" && blanked.has(whole) && !showsAgain(whole)) {
        // A quote with nothing visible left: its lines, not its "> " marks (as an empty item).
        builder.openBlock({ leadingLineBreaks: options.leadingLineBreaks || 2 });
        walk(whole.children, builder);
        builder.closeBlock({ trailingLineBreaks: options.trailingLineBreaks || 2 });
        return;
      }
      if (own !== "blockquote" && !(elem.children ?? []).some(written)) {
        // An empty list still ends the line, as an inline run's end does: html-to-text wrote
        // nothing, and "a<ul></ul>b" came out "ab". No block: the blocks around keep their spacing.
        endLine(builder);
        return;
      }
      if (levels < MAX_PREFIX_NESTING) {
        levels++;
        // Either list reads all its children: an item hidden by its visibility takes its number,
        // and one showing text again is written without its (hidden) marker.
        const format =
          own === "orderedList" ? orderedList : own === "unorderedList" ? unorderedList : undefined;
        // The count lives as long as its converter (textConverter): a throw must not leave it up.
        try {
          if (format) format(whole, walk, builder, options);
          else builder.options.formatters[own]?.(elem, walk, builder, options);
        } finally {
          levels--;
        }
        return;
      }
      builder.openBlock({ leadingLineBreaks: 2 });
      for (const child of elem.children ?? []) {
        if (own === "blockquote" || child.name !== "li") walk([child], builder);
        else {
          builder.openBlock({ leadingLineBreaks: 1 });
          walk(child.children ?? [], builder);
          builder.closeBlock({ trailingLineBreaks: 1 });
        }
      }
      builder.closeBlock({ trailingLineBreaks: 2 });
    };
  return {
    boundedQuote: bounded("blockquote"),
    boundedUnorderedList: bounded("unorderedList"),
    boundedOrderedList: bounded("orderedList"),
  };
}

type Node = Parameters<FormatCallback>[0];

/**
 * A list's child that writes anything: a rendered element (not `hidden`, not `display: none`)
 * whose text is visible, or holds some that is (`visibility: visible` inside `hidden`; an item
 * blanked with its list likewise), or a text not all whitespace (not a comment).
 */
const written = (child: Node) => {
  if (child.type !== "tag") return child.type === "text" && !/^\s*$/.test(child.data ?? "");
  const own = ownRendering(child);
  const invisible = own.visibility === "hidden" || blanked.has(child);
  return own.rendered && (!invisible || showsAgain(child));
};

/** A list's child that takes a number: a rendered item, visible or not (its marker's place stays). */
const numbered = (child: Node) => child.name === "li" && ownRendering(child).rendered;

/**
 * The elements blank has emptied (their style, which said so, is gone by then): an item or quote
 * among them with nothing visible left writes no marker. One call's DOM, so weakly held.
 */
const blanked = new WeakSet<Node>();

/** What a browser never shows, nor anything inside it, whatever a descendant's style says. */
const NEVER_SHOWN = new Set([...DROPPED, ...UNSHOWN]);

/**
 * Whether an element, were its visibility hidden, holds one that sets `visibility: visible` again,
 * answered once per element: each quote or item of a hidden region asked it of its whole subtree,
 * depth × size (510 hidden quotes over 54,000 elements: ~1 s, 0.13 s memoised). blank's edits keep the answer
 * (they drop only what is never shown, and styles that do not say visible).
 */
const showsAgainOf = new WeakMap<Node, boolean>();
function showsAgain(elem: Node): boolean {
  if (!elem.children?.length) return false; // most elements of a page: no entry for them
  let shows = showsAgainOf.get(elem);
  if (shows !== undefined) return shows;
  shows = false;
  for (const node of elem.children ?? []) {
    visibilityWork.visits++;
    if (node.type !== "tag" || NEVER_SHOWN.has(node.name ?? "")) continue;
    if (node.name === "dialog" && !("open" in (node.attribs ?? {}))) continue;
    const own = ownRendering(node);
    if (own.rendered && (own.visibility === "visible" || showsAgain(node))) {
      shows = true;
      break;
    }
  }
  showsAgainOf.set(elem, shows);
  return shows;
}

/** Children showsAgain has looked at, all calls together: its tests bound the work by the page's size. */
export const visibilityWork = { visits: 0 };

/** The node with other children, for a formatter that reads them (one object: no copy of its subtree). */
const withChildren = (node: Node, children: Node[]): Node =>
  Object.create(node, { children: { value: children } });

/**
 * A list as its formatter is to read it: without hidden items and comments (html-to-text's list
 * formatters pass over whitespace only). The list itself when it holds none, as most do.
 */
const writtenOnly = (list: Node): Node => {
  const children = list.children ?? [];
  const unwritten = (c: Node) => (c.type === "tag" ? !written(c) : c.type !== "text");
  return children.some(unwritten) ? withChildren(list, children.filter(written)) : list;
};

/**
 * Ends the line of text being written, if one is (after a block, none is: a break there would add
 * an empty line). html-to-text's builder has no public way to ask, so this reads its open item.
 * Outside <pre> the break is stashed, as a block's end stashes its own: a block after it then
 * starts on the next line, not after an empty one ("a<table></table><div>b</div>" was "a\n\nb",
 * and a list item holding an empty list an indented empty line).
 */
function endLine(builder: Parameters<FormatCallback>[2]): void {
  const item = openItem(builder);
  if (item?.isPre) {
    // Inside <pre> html-to-text writes into the item's raw text, and its word list stays empty.
    if (item.rawText && !item.rawText.endsWith("\n")) builder.addLineBreak();
  } else if (item?.inlineTextBuilder?.nextLineWords?.length)
    item.stashedLineBreaks = Math.max(item.stashedLineBreaks ?? 0, 1);
}

/**
 * The item html-to-text's builder is writing into (a block, list item or cell): read where its
 * public methods cannot say what it holds; only endLine writes it (the line breaks it stashes).
 */
const openItem = (builder: Parameters<FormatCallback>[2]) =>
  (
    builder as unknown as {
      _stackItem?: {
        isPre?: boolean;
        rawText?: string;
        inlineTextBuilder?: { nextLineWords?: unknown[] };
        stashedLineBreaks?: number;
      };
    }
  )._stackItem;

/**
 * An element with `hidden` or a `style`: left out when either hides it (inline-style.ts), only
 * what sets `visibility: visible` again inside it when its visibility is hidden, and otherwise
 * walked as its tag is (`hidden="until-found"` is shown: see UNSHOWN).
 */
const shownOnly: FormatCallback = (elem, walk, builder) => {
  const own = ownRendering(elem);
  if (!own.rendered) return;
  // In place: html-to-text's DOM is this call's own, and the element is read again only as its tag.
  // A view of it (Object.create) cost 13,000 re-shown spans 104 → 346 ms (a new shape per element).
  shownAsTag(elem);
  if (own.visibility === "hidden") blank(elem);
  walk([elem], builder);
};

/** An element decided shown: without the attributes that sent it to shownOnly. */
const shownAsTag = (elem: Node) => {
  const { hidden: _, style: __, ...attribs } = elem.attribs ?? {};
  elem.attribs = attribs;
};

/**
 * An element whose visibility is hidden, in place: its texts go, its elements stay (their blocks
 * and <br>s are the page's lines as a reader sees them, the hidden box's gap among them), but for
 * what is never rendered; an element that sets `visibility: visible` again is kept whole.
 * innerText drops the lines too, and glued the words around: `a<div style="visibility:hidden">b
 * </div>c` is "ac" in Chromium, "a\nc" here.
 */
function blank(elem: Node): void {
  blanked.add(elem);
  const kept: Node[] = [];
  for (const child of elem.children ?? []) {
    if (child.type !== "tag" || NEVER_SHOWN.has(child.name ?? "")) continue;
    const own = ownRendering(child);
    if (!own.rendered) continue;
    if (own.visibility !== "visible") {
      shownAsTag(child);
      blank(child);
    }
    kept.push(child);
  }
  elem.children = kept;
}

/** A <dialog> is shown when `open` (a block), and not at all until then, as a browser does. */
const shownDialog: FormatCallback = (elem, walk, builder) => {
  if (!("open" in (elem.attribs ?? {}))) return;
  builder.openBlock({ leadingLineBreaks: 1 });
  walk(elem.children ?? [], builder);
  builder.closeBlock({ trailingLineBreaks: 1 });
};

/**
 * A <li>: a list's formatter has opened the item (marker and line) when its parent is a list;
 * elsewhere (no list around it, or inside another element in a list) it is a line of its own.
 */
const itemBlock: FormatCallback = (elem, walk, builder) => {
  const parent = elem.parent?.name;
  if (parent === "ul" || parent === "ol") {
    walk(elem.children ?? [], builder);
    return;
  }
  builder.openBlock({ leadingLineBreaks: 1 });
  walk(elem.children ?? [], builder);
  builder.closeBlock({ trailingLineBreaks: 1 });
};

/**
 * A table laid out as a grid, its captions first, as lines of their own: html-to-text's grid reads
 * rows and cells only, and dropped them. A browser sets a caption above its table wherever it
 * stands among the rows. Hidden captions, row groups, rows and cells are left out (the grid reads
 * them directly, past the `hidden` selector). A table that writes nothing (no cells, or only
 * images: e-mail's spacer tables) still ends the line, as a browser's does ("a<table></table>b" was
 * "ab"), with one line break: the blocks around it keep their own spacing.
 */
const captionedTable: FormatCallback = (whole, walk, builder, options) => {
  const elem = shownParts(whole);
  const captions = elem.children.filter((c) => c.type === "tag" && c.name === "caption");
  for (const caption of captions) {
    builder.openBlock({ leadingLineBreaks: options.leadingLineBreaks ?? 2 });
    walk(caption.children ?? [], builder);
    builder.closeBlock({ trailingLineBreaks: 1 });
  }
  const grid = captions.length > 0 ? { ...options, leadingLineBreaks: 1 } : options;
  if (!gridWritten(elem, walk, builder, grid) && captions.length === 0) endLine(builder);
};

/** What html-to-text's grid walks below a table (it walks <center> as a row group too). */
const ROW_PARTS = new Set(["thead", "tbody", "tfoot", "center", "tr"]);
/**
 * A table (or row group, or row) without its hidden parts, and its parts whose visibility is hidden
 * (`invisible`, theirs or inherited) blanked (blank): one object per part, linear in the table.
 */
const shownParts = (node: Node, invisible = false): Node => {
  const children = node.children ?? [];
  let changed = false;
  const parts: Node[] = [];
  for (const c of children) {
    if (c.type !== "tag") {
      if (invisible) changed = true;
      else parts.push(c);
      continue;
    }
    const own = ownRendering(c);
    const hidden = own.visibility === "hidden" || (invisible && own.visibility !== "visible");
    if (!own.rendered) changed = true;
    else if (ROW_PARTS.has(c.name ?? "")) {
      const part = shownParts(c, hidden);
      changed ||= part !== c;
      parts.push(part);
    } else {
      if (hidden) blank(c);
      parts.push(c);
    }
  }
  // The table itself when nothing in it is hidden, as in most.
  return changed ? withChildren(node, parts) : node;
};

/**
 * html-to-text's grid formatter, saying whether it wrote anything: it writes nothing for a grid
 * whose text is empty, and says nothing either.
 */
function gridWritten(...[elem, walk, builder, options]: Parameters<FormatCallback>): boolean {
  // It writes into the item open around the table, or nothing (its closeTable skips an empty grid).
  const before = openItem(builder)?.rawText;
  builder.options.formatters.dataTable?.(elem, walk, builder, options);
  return openItem(builder)?.rawText !== before;
}

/** The numbers CSS counters write in Roman numerals (lower-roman, upper-roman); others, in decimal. */
const ROMAN_RANGE = [1, 3999] as const;
/** Letters (lower-alpha, upper-alpha: any number from 1), up to where a double counts exactly. */
const ALPHA_RANGE = [1, Number.MAX_SAFE_INTEGER] as const;
const ROMAN_DIGITS: [number, string][] = [
  [1000, "m"],
  [900, "cm"],
  [500, "d"],
  [400, "cd"],
  [100, "c"],
  [90, "xc"],
  [50, "l"],
  [40, "xl"],
  [10, "x"],
  [9, "ix"],
  [5, "v"],
  [4, "iv"],
  [1, "i"],
];
function roman(n: number): string {
  let out = "";
  let left = n;
  for (const [value, digits] of ROMAN_DIGITS) {
    for (; left >= value; left -= value) out += digits;
  }
  return out;
}
/** Bijective base 26: a … z, aa … zz, aaa … */
function letters(n: number): string {
  let out = "";
  for (let left = n; left > 0; left = Math.floor((left - 1) / 26))
    out = String.fromCharCode(0x61 + ((left - 1) % 26)) + out;
  return out;
}
const within = (n: number, [low, high]: readonly [number, number]) => n >= low && n <= high;
/** An ordered list's marker for one number, by its `type`: decimal where the system cannot write it. */
const MARKERS = new Map<string, (n: number) => string>([
  ["i", (n) => (within(n, ROMAN_RANGE) ? roman(n) : String(n))],
  ["I", (n) => (within(n, ROMAN_RANGE) ? roman(n).toUpperCase() : String(n))],
  ["a", (n) => (within(n, ALPHA_RANGE) ? letters(n) : String(n))],
  ["A", (n) => (within(n, ALPHA_RANGE) ? letters(n).toUpperCase() : String(n))],
]);

/**
 * An ordered list numbered as a browser numbers it. `start` is HTML's integer (leading digits, 1
 * when there are none: html-to-text took it as written, and `start="abc"` numbered the items
 * "NaN."); each number is written in the list's `type` where that system can write it and in
 * decimal where not, as CSS counter styles fall back number by number (`<ol type="i"
 * start="3999">`: mmmcmxcix, 4000). html-to-text's own formatter writes one system for a whole list,
 * and threw on a Roman numeral past 3999 (`<ol type="i" start="10000">` was a 500). Laid out as its
 * list formatter lays one out: every marker padded to the widest one's width, and a list directly
 * in an item one line down, its markers not indented.
 */
const orderedList: FormatCallback = (elem, walk, builder, options) => {
  const attribs: Record<string, string> = elem.attribs ?? {};
  const marker = MARKERS.get(attribs.type ?? "") ?? String;
  // `reversed` counts down, from `start` or else from the number of items that take a number
  // (Chromium: not those `display: none` or `hidden` leaves out, a `visibility: hidden` one included).
  const reversed = "reversed" in attribs;
  const from = htmlInteger(attribs.start) ?? (reversed ? (elem.children ?? []).filter(numbered).length : 1);
  markedList(elem, walk, builder, options, from, (n) => `${marker(n)}. `, reversed ? -1 : 1);
};

/** An unordered list, as html-to-text's formatter lays it out (" * "), its items read as markedList reads them. */
const unorderedList: FormatCallback = (elem, walk, builder, options) =>
  markedList(elem, walk, builder, options, 1, () => "* ", 1);

/**
 * A list's written items, each with its marker (numbered from `from` on, by `step`; an item's
 * `value` sets its number and the next ones go on from it, as browsers number them), but an item
 * whose own visibility hides its marker (shown for text set visible again inside it): it takes
 * its number and writes no marker, its text at the list's indent.
 */
function markedList(
  elem: Node,
  walk: Parameters<FormatCallback>[1],
  builder: Parameters<FormatCallback>[2],
  options: Parameters<FormatCallback>[3],
  from: number,
  marker: (n: number) => string,
  step: 1 | -1,
): void {
  let next = from;
  const nested = elem.parent?.name === "li";
  let width = 0;
  const items: { node: Node; prefix: string }[] = [];
  for (const node of elem.children ?? []) {
    let number: number | undefined;
    if (numbered(node)) {
      number = htmlInteger(node.attribs?.value) ?? next;
      // Chromium saturates the next ordinal at a 32-bit signed integer's bounds (list_item_ordinal.cc).
      next = Math.min(2 ** 31 - 1, Math.max(-(2 ** 31), number + step));
    }
    // Every item's marker place, written or hidden by its own visibility, as a browser keeps it: an
    // unmarked item's text sits where its list's others do, whatever items follow it (a list its
    // hidden region blanked has no marker at all, and its text shown again none of their places).
    const place = number === undefined ? "" : `${nested ? "" : " "}${marker(number)}`;
    if (!blanked.has(node)) width = Math.max(width, place.length);
    if (!written(node)) continue;
    const unmarked = number === undefined || blanked.has(node) || ownRendering(node).visibility === "hidden";
    items.push({ node, prefix: unmarked ? "" : place });
  }
  if (items.length === 0) return;
  builder.openList({
    interRowLineBreaks: 1,
    leadingLineBreaks: nested ? 1 : options.leadingLineBreaks || 2,
    maxPrefixLength: width,
    prefixAlign: "left",
  });
  for (const { node, prefix } of items) {
    builder.openListItem({ prefix });
    walk([node], builder);
    builder.closeListItem();
  }
  builder.closeList({ trailingLineBreaks: nested ? 1 : options.trailingLineBreaks || 2 });
}

/**
 * html-to-text's converter for each table layout, compiled on first use and kept for the isolate:
 * `convert` compiled its options on every call (merged them with its defaults and built the
 * selectors' decision tree), five sixths of a 1 KB page's time (node). Nothing in a compiled
 * converter or its formatters outlives a call (prefixBounded's count of open levels is 0 again
 * after each, thrown or not), so every call converts as a fresh one would.
 */
const converters: { grid?: (html: string) => string; blocks?: (html: string) => string } = {};
export function textConverter(gridTables: boolean): (html: string) => string {
  const key = gridTables ? "grid" : "blocks";
  converters[key] ??= compile({
    ...(gridTables ? TEXT_OPTIONS : BLOCK_TABLE_OPTIONS),
    formatters: { ...prefixBounded(), itemBlock, captionedTable, shownDialog, shownOnly },
  });
  return converters[key];
}
