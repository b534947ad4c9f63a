import { type ChildNode, type Element, Text } from "domhandler";
import { decodeHTML } from "entities";
import { compile, type FormatCallback } from "html-to-text";
import { DomUtils, Parser, parseDocument } from "htmlparser2";
import MarkdownIt, { type Token } from "markdown-it";
import { htmlToMarkdown } from "mdream";
import { InputError, type Loc } from "../../http/validation";
import { cut } from "../../text-cut";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "./output-size";
import { scriptsEnded } from "./script-ends";

/** HTML to plain text (html-to-text) or Markdown (mdream), bounded: html_clean and ai_detector use it. */

// Elements whose content is never readable text. Event handlers and comments cannot reach either
// output: both converters emit text and Markdown syntax only, never attributes or raw HTML.
const DROPPED = [
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "object",
  "embed",
  "svg",
  "head",
  "select",
];
// Markdown also drops the raw-text elements: mdream copies their content verbatim, so
// `<title><img src=x onerror=…></title>` came out as an HTML block a renderer runs.
const MD_DROPPED = [...DROPPED, "title", "xmp", "plaintext", "textarea", "noembed", "noframes"];

const COMMON_SELECTORS = [
  ...DROPPED.map((selector) => ({ selector, format: "skip" })),
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
  ..."address center details dialog dd dt fieldset figcaption hgroup legend menu search summary"
    .split(" ")
    .map((selector) => ({
      selector,
      format: "block",
      options: { leadingLineBreaks: 1, trailingLineBreaks: 1 },
    })),
  { selector: "li", format: "itemBlock" },
];
/** Tables laid out as text grids: what a reader of the text expects. */
const TEXT_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    ...COMMON_SELECTORS,
    ...TEXT_BLOCKS,
    { selector: "table", format: "captionedTable", options: { uppercaseHeaderCells: false } },
  ],
};
/** Tables as plain blocks, one cell per line: for documents whose tables are too big to lay out. */
const BLOCK_TABLE_OPTIONS = {
  wordwrap: false as const,
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
 * html-to-text's grid layout fills an array cell by cell over every column and row a cell spans,
 * recursively, and transposes it in quadratic time: `<td colspan="100000000">` (55 bytes) ran
 * for minutes and took 742 MB, `colspan="10000"` or a `rowspan="9000"` overflowed the stack
 * (a 500), and 97k cells took 14 s. Rows count even when empty: 20,000 `<tr></tr>` overflowed
 * the stack too, and the transpose is quadratic in a table's extent (its rows, or its widest row
 * in columns). Past these bounds (whole document), tables become blocks.
 */
export const TABLE_LIMITS = { cells: 5000, span: 1000, area: 20_000, extent: 2000 };

/** Element nesting we convert; real pages stay far below it (a few dozen levels). */
export const MAX_HTML_DEPTH = 512;
class TooDeep extends Error {}
class Enough extends Error {}

/**
 * Quote and list nesting text mode writes as such; deeper <blockquote>, <ul> and <ol> are plain
 * blocks there (a list's items one per line, no marker). Every level puts "> " or an indent on each
 * line inside it, and html-to-text rewrites a level's whole text as it closes it: 500 quotes around
 * 400 KB of paragraphs made lines of ~1,000 characters of prefix, 18 s before the answer was refused
 * as too large (50 levels: an 8 MB answer). E-mail threads quoted reply by reply stay far below it.
 * mdream writes prefixes in one pass, so markdown keeps every level: the prepass's count refuses
 * what would pass the output cap before it is built.
 */
export const MAX_PREFIX_NESTING = 32;
const PREFIXED = new Set(["blockquote", "ul", "ol"]);

/**
 * What the prepass counts to size the output from below (`outputAtLeast`): only text both
 * converters are known to write. Text counts under these elements alone (not under an element with
 * `hidden`, `aria-hidden` or `style`: mdream may leave those out), and lines (each preceded by a
 * line break and carrying its quotes' "> " and its list items' indents, 2 characters a level at
 * least) only under FLOW, where a block or a <br> always starts a new line, and in a <pre> there.
 */
