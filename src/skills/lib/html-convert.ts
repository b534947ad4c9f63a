import { decodeHTML } from "entities";
import { convert } from "html-to-text";
import { Parser } from "htmlparser2";
import { htmlToMarkdown } from "mdream";
import { RE2JS } from "re2js";
import { InputError, type Loc } from "../../http/validation";

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
];
/** Tables laid out as text grids: what a reader of the text expects. */
const TEXT_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    ...COMMON_SELECTORS,
    { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false } },
  ],
};
/** Tables as plain blocks, one cell per line: for documents whose tables are too big to lay out. */
const BLOCK_TABLE_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    ...COMMON_SELECTORS,
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

/**
 * html-to-text walks the DOM recursively and slows down quadratically on deep trees: 130,000
 * nested <i> take seconds and then overflow the stack. One streaming pass (about 10 ms for
 * 400 KB) refuses such input up front, and stops as soon as the bound is crossed; it also
 * measures the tables (TABLE_LIMITS), which decides how text mode writes them. It must be the
 * very parser html-to-text builds its DOM with (package.json pins the same htmlparser2 major):
 * parsers differ on which tags close implicitly, e.g. nested <a> or <h1>.
 */
function prepass(html: string, loc: Loc): { gridTables: boolean } {
  let depth = 0;
  let cells = 0;
  let area = 0;
  let maxSpan = 1;
  let maxExtent = 0;
  // Open tables, innermost last: rows so far, the current row's width in columns.
  const tables: { rows: number; width: number }[] = [];
  // html-to-text reads a span as `+attribute || 1`; so does this count (a negative span fills nothing).
  const span = (v: string | undefined) => Math.max(1, +(v ?? "") || 1);
  const parser = new Parser({
    onopentag(name, attribs) {
      if (++depth > MAX_HTML_DEPTH) throw new TooDeep();
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
    },
    onclosetag(name) {
      depth--;
      if (name === "table") tables.pop();
    },
  });
  try {
    parser.end(html);
  } catch (e) {
    if (!(e instanceof TooDeep)) throw e;
    throw InputError.at(loc, `HTML is nested deeper than ${MAX_HTML_DEPTH} elements`, html, "value_error", {
      max_depth: MAX_HTML_DEPTH,
    });
  }
  const { cells: maxCells, span: spanLimit, area: maxArea, extent } = TABLE_LIMITS;
  return {
    gridTables: cells <= maxCells && maxSpan <= spanLimit && area <= maxArea && maxExtent <= extent,
  };
}

export function htmlToText(html: string, loc: Loc = ["html"]): string {
  const { gridTables } = prepass(html, loc);
  return convert(html, gridTables ? TEXT_OPTIONS : BLOCK_TABLE_OPTIONS).trim();
}

// Link targets a renderer would open as script become "#": Markdown is often rendered again
// downstream. The decision is made on the target as a CommonMark renderer reads it (backslash
// escapes and entity references decoded, as in `javascript&colon;`; tabs and newlines removed and
// leading controls trimmed, as URL parsers do), and only http(s), mailto, tel, ftp and relative
// targets are kept: a list of bad schemes misses spellings (`&#106;avascript:`, `data:` with an
// escaped `>`). Found with RE2 (linear): with JavaScript's engine the `<…>` branch rescanned to
// the end of the text from every "](<javascript:" with no closing ">", quadratic (112 KB: 830 ms).
// RE2's \s is ASCII only: spell out JavaScript's, so a no-break space cannot slip a target past.
const WS = String.raw`\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`;
const BARE = String.raw`(?:\\.|[^()${WS}\\]|\((?:\\.|[^()${WS}\\])*\))`;
// Compiled on first use: the compile costs start-up time otherwise.
let destination: RE2JS | undefined;
const DESTINATION = () =>
  (destination ??= RE2JS.compile(
    // "](" then a target: <…> (group 1), or a bare one that does not start with "<" (group 2).
    String.raw`\]\([${WS}]*(?:(<(?:\\.|[^<>\\\n])*>)|((?:\\.|[^<()${WS}\\]|\((?:\\.|[^()${WS}\\])*\))${BARE}*))`,
  ));
const SAFE_SCHEMES = new Set(["http", "https", "mailto", "tel", "ftp"]);

/** Whether a Markdown link target, read as a renderer reads it, names a scheme we do not keep. */
function unsafeTarget(raw: string) {
  const decoded = decodeHTML(raw.replace(/\\([!-/:-@[-\x60{-~])/g, "$1")).replace(/[\t\n\r]/g, "");
  let start = 0;
  while (start < decoded.length && decoded.charCodeAt(start) <= 0x20) start++; // leading C0 controls and spaces
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(decoded.slice(start))?.[1];
  return scheme !== undefined && !SAFE_SCHEMES.has(scheme.toLowerCase());
}

/** Replaces every Markdown link or image target that is not http(s), mailto, tel, ftp or relative with "#". */
export function neutralizeScriptLinks(md: string): string {
  const m = DESTINATION().matcher(md);
  let out = "";
  let last = 0;
  while (m.find()) {
    const angle = m.group(1);
    const group = angle === null ? 2 : 1;
    if (!unsafeTarget(angle === null ? (m.group(2) ?? "") : angle.slice(1, -1))) continue;
    out += `${md.slice(last, m.start() + 2)}#`; // from just after "](", the spaces before too
    last = m.end(group);
  }
  return last === 0 ? md : out + md.slice(last);
}

export function htmlToMd(html: string): string {
  prepass(html, ["html"]);
  return neutralizeScriptLinks(htmlToMarkdown(html, { filter: { exclude: MD_DROPPED } })).trim();
}
