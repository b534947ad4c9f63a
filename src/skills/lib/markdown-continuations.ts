import MarkdownIt from "markdown-it";

/**
 * Lines mdream writes that CommonMark reads otherwise than mdream meant, mended after mdream runs.
 * mdream escapes what in the page's text would open a block, and puts a blank line before a block
 * of its own, even after a line break; so these are misreadings:
 * - after a line break (`<br>`), a line of "=" or "--" made the paragraph's text a setext heading
 *   (`a<br>==` came out as "# a"); and in a list nested in a list, mdream left the next line's
 *   ">", "-", "1." or "#" unescaped, and it opened a quote, a list or a heading: the marker is
 *   escaped. Which lines are the page's text after a <br> is decided on the page, not on the
 *   Markdown: html-for-markdown.ts puts a mark (a private-use character the page does not hold)
 *   before the first text after each <br>, and only a line whose text starts with the mark is
 *   mended (read from the Markdown, mdream's own fence or heading after an item's line break was
 *   escaped too: its code became Markdown, a `javascript:` reference link included);
 * - an item holding "--" ("- --") is a thematic break: the line's last dash is escaped;
 * - a list nested in an item right after the item's text, ordered and starting past 1
 *   (`<li>a<ol start="7">`), cannot interrupt a paragraph, so it read as the item's text ("a 7.
 *   b"): a blank line (with the line's quote markers) goes before it; the list is then loose.
 * The last two are found by reading the answer's blocks as a renderer does (markdown-it, inline
 * parsing off: block tokens alone say where a rule or a paragraph is), only when a line that could
 * be one is there at all (an item numbered past 1 only counts when the page numbers a list
 * itself: with mdream's own "2.", every page with an <ol> paid a full parse, 190 -> 350-720 ms).
 */
const MAYBE_ORDERED = /\n[ >]*(?:\d{2,9}|[02-9])[.)](?: |\n|$)/;
// A line of three or more "-", "*" or "_" other than mdream's own rule ("---").
const MAYBE_BREAK = /^[ >]*(?!---[ \t]*$)(?:[-*_][ \t]*){3,}$/m;
// mdream's own rules: "---", or "***" first in an item (`<li><hr>` is "- ***").
const OWN_RULE = /^[ >]*(?:(?:[-*+]|\d{1,9}[.)]) +)*(?:---|\*\*\*)[ \t]*$/;
const ITEM_START = /^([ >]*)(\d{1,9})[.)](?: |$)/;
/**
 * What opens a block (CommonMark's blocks that interrupt a paragraph; a backtick fence holds no
 * other backtick on its line, else it is a code span), or a quote.
 */
const OPENER =
  /^(?:[-*+](?=[ \t]|$)|>|\d{1,9}(?=[.)](?:[ \t]|$))|#{1,6}(?=[ \t]|$)|`{3,}[^`]*$|~{3}|=+[ \t]*$|-+[ \t]*$)/;
let reader: InstanceType<typeof MarkdownIt> | undefined;

const escapeAt = (line: string, at: number) => `${line.slice(0, at)}\\${line.slice(at)}`;

/** Lines whose text starts with the page's text after a <br>: the marker that opens a block escaped. */
function escapeAfterBreaks(lines: string[], mark: string) {
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (!line.includes(mark)) continue;
    const start = (/^[ >]*/.exec(line) as RegExpExecArray)[0].length;
    let mended = line;
    if (line.startsWith(mark, start)) {
      const rest = line.slice(start + mark.length);
      const marker = OPENER.exec(rest);
      // "1\." is the escape of an ordered item ("\1" is a backslash and a digit).
      if (marker)
        mended = escapeAt(line, start + mark.length + (/^\d/.test(marker[0]) ? marker[0].length : 0));
    }
    lines[i] = mended.replaceAll(mark, "");
  }
}

export function mendContinuations(md: string, breakMark?: string, numbered = true): string {
  const lines = md.split("\n");
  if (breakMark && md.includes(breakMark)) escapeAfterBreaks(lines, breakMark);
  const mended = lines.join("\n");
  // mdream numbers a list from 1 unless the page says otherwise: its own "2." is no sign of one.
  if (!(numbered && MAYBE_ORDERED.test(mended)) && !MAYBE_BREAK.test(mended)) return mended;
  if (!reader) {
    reader = new MarkdownIt();
    reader.core.ruler.disable(["inline"]);
  }
  const blankBefore = new Set<number>();
  for (const t of reader.parse(mended, {})) {
    if (!t.map) continue;
    const [first, end] = t.map;
    if (t.type === "hr" && !OWN_RULE.test(lines[first] as string)) {
      const line = lines[first] as string;
      lines[first] = escapeAt(line, line.trimEnd().length - 1);
    } else if (t.type === "paragraph_open") {
      for (let i = first + 1; i < end; i++) {
        const item = ITEM_START.exec(lines[i] as string);
        if (item && Number(item[2]) !== 1) blankBefore.add(i);
      }
    }
  }
  if (blankBefore.size === 0) return lines.join("\n");
  return lines
    .map((line, i) =>
      blankBefore.has(i) ? `${(ITEM_START.exec(line)?.[1] ?? "").trimEnd()}\n${line}` : line,
    )
    .join("\n");
}