const FLOW = new Set([
  "html",
  "body",
  "main",
  "article",
  "section",
  "header",
  "footer",
  "nav",
  "aside",
  "div",
  "p",
  "blockquote",
  "ul",
  "ol",
  "li",
]);
const TABLE_ROWS = new Set(["table", "thead", "tbody", "tfoot", "tr"]);
const TEXT_KEEPING = new Set([
  ...FLOW,
  ...TABLE_ROWS,
  ..."br h1 h2 h3 h4 h5 h6 pre code td th a b i em strong span small s del strike ins u mark q cite abbr kbd samp var sub sup time label".split(
    " ",
  ),
]);
/** One open element as the size count sees it. */
interface Frame {
  name: string;
  /** Its text is written by both converters (its own text: not directly in a table or a row). */
  text: boolean;
  /** Every ancestor and itself in FLOW. */
  flow: boolean;
  /** Its "\n"s are line breaks: a <pre> under FLOW (or its <code>). */
  pre: boolean;
  /** Non-flat quote and list levels open. */
  levels: number;
  /** A quote or list past MAX_PREFIX_NESTING. */
  flat: boolean;
  /** Prefix characters every line inside it carries at least. */
  prefix: number;
  inBody: boolean;
  /** Inside a list item, where mdream writes a <div> (or <section> …) on the item's line. */
  inItem: boolean;
}
const ROOT: Frame = {
  name: "",
  text: true,
  flow: true,
  pre: false,
  levels: 0,
  flat: false,
  prefix: 0,
  inBody: false,
  inItem: false,
};
/** Elements that start a new line wherever FLOW holds them, even in a list item. */
const LINE_BREAKING = new Set(["p", "blockquote", "ul", "ol", "pre", "br"]);
const breaksLine = (name: string, up: Frame) =>
  up.flow &&
  (name === "li"
    ? up.name === "ul" || up.name === "ol" // a stray <li>'s line is left uncounted (a lower bound)
    : LINE_BREAKING.has(name) || (FLOW.has(name) && !INLINE_ROOTS.has(name) && !up.inItem));
// An <html> or <body> inside the page (where a page is pasted into another) is inline to
// html-to-text: no line break of its own.
const INLINE_ROOTS = new Set(["html", "body"]);
// Characters a converter may drop or collapse count for nothing: whitespace, controls, soft
// hyphens, zero-width characters.
const BLANK = /[\s\x7f-\xa0\xad\u200b-\u200d\u2060\ufeff]/;
const isBlank = (c: number) => c <= 0x20 || (c >= 0x7f && BLANK.test(String.fromCharCode(c)));

/**
 * html-to-text walks the DOM recursively and slows down quadratically on deep trees: 130,000
 * nested <i> take seconds and then overflow the stack. One streaming pass (about 10 ms for
 * 400 KB) refuses such input up front, and stops as soon as the bound is crossed; it also
 * measures the tables (TABLE_LIMITS), which decides how text mode writes them. It must be the
 * very parser html-to-text builds its DOM with (package.json pins the same htmlparser2 major):
 * parsers differ on which tags close implicitly, e.g. nested <a> or <h1>.
 *
 * It also counts how long the output will be at least (`outputAtLeast`: visible characters, and
 * each line's prefix and line break), so an answer too large to send is refused before either
 * converter builds it. With `stop` it stops once that count reaches it, or once it has read
 * `maxSource` characters outside the elements both converters skip (each node inside them counting
 * as a few: the DOM built from what it read is bounded too), and says where (`end`, at a
 * token's edge or a line break in a text: never inside a tag, an entity or a character): the
 * output of what comes before begins as the whole document's does.
 *
 * It reads the page with its scripts ending where a browser ends them (script-ends.ts), and says
 * so (`page`): both converters are handed that page, or its first `end` characters (the same
 * offsets as the input's: only characters inside scripts change).
 */
