import { Parser } from "htmlparser2";
import { InputError, type Loc } from "../../http/validation";
import { MAX_HTML_DEPTH } from "./html-depth";
import { scriptsEnded } from "./script-ends";

/**
 * Both converters build a whole DOM and walk it recursively, and neither can be told where to
 * stop or how much it may write: a deep tree, a table's spans or hundreds of nested quotes cost them
 * seconds, the stack or the isolate's memory, and an answer is only measured once it is built. So
 * every conversion starts here, with one streaming pass of the very parser they build with, which
 * refuses what they could not survive, counts the least they will write, and says where a read
 * for a few thousand characters may stop. Apart from the converters because it is their bound:
 * whatever mode is asked for, a converter is handed only what passed this pass.
 */

// Elements whose content is never readable text. Event handlers and comments cannot reach either
// output: both converters emit text and Markdown syntax only, never attributes or raw HTML.
export const DROPPED = [
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

/**
 * html-to-text's grid layout fills an array cell by cell over every column and row a cell spans,
 * recursively, and transposes it in quadratic time: `<td colspan="100000000">` (55 bytes) ran
 * for minutes and took 742 MB, `colspan="10000"` or a `rowspan="9000"` overflowed the stack
 * (a 500), and 97k cells took 14 s. Rows count even when empty: 20,000 `<tr></tr>` overflowed
 * the stack too, and the transpose is quadratic in a table's extent (its rows, or its widest row
 * in columns). Tables nested cell in cell each lay out their cells' lines again (170 levels around
 * 78,878 lines: 1.2 s in node, 64: 0.9 s, 16: 0.47 s, 1: 0.38 s), so `nesting` bounds how many
 * tables may be open at once. Past these bounds (whole document), tables become blocks.
 */
export const TABLE_LIMITS = { cells: 5000, span: 1000, area: 20_000, extent: 2000, nesting: 16 };

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
export function prepass(
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
  let maxNesting = 0;
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
      if (name === "table") maxNesting = Math.max(maxNesting, tables.push({ rows: 0, width: 0 }));
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
  const { cells: maxCells, span: spanLimit, area: maxArea, extent, nesting: maxTables } = TABLE_LIMITS;
  return {
    gridTables:
      cells <= maxCells &&
      maxSpan <= spanLimit &&
      area <= maxArea &&
      maxExtent <= extent &&
      maxNesting <= maxTables,
    outputAtLeast: counted(),
    end,
    page: html,
  };
}

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

/** How far past its stop htmlToText reads to finish a list the stop fell in. */
const LIST_WAIT = 20_000;

/** What a node other than an element counts inside skipped elements toward the read's stop: `<a></a>`'s tags. */
const SKIPPED_NODE = 7;
/**
 * The page's own markup and what skipped elements cost, together, before the read stops: a
 * formatted SVG sprite of 25,000 paths, one a line, before a short page's article costs ~400,000
 * (`<path d></path>` and a line break, 16 each) and is read past. One figure for both, so a page
 * of 400,000 characters of markup and a sprite builds no more than either alone would.
 */
const MAX_READ_COST = 500_000;
const NOT_SPACE = /\S/;
