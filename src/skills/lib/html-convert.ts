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

const TEXT_OPTIONS = {
  wordwrap: false as const,
  selectors: [
    ...DROPPED.map((selector) => ({ selector, format: "skip" })),
    { selector: "a", options: { ignoreHref: true } },
    { selector: "img", format: "skip" },
    { selector: "h1", options: { uppercase: false } },
    { selector: "h2", options: { uppercase: false } },
    { selector: "h3", options: { uppercase: false } },
    { selector: "h4", options: { uppercase: false } },
    { selector: "h5", options: { uppercase: false } },
    { selector: "h6", options: { uppercase: false } },
    { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false } },
  ],
};

/** Element nesting we convert; real pages stay far below it (a few dozen levels). */
export const MAX_HTML_DEPTH = 512;
class TooDeep extends Error {}

/**
 * html-to-text walks the DOM recursively and slows down quadratically on deep trees: 130,000
 * nested <i> take seconds and then overflow the stack. One streaming pass (about 10 ms for
 * 400 KB) refuses such input up front, and stops as soon as the bound is crossed. It must be the
 * very parser html-to-text builds its DOM with (package.json pins the same htmlparser2 major):
 * parsers differ on which tags close implicitly, e.g. nested <a> or <h1>.
 */
function refuseDeepNesting(html: string, loc: Loc) {
  let depth = 0;
  const parser = new Parser({
    onopentag() {
      if (++depth > MAX_HTML_DEPTH) throw new TooDeep();
    },
    onclosetag() {
      depth--;
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
}

export function htmlToText(html: string, loc: Loc = ["html"]): string {
  refuseDeepNesting(html, loc);
  return convert(html, TEXT_OPTIONS).trim();
}

// Script-capable link targets become inert: Markdown is often rendered again downstream.
// Run on RE2 (linear): with JavaScript's engine the `<…>` branch rescans to the end of the text
// from every "](<javascript:" that has no closing ">", quadratic (112 KB of them took 830 ms).
// RE2's \s is ASCII only: spell out JavaScript's, so a no-break space cannot slip a target past.
const WS = String.raw`\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`;
// Compiled on first use: case folding makes the compile ~35 ms, which start-up paid every time.
let scriptLink: RE2JS | undefined;
const SCRIPT_LINK = () =>
  (scriptLink ??= RE2JS.compile(
    String.raw`\]\((?:<[${WS}]*(?:javascript|vbscript|data):[^>]*>|[${WS}]*(?:javascript|vbscript|data):(?:[^()${WS}]|\([^()]*\))*)\)`,
    RE2JS.CASE_INSENSITIVE,
  ));

/** Replaces every script-capable Markdown link target with "#". */
export const neutralizeScriptLinks = (md: string) => SCRIPT_LINK().matcher(md).replaceAll("](#)");

export function htmlToMd(html: string): string {
  refuseDeepNesting(html, ["html"]);
  return neutralizeScriptLinks(htmlToMarkdown(html, { filter: { exclude: DROPPED } })).trim();
}
