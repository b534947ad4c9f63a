import MarkdownIt from "markdown-it";

/**
 * Lines mdream writes that CommonMark reads otherwise than mdream meant, mended after mdream runs.
 * mdream escapes what in the page's text would open a block, and puts a blank line before a block
 * of its own, even after a line break; so these are misreadings:
 * - after a line break (`<br>`, a line ending in two spaces), a line of "=" or "--" made the
 *   paragraph's text a setext heading (`a<br>==` came out as "# a"); and in a list nested in a
 *   list, mdream left the next line's ">", "-", "1." or "#" unescaped, and it opened a quote, a
 *   list or a heading: the marker is escaped (line by line, outside code blocks);
 * - an item holding "--" ("- --") is a thematic break: the line's last dash is escaped;
 * - a list nested in an item right after the item's text, ordered and starting past 1
 *   (`<li>a<ol start="7">`), cannot interrupt a paragraph, so it read as the item's text ("a 7.
 *   b"): a blank line (with the line's quote markers) goes before it; the list is then loose.
 * The last two are found by reading the answer as a renderer does (markdown-it), only when a line
 * that could be one is there at all.
 */
const MAYBE_ORDERED = /\n[ >]*(?:\d{2,9}|[02-9])[.)](?: |\n|$)/;
// A line of three or more "-", "*" or "_" other than mdream's own rule ("---").
const MAYBE_BREAK = /^[ >]*(?!---[ \t]*$)(?:[-*_][ \t]*){3,}$/m;
const ITEM_START = /^([ >]*)(\d{1,9})[.)](?: |$)/;
/**
 * What opens a block after a line's quote markers and indent (CommonMark's blocks that interrupt a
 * paragraph; a backtick fence holds no other backtick on its line, else it is a code span).
 */
const OPENER =
  /^(?:[-*+](?=[ \t]|$)|\d{1,9}(?=[.)](?:[ \t]|$))|#{1,6}(?=[ \t]|$)|`{3,}[^`]*$|~{3}|=+[ \t]*$|-+[ \t]*$)/;
const FENCE = /^[ >]*(`{3,}(?=[^`]*$)|~{3,})/;
let reader: InstanceType<typeof MarkdownIt> | undefined;

const escapeAt = (line: string, at: number) => `${line.slice(0, at)}\\${line.slice(at)}`;
const quotes = (run: string) => run.split(">").length - 1;

/** Lines after a line break that open a block: their marker escaped. Outside fenced code only. */
function escapeAfterBreaks(lines: string[]) {
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const open = FENCE.exec(line);
    if (fence) {
      if (open && (open[1] as string).startsWith(fence)) fence = undefined;
      continue;
    }
    if (i > 0 && (lines[i - 1] as string).endsWith("  ")) {
      const run = (/^[ >]*/.exec(line) as RegExpExecArray)[0];
      const before = quotes((/^[ >]*/.exec(lines[i - 1] as string) as RegExpExecArray)[0]);
      if (quotes(run) > before) {
        // A ">" more than the line before has: the page's text, read as a quote.
        let at = -1;
        for (let q = 0; q <= before; q++) at = line.indexOf(">", at + 1);
        lines[i] = escapeAt(line, at);
        continue;
      }
      const marker = OPENER.exec(line.slice(run.length));
      if (marker) {
        // "1\." is the escape of an ordered item ("\1" is a backslash and a digit).
        const at = run.length + (/^\d/.test(marker[0]) ? marker[0].length : 0);
        lines[i] = escapeAt(line, at);
        continue;
      }
    }
    if (open) fence = open[1] as string;
  }
}

export function mendContinuations(md: string): string {
  const lines = md.split("\n");
  if (md.includes("  \n")) escapeAfterBreaks(lines);
  const mended = lines.join("\n");
  if (!MAYBE_ORDERED.test(mended) && !MAYBE_BREAK.test(mended)) return mended;
  reader ??= new MarkdownIt();
  const blankBefore = new Set<number>();
  for (const t of reader.parse(mended, {})) {
    if (!t.map) continue;
    const [first, end] = t.map;
    if (t.type === "hr" && !/^[ >]*---[ \t]*$/.test(lines[first] as string)) {
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