function prepass(
  input: string,
  loc: Loc,
  mode: "text" | "markdown",
  stop?: { at: number; maxSource: number },
): { gridTables: boolean; outputAtLeast: number; end?: number; page: string } {
  const html = scriptsEnded(input);
  // Text mode writes quotes and lists past MAX_PREFIX_NESTING as plain blocks; mdream does not.
  const nesting = mode === "text" ? MAX_PREFIX_NESTING : Number.POSITIVE_INFINITY;
  let depth = 0;
  let cells = 0;
  let area = 0;
  let maxSpan = 1;
  let maxExtent = 0;
  // Open tables, innermost last: rows so far, the current row's width in columns.
  const tables: { rows: number; width: number }[] = [];
  // html-to-text reads a span as `+attribute || 1`; so does this count (a negative span fills nothing).
  const span = (v: string | undefined) => Math.max(1, +(v ?? "") || 1);
  // The size count: of the whole document, and of the text inside a <body> (text mode writes
  // only that when there is one); lines counted so far in each (the first line's prefix is not
  // counted: markdown mode trims it away).
  const frames: Frame[] = [ROOT];
  let all = 0;
  let allLines = 0;
  let body = 0;
  let bodyLines = 0;
  let bodySeen = false;
  let lineBreak = false;
  // Characters inside skipped elements (their content is one text node to both converters).
  let skippedFrom = -1;
  let skipDepth = 0;
  let skipped = 0;
  // ...but what is there still becomes nodes of the DOM a converter builds, and counts toward the
  // stop (skippedCost): an element as its tags and attribute names (`<path d></path>`), and each
  // entity its values decode (a piece of the value's string) as the shortest one (`&lt;`); a text
  // (each piece of one an entity splits) as its source up to SKIPPED_NODE characters, and a
  // comment, CDATA or a processing instruction as its source, at least as much. A value's or a
  // text's length counts for no more (a slice of the page, not a copy): a 400 KB stylesheet or
  // SVG sprite is still read past. Elements counted as their tags alone, and nothing else, left
  // 2 MiB of `<g a b … z/>` or of `<!---->a` in one <svg> read whole (a 57–75 MB heap) for no text.
  // The page's own markup stops at `stop.maxSource`; with what skipped elements hold, the read
  // stops at MAX_READ_COST, a little more, so a formatted sprite before a short page's article is
  // read past while one call's DOM stays bounded by one figure. A whitespace-only text as written
  // there (not an entity's) costs 1: the line breaks and indents of formatted markup.
  let skippedCost = 0;
  // The characters read so far toward `stop.maxSource`, at `at`, outside skipped elements.
  const sourceAt = (at: number) => at - skipped - (skipDepth > 0 ? at - skippedFrom : 0);
  const overBudget = (at: number, cost = 0) =>
    stop !== undefined &&
    (sourceAt(at) > stop.maxSource || sourceAt(at) + skippedCost + cost > MAX_READ_COST);
  let end: number | undefined;
  // A node other than an element, ending at `after`: inside skipped elements it is counted, and the
  // read stops after it once past the bound (where a comment starts, the parser does not say).
  const skippedNode = (after: number, cost = SKIPPED_NODE) => {
    if (skipDepth === 0) return;
    skippedCost += cost;
    if (overBudget(after)) {
      end = after;
      throw new Enough();
    }
  };
  // Lists open, and a stop waiting for the outermost one to close: text mode pads every marker
  // to the width of the list's widest one (a later number, or a Roman one before it falls back to
  // decimal), and html-to-text indents a list's other children once it has an item, so a list cut
  // short would read otherwise than the whole page's first characters.
  let openLists = 0;
  let stopAfterList = false;
  // Where the stop fell: a list with more than LIST_WAIT characters of text or markup after it is
  // cut there all the same (its numbers and indents then read as a shorter list's). Comments, CDATA and one
  // tag's attributes are read whole before the next cut can fall: at most the page (2 MiB), cheap
  // to parse and never converted to text.
  let stopFellAt = 0;
  const waitedTooLong = (at: number) => {
    if (!stopAfterList || at - stopFellAt <= LIST_WAIT) return false;
    end = at;
    return true;
  };
  // A text read while waiting that runs past the wait is cut there (its own characters, off a
  // surrogate pair; a decoded entity at its end): one long text node in the list was read whole.
  const cutLongText = (from: number, length: number, raw: boolean) => {
    const limit = stopFellAt + LIST_WAIT;
    if (!stopAfterList || from + length <= limit) return;
    let cut = raw ? Math.max(from, limit) : parser.endIndex + 1;
    const before = html.charCodeAt(cut - 1);
    if (raw && cut > from && before >= 0xd800 && before <= 0xdbff) cut--;
    end = cut;
    throw new Enough();
  };
  const counted = () => (bodySeen ? body : all);
  const parser = new EntityAwareParser({
    onopentag(name, attribs) {
      if (++depth > MAX_HTML_DEPTH) throw new TooDeep();
      // Markup inside skipped elements counts only as its tags and attribute names (a <head> of
      // 400 KB of inline CSS, an SVG sprite, would otherwise stop the page before its <body>): the
      // same bound as for text below. Checked inside them too, this element included (one <svg>
      // can hold the rest of the page, one tag thousands of attributes).
      let cost = 0;
      if (skipDepth > 0 || DROPPED.includes(name)) {
        cost = 2 * name.length + 5 + 4 * parser.attributeEntities;
        for (const attribute in attribs) cost += attribute.length + 1;
      }
      parser.attributeEntities = 0;
      if (overBudget(parser.startIndex, cost)) {
        end = parser.startIndex;
        throw new Enough();
      }
      if (waitedTooLong(parser.startIndex)) throw new Enough();
      if (name === "ol" || name === "ul") openLists++;
      const table = tables[tables.length - 1];
      if (name === "table") tables.push({ rows: 0, width: 0 });
      else if (name === "tr" && table) {
        table.rows++;
        table.width = 0;
        maxExtent = Math.max(maxExtent, table.rows);
      } else if (name === "td" || name === "th") {
        const cols = span(attribs.colspan);
        const rows = span(attribs.rowspan);
        cells++;
        area += cols * rows;
        maxSpan = Math.max(maxSpan, cols, rows);
        if (table) {
          table.width += cols;
          maxExtent = Math.max(maxExtent, table.width, table.rows + rows - 1);
        }
      }
      if (DROPPED.includes(name) && skipDepth++ === 0) skippedFrom = parser.startIndex;
      skippedCost += cost;
      const up = frames[frames.length - 1] as Frame;
      const text =
        up.text &&
        TEXT_KEEPING.has(name) &&
        !("hidden" in attribs || "aria-hidden" in attribs || "style" in attribs);
      const flat = PREFIXED.has(name) && up.levels >= nesting;
      const quoted = name === "blockquote" && !flat;
      const item = name === "li" && (up.name === "ul" || up.name === "ol") && !up.flat;
      // (A hidden element's line is one mdream may leave out.)
      if (text && breaksLine(name, up)) lineBreak = true;
      if (name === "body") bodySeen = true;
      frames.push({
        name,
        text: text && !TABLE_ROWS.has(name),
        flow: up.flow && text && FLOW.has(name),
        pre: text && ((name === "pre" && up.flow) || (name === "code" && up.name === "pre" && up.pre)),
        levels: up.levels + (PREFIXED.has(name) && !flat ? 1 : 0),
        flat,
        prefix: up.prefix + (quoted || item ? 2 : 0),
        inBody: up.inBody || name === "body",
        inItem: up.inItem || name === "li",
      });
    },
    ontext(data) {
      const frame = frames[frames.length - 1] as Frame;
      if (stop && skipDepth === 0 && sourceAt(parser.endIndex + 1 - data.length) > stop.maxSource) {
        end = parser.endIndex + 1 - data.length;
        throw new Enough();
      }
      // A text between entities is the source's own characters (an entity's is one character):
      // a stop inside it is at that position in the source.
      const from = parser.endIndex + 1 - data.length;
      // Not a decoded entity, whose end can read like its text ("&semi;" decodes to its last ";").
      const raw = !parser.inEntity && html.startsWith(data, from);
      // Its source from the parser's start: this text's own, or a little before it (after "</b >",
      // inside that tag).
      skippedNode(
        parser.endIndex + 1,
        skipDepth > 0 && raw && !NOT_SPACE.test(data)
          ? 1
          : Math.max(1, Math.min(SKIPPED_NODE, parser.endIndex + 1 - parser.startIndex)),
      );
      // Past the stop, what is read only finishes the list: it is cut away, so it is not counted.
      cutLongText(from, data.length, raw);
      if (!frame.text || stopAfterList) return;
      const lines = frame.flow || frame.pre;
      // A line costs its prefix and the line break before it (the first line's are not counted:
      // both modes trim the blank lines before it, and markdown mode its prefix).
      const lineCost = frame.prefix + 1;
      for (let i = 0; i < data.length; i++) {
        const c = data.charCodeAt(i);
        if (c === 0x0a && frame.pre) lineBreak = true;
        if (isBlank(c)) continue;
        let toAll = 1;
        let toBody = frame.inBody ? 1 : 0;
        if (lineBreak && lines) {
          lineBreak = false;
          if (allLines++ > 0) toAll += lineCost;
          if (frame.inBody && bodyLines++ > 0) toBody += lineCost;
        }
        all += toAll;
        body += toBody;
        if (stop && !stopAfterList && counted() >= stop.at) {
          if (openLists > 0) {
            stopAfterList = true;
            stopFellAt = from + i;
            cutLongText(from, data.length, raw);
            return;
          }
          const next = c >= 0xd800 && c <= 0xdbff ? i + 2 : i + 1;
          end = raw ? from + Math.min(next, data.length) : parser.endIndex + 1;
          throw new Enough();
        }
      }
    },
    // As their source (at least its text and `<!`…`>`, CDATA's too), as they count outside them.
    oncomment(data) {
      skippedNode(parser.endIndex + 1, Math.max(SKIPPED_NODE, data.length + 3));
    },
    onprocessinginstruction(_, data) {
      skippedNode(parser.endIndex + 1, Math.max(SKIPPED_NODE, data.length + 2));
    },
    onclosetag(name) {
      depth--;
      if (name === "table") tables.pop();
      if (DROPPED.includes(name) && --skipDepth === 0) skipped += parser.endIndex + 1 - skippedFrom;
      if (waitedTooLong(parser.startIndex)) throw new Enough();
      if ((name === "ol" || name === "ul") && openLists > 0 && --openLists === 0 && stopAfterList) {
        end = parser.endIndex + 1;
        throw new Enough();
      }
      // A tag cut off by the end of the document is closed without having been opened.
      const closed = frames.length > 1 ? (frames.pop() as Frame) : ROOT;
      const up = frames[frames.length - 1] as Frame;
      if (closed.text && name !== "br" && breaksLine(name, up)) lineBreak = true;
    },
  });
  try {
    parser.end(html);
  } catch (e) {
    if (e instanceof TooDeep) {
      throw InputError.at(
        loc,
        `HTML is nested deeper than ${MAX_HTML_DEPTH} elements`,
        input,
        "value_error",
        {
          max_depth: MAX_HTML_DEPTH,
        },
      );
    }
    if (!(e instanceof Enough)) throw e;
  }
  const { cells: maxCells, span: spanLimit, area: maxArea, extent } = TABLE_LIMITS;
  return {
    gridTables: cells <= maxCells && maxSpan <= spanLimit && area <= maxArea && maxExtent <= extent,
    outputAtLeast: counted(),
    end,
    page: html,
  };
}

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
function safeForMarkdown(html: string): { html: string; mark?: string } {
  const doc = parseDocument(html);
  const removed: ChildNode[] = [];
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
        if (node.data.endsWith("<") && !at.pre && !at.code) endingInLt.push(node);
      } else if ("attribs" in node) {
        capAttributes(node);
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
        const opensCode = node.name === "code" && !at.pre && !at.code;
        if (opensCode) codes.push({ node, inLink: at.link });
        walk(node.children, {
          table: at.table || original === "table",
          cell: at.cell || (at.table && (original === "td" || original === "th")),
          blocks: at.blocks && BLOCK_PARENTS.has(node.name),
          pre: at.pre || (node.name === "pre" && !at.code),
          code: at.code || opensCode,
          link: at.link || node.name === "a",
        });
      } else if ("children" in node) walk(node.children, at);
    }
  };
  walk(doc.children, { table: false, cell: false, blocks: true, pre: false, code: false, link: false });
  // Taken out of their parents in one pass each: removing them one by one searched the parent's
  // children every time (57,000 comments in one element took 1.6 s).
  const doomed = new Set(removed);
  for (const parent of new Set(removed.map((n) => n.parent))) {
    if (parent) parent.children = parent.children.filter((n) => !doomed.has(n));
  }
  for (const { node, inLink } of codes) {
    const text = new Text(DomUtils.textContent(node).replace(/\s+/g, " "));
    // In place: replacing an element searches its parent's children, quadratic for a parent
    // holding tens of thousands of them.
    node.attribs = {};
    node.children = [text];
    text.parent = node;
    // Where marked reads a code span differently from CommonMark, code that holds a "<" is written
    // as escaped text (a <span>): inside link text (marked can end the span early) and with a
    // backslash before a "|" (marked counts a run of backslashes to decide whether a pipe splits a
    // table cell, even inside code; markdown-it does not).
    if (text.data.includes("<") && (inLink || /\\\|/.test(text.data))) {
      node.name = "span";
      if (text.data.endsWith("<")) endingInLt.push(text);
    }
  }
  const mark = endingInLt.length ? unusedMark(html) : undefined;
  for (const text of endingInLt) text.data = `${text.data.slice(0, -1)}${mark ?? "&lt;"}`;
  return { html: DomUtils.getOuterHTML(doc), mark };
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
function unusedMark(html: string): string | undefined {
  for (let c = 0xe000; c <= 0xe0ff; c++) {
    const mark = String.fromCharCode(c);
    if (!html.includes(mark)) return mark;
  }
  return undefined;
}
const restoreMark = (md: string, mark: string) =>
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

