import { htmlToMarkdown } from "mdream";
import type { Loc } from "../../http/validation";
import { cut } from "../../text-cut";
import { joinAtMarks, MD_DROPPED, restoreMark, safeForMarkdown } from "./html-for-markdown";
import { prepass } from "./html-prepass";
import { mendContinuations } from "./markdown-continuations";
import { inertForRenderers, neutralizeScriptLinks } from "./markdown-safety";
import { MAX_OUTPUT_BYTES, OutputTooLarge } from "./output-size";
import { textConverter } from "./text-mode";

/**
 * HTML to plain text (html-to-text) or Markdown (mdream), bounded: html_clean and ai_detector use
 * it. Each conversion is one pipeline: the prepass bounds and sizes the page (html-prepass.ts), an
 * answer past the output cap is refused before it is built, then text mode's converter
 * (text-mode.ts), or mdream on HTML made safe and faithful for it (html-for-markdown.ts) with the
 * lines it writes that a renderer misreads mended (markdown-continuations.ts) and its output read
 * as a renderer reads it (markdown-safety.ts). The skills import this module on first use, so none
 * of these libraries is evaluated at start-up.
 */

/** How much of `html` htmlToText converts for its first `maxChars` characters of text. */
export const sourceRead = (html: string, maxChars: number) =>
  prepass(html, ["html"], "text", { at: maxChars, maxSource: MAX_SOURCE_CHARS }).end ?? html.length;

/** How long a mode's output of `html` is at least, in characters (the prepass's count). */
export const outputAtLeast = (html: string, mode: "text" | "markdown") =>
  prepass(html, ["html"], mode).outputAtLeast;

const LEADING_BLANK_LINES = /^\s*\n/;

/**
 * What both converters are given: lone surrogates (JSON allows "\ud83d") as U+FFFD. mdream read
 * one as the lead of a pair and swallowed the character after it ("x\ud83dyz" came out "x\ufffdz"),
 * html-to-text passed it through, so the modes disagreed. One code unit for one: every offset the
 * prepass computes on the caller's string holds on this one.
 */
const wellFormed = (html: string) => html.toWellFormed();

/**
 * U+FEFF: a byte-order mark, or a stray one where files were joined (as a zero width no-break space
 * it is deprecated for U+2060). Dropped from both modes' output, wherever it stands: mdream's
 * trim dropped it at the ends of the answer only, html-to-text kept it. Markdown drops it before
 * its safety checks read the answer, so no tag can form where one stood.
 */
const dropBoms = (s: string) => s.replaceAll("\ufeff", "");

/** The most of a document htmlToText reads with a `maxChars` (html_clean's own bound on its input). */
const MAX_SOURCE_CHARS = 400_000;

/**
 * The text of a document; with `maxChars`, its first `maxChars` characters, converted from only as
 * much of the document as they need (and at most MAX_SOURCE_CHARS of it outside the elements it
 * skips): a 2 MiB page read for 8,000 characters was converted whole.
 */
export function htmlToText(html: string, loc: Loc = ["html"], maxChars?: number): string {
  const stop = maxChars === undefined ? undefined : { at: maxChars, maxSource: MAX_SOURCE_CHARS };
  const { gridTables, outputAtLeast, end, page } = prepass(wellFormed(html), loc, "text", stop);
  if (outputAtLeast > MAX_OUTPUT_BYTES) throw new OutputTooLarge();
  const source = end === undefined ? page : page.slice(0, end);
  // Blank lines go from the start, not the first line's own indent: a page that opens with a list
  // or a <pre> kept its first item's marker and line flush left ("* A\n * B").
  const text = dropBoms(textConverter(gridTables)(source)).replace(LEADING_BLANK_LINES, "").trimEnd();
  return maxChars === undefined ? text : cut(text, maxChars);
}

export function htmlToMd(html: string): string {
  const { outputAtLeast, page } = prepass(wellFormed(html), ["html"], "markdown");
  if (outputAtLeast > MAX_OUTPUT_BYTES) throw new OutputTooLarge();
  const safe = safeForMarkdown(page);
  // Line ends as a renderer reads them, for the checks below to see the lines it will see.
  let md = dropBoms(htmlToMarkdown(safe.html, { filter: { exclude: MD_DROPPED } })).replace(/\r\n?/g, "\n");
  if (safe.linkMark) md = joinAtMarks(md, safe.linkMark);
  if (safe.mark) md = restoreMark(md, safe.mark);
  // Trimmed before the lines are mended: a trailing no-break space kept "---\u00a0" from being read
  // as an underline until trim took it.
  return inertForRenderers(
    neutralizeScriptLinks(mendContinuations(md.trim(), safe.breakMark, safe.numbered)).trim(),
  );
}