/** How much of `html` htmlToText converts for its first `maxChars` characters of text. */
export const sourceRead = (html: string, maxChars: number) =>
  prepass(html, ["html"], "text", { at: maxChars, maxSource: MAX_SOURCE_CHARS }).end ?? html.length;

/** How long a mode's output of `html` is at least, in characters (the prepass's count). */
export const outputAtLeast = (html: string, mode: "text" | "markdown") =>
  prepass(html, ["html"], mode).outputAtLeast;

/**
 * Text mode's quotes and lists: html-to-text's own formatters up to MAX_PREFIX_NESTING levels,
 * plain blocks past it (a list's items one per line, no marker). Formatters run depth first, so
 * one count of the levels open says how deep an element is.
 */
function prefixBounded(): Record<string, FormatCallback> {
  let levels = 0;
  const bounded =
    (own: string): FormatCallback =>
    (elem, walk, builder, options) => {
      if (levels < MAX_PREFIX_NESTING) {
        levels++;
        const format = own === "orderedList" ? orderedList : builder.options.formatters[own];
        // The count lives as long as its converter (textConverter): a throw must not leave it up.
        try {
          format?.(elem, walk, builder, options);
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
 * stands among the rows.
 */
const captionedTable: FormatCallback = (elem, walk, builder, options) => {
  const captions = (elem.children ?? []).filter((c) => c.type === "tag" && c.name === "caption");
  for (const caption of captions) {
    builder.openBlock({ leadingLineBreaks: options.leadingLineBreaks ?? 2 });
    walk(caption.children ?? [], builder);
    builder.closeBlock({ trailingLineBreaks: 1 });
  }
  const grid = captions.length > 0 ? { ...options, leadingLineBreaks: 1 } : options;
  builder.options.formatters.dataTable?.(elem, walk, builder, grid);
};

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
  const digits = /^[\t\n\f\r ]*([+-]?\d+)/.exec(attribs.start ?? "");
  let next = digits ? Number(digits[1]) : 1;
  const marker = MARKERS.get(attribs.type ?? "") ?? String;
  const nested = elem.parent?.name === "li";
  let width = 0;
  const items = (elem.children ?? [])
    .filter((child) => child.type !== "text" || !/^\s*$/.test(child.data ?? ""))
    .map((node) => {
      if (node.name !== "li") return { node, prefix: "" };
      const prefix = `${nested ? "" : " "}${marker(next++)}. `;
      width = Math.max(width, prefix.length);
      return { node, prefix };
    });
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
};

/**
 * htmlparser2's Parser, saying whether the text it hands on is a decoded entity. Its start index
 * cannot say it: after a closing tag it points inside that tag ("</b &>", "</b >").
 */
class EntityAwareParser extends Parser {
  inEntity = false;
  /** Entities decoded in attribute values since the last open tag: each is a piece of the value's string. */
  attributeEntities = 0;
  override onattribentity(cp: number) {
    this.attributeEntities++;
    super.onattribentity(cp);
  }
  override ontextentity(cp: number, endIndex: number) {
    this.inEntity = true;
    try {
      super.ontextentity(cp, endIndex);
    } finally {
      this.inEntity = false;
    }
  }
}

const LEADING_BLANK_LINES = /^\s*\n/;

/** How far past its stop htmlToText reads to finish a list the stop fell in. */
const LIST_WAIT = 20_000;

/**
 * html-to-text's converter for each table layout, compiled on first use and kept for the isolate:
 * `convert` compiled its options on every call (merged them with its defaults and built the
 * selectors' decision tree), five sixths of a 1 KB page's time (node). Nothing in a compiled
 * converter or its formatters outlives a call (prefixBounded's count of open levels is 0 again
 * after each, thrown or not), so every call converts as a fresh one would.
 */
const converters: { grid?: (html: string) => string; blocks?: (html: string) => string } = {};
function textConverter(gridTables: boolean): (html: string) => string {
  const key = gridTables ? "grid" : "blocks";
  converters[key] ??= compile({
    ...(gridTables ? TEXT_OPTIONS : BLOCK_TABLE_OPTIONS),
    formatters: { ...prefixBounded(), itemBlock, captionedTable },
  });
  return converters[key];
}

/** The most of a document htmlToText reads with a `maxChars` (html_clean's own bound on its input). */
const MAX_SOURCE_CHARS = 400_000;
/** What a node other than an element counts inside skipped elements toward it: `<a></a>`'s tags. */
const SKIPPED_NODE = 7;
/**
 * The page's own markup and what skipped elements cost, together, before the read stops: a
 * formatted SVG sprite of 25,000 paths, one a line, before a short page's article costs ~400,000
 * (`<path d></path>` and a line break, 16 each) and is read past. One figure for both, so a page
 * of 400,000 characters of markup and a sprite builds no more than either alone would.
 */
const MAX_READ_COST = 500_000;
const NOT_SPACE = /\S/;

/**
 * The text of a document; with `maxChars`, its first `maxChars` characters, converted from only as
 * much of the document as they need (and at most MAX_SOURCE_CHARS of it outside the elements it
 * skips): a 2 MiB page read for 8,000 characters was converted whole.
 */
export function htmlToText(html: string, loc: Loc = ["html"], maxChars?: number): string {
  const stop = maxChars === undefined ? undefined : { at: maxChars, maxSource: MAX_SOURCE_CHARS };
  const { gridTables, outputAtLeast, end, page } = prepass(html, loc, "text", stop);
  if (outputAtLeast > MAX_OUTPUT_BYTES) throw new OutputTooLarge();
  const source = end === undefined ? page : page.slice(0, end);
  // Blank lines go from the start, not the first line's own indent: a page that opens with a list
  // or a <pre> kept its first item's marker and line flush left ("* A\n * B").
  const text = textConverter(gridTables)(source).replace(LEADING_BLANK_LINES, "").trimEnd();
  return maxChars === undefined ? text : cut(text, maxChars);
}

// Markdown is often rendered again downstream: a link or image target a browser would run as
// script becomes "#" (`](javascript:alert(1))` becomes `](#)`). The scheme is read as a CommonMark
// renderer and then a URL parser read it: backslash escapes and entity references decoded
// (`javascript&colon;`, `&#106;avascript:`), tabs and newlines dropped, leading controls and
// spaces trimmed. Only javascript:, vbscript: and
// data: are touched, so code that merely looks like a link (`handlers[0](value: 5)`) stays as it
// is; mdream escapes "[", "<" and backticks in text, and URLs are made inert for Markdown before
// it runs (safeForMarkdown), so targets come from <a> and <img> only.
// Linear: each "](" is followed only as far as a scheme can reach, and "]" or "(" ends a scheme,
// so no character is read twice (a regex over whole targets rescanned nested ones, quadratic, or
// consumed a kept target and missed a `](javascript:` inside it).
const DANGEROUS_SCHEMES = new Set(["javascript", "vbscript", "data"]);
const ESCAPABLE = /[!-/:-@[-\x60{-~]/;
const SCHEME_CHAR = /[a-z0-9+.-]/i;

/** Where the scheme of the target after `at` ends (just past its ":") if it is one we disarm, else -1. */
function dangerousSchemeEnd(md: string, at: number): number {
  let i = at;
  while (i < md.length && /\s/.test(md[i] as string)) i++;
  if (md[i] === "<") i++;
  let scheme = "";
  while (i < md.length && scheme.length <= 16) {
    let ch = md[i] as string;
    let next = i + 1;
    if (ch === "\\" && ESCAPABLE.test(md[i + 1] ?? "")) {
      ch = md[i + 1] as string;
      next = i + 2;
    } else if (ch === "&") {
      const semi = md.slice(i, i + 33).indexOf(";");
      const decoded = semi > 1 ? decodeHTML(md.slice(i, i + semi + 1)) : "";
      if (decoded.length === 1) {
        ch = decoded;
        next = i + semi + 1;
      }
    }
    i = next;
    if (ch === "\t" || ch === "\n" || ch === "\r" || (scheme === "" && ch.charCodeAt(0) <= 0x20)) continue;
    if (ch === ":") return DANGEROUS_SCHEMES.has(scheme.toLowerCase()) ? i : -1;
    if (!SCHEME_CHAR.test(ch)) return -1;
    scheme += ch;
  }
  return -1;
}

/**
 * Where a target that starts at `from` ends (the index after it), or -1: `<…>` up to its ">", a
 * bare one up to the space or unmatched ")" after it. A "]" stops the look (-1): no "](" starts
 * inside what was read, so nothing is read more than twice (linear).
 */
function targetEnd(md: string, from: number, angle: boolean): number {
  let depth = 0;
  for (let i = from; i < md.length; i++) {
    const ch = md[i] as string;
    if (ch === "]" || (ch === "\\" && md[i + 1] === "]")) return -1;
    if (ch === "\\") i++;
    else if (angle) {
      if (ch === ">") return i + 1;
      if (ch === "<" || ch === "\n") return -1;
    } else if (/\s/.test(ch)) return i;
    else if (ch === "(") depth++;
    else if (ch === ")" && depth-- === 0) return i;
  }
  return angle ? -1 : md.length;
}

/**
 * Every javascript:, vbscript: or data: link or image target becomes "#", or, when its end cannot
 * be told, a fragment link (its scheme and ":" replaced by "#").
 */
export function neutralizeScriptLinks(md: string): string {
  let out = "";
  let last = 0;
  for (let at = md.indexOf("]("); at >= 0; at = md.indexOf("](", at + 2)) {
    const schemeEnd = dangerousSchemeEnd(md, at + 2);
    if (schemeEnd < 0) continue;
    const angle = md
      .slice(at + 2, schemeEnd)
      .trimStart()
      .startsWith("<");
    // A bare target ends at a space: `](data: d, …)` (code) is "data:" alone, no link, nothing run.
    // (ASCII only, as CommonMark ends it: a no-break space does not, and JavaScript runs the rest.)
    const next = md.charCodeAt(schemeEnd);
    if (!angle && (Number.isNaN(next) || next <= 0x20 || next === 0x7f || next === 0x29)) continue;
    const end = targetEnd(md, schemeEnd, angle);
    out += `${md.slice(last, at + 2)}${end >= 0 || !angle ? "#" : "<#"}`;
    last = end >= 0 ? end : schemeEnd;
    at = last - 2;
  }
  return last === 0 ? md : out + md.slice(last);
}

export function htmlToMd(html: string): string {
  const { outputAtLeast, page } = prepass(html, ["html"], "markdown");
  if (outputAtLeast > MAX_OUTPUT_BYTES) throw new OutputTooLarge();
  const safe = safeForMarkdown(page);
  // Line ends as a renderer reads them, for the checks below to see the lines it will see.
  const md = htmlToMarkdown(safe.html, { filter: { exclude: MD_DROPPED } }).replace(/\r\n?/g, "\n");
  return inertForRenderers(neutralizeScriptLinks(safe.mark ? restoreMark(md, safe.mark) : md).trim());
}

/**
 * The last word: every pass above answers one way mdream's output was found to run script, and
 * each review found another. So the output is read as a renderer reads it (markdown-it, raw HTML
 * on, its own link filter off) whenever it could hold a tag at all, and if it holds raw HTML
 * other than a line break (mdream's `<br>` in table cells) or a script link, every "<" and "["
 * becomes a character reference: shown the same, and nothing can open a tag, an autolink or a link.
 */
let reader: InstanceType<typeof MarkdownIt> | undefined;
/**
 * Whether a "<" could open a tag or an autolink: one not escaped (an even run of backslashes
 * before it, none included) before a letter, "/", "!" or "?", and not a `<br>` in a table row (a
 * line that starts with "|", as mdream writes rows: a `<br>` alone on a line opens an HTML block,
 * where a backslash escapes nothing). Raw HTML, an HTML block and an autolink all begin with one,
 * so without it there is nothing to read. Linear: each run of backslashes is counted once, and
 * the line a "<" is on is found by moving forward only.
 */
function mayOpenHtml(md: string): boolean {
  let inRow = md.startsWith("|");
  let nextLine = md.indexOf("\n");
  for (let at = md.indexOf("<"); at >= 0; at = md.indexOf("<", at + 1)) {
    while (nextLine >= 0 && nextLine < at) {
      inRow = md.charCodeAt(nextLine + 1) === 0x7c;
      nextLine = md.indexOf("\n", nextLine + 1);
    }
    if (!/[A-Za-z/!?]/.test(md[at + 1] ?? "") || (inRow && BR.test(md.slice(at, at + 8)))) continue;
    let slashes = 0;
    while (at - slashes - 1 >= 0 && md.charCodeAt(at - slashes - 1) === 0x5c) slashes++;
    if (slashes % 2 === 0) return true;
  }
  return false;
}
const BR = /^<br\s*\/?>/i;
const INERT_HTML = /^<br\s*\/?>$/i;
export function inertForRenderers(md: string): string {
  // A bare "\r" ends a line for every renderer: the checks read lines as they do.
  if (md.includes("\r")) md = md.replace(/\r\n?/g, "\n");
  if (!mayOpenHtml(md)) return md;
  if (!reader) {
    reader = new MarkdownIt({ html: true });
    reader.validateLink = () => true;
  }
  let live = false;
  const look = (tokens: Token[]) => {
    for (const t of tokens) {
      if (live) return;
      if (t.type === "html_block" || t.type === "html_inline") live = !INERT_HTML.test(t.content.trim());
      else if (t.type === "link_open" || t.type === "image")
        live = scriptScheme(String(t.attrGet(t.type === "image" ? "src" : "href") ?? ""));
      if (t.children) look(t.children);
    }
  };
  look(reader.parse(md, {}));
  return live ? md.replaceAll("<", "&lt;").replaceAll("[", "&#91;") : md;
}
/** A URL a browser would run as script: tabs and line breaks dropped, leading controls and spaces trimmed. */
function scriptScheme(url: string): boolean {
  const bare = url.replace(/[\t\n\r]/g, "");
  let start = 0;
  while (start < bare.length && bare.charCodeAt(start) <= 0x20) start++;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(bare.slice(start));
  return scheme !== null && DANGEROUS_SCHEMES.has((scheme[1] as string).toLowerCase());
}
