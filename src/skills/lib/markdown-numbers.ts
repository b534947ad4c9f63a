import { escapeLineStart } from "./markdown-continuations";

/**
 * The numbers html-for-markdown.ts marked (`MARK n MARK` right after mdream's own marker), written
 * in mdream's place: `3. ⟨n⟩` becomes `n. `. CommonMark renderers show only a list's first number
 * and count on from it, but the Markdown is read as text too, where each item's number is the page's.
 * An item's content lines sit at its marker's width: a wider or narrower number moves them with it
 * (a nested list or paragraph would otherwise fall out of the item), in a quote too (`> 3. `: the
 * spaces after each ">" are counted apart). A mark not right after a marker is dropped with its
 * digits, and mdream's number stands (html-for-markdown.ts marks no item opening with a block).
 * mdream saw the mark, not a line start, before the item's text, so it escaped no "-", "1.", "#"
 * or ">" there: that is escaped here, as mdream does at a line start.
 *
 * One pass: the items a line is inside are a stack (by their content's column, in mdream's
 * indentation), each with what its number moved; scanning every item's lines apart was quadratic
 * in nesting (200 nested items over 20,000 deep lines: 25 s).
 */
export function writeNumbers(md: string, mark: string): string {
  const marked = new RegExp(`^(\\d+)([.)]) ${mark}(\\d+)${mark}`);
  const lines = md.split("\n");
  // Open items: the quote depth their marker is at, the column their content starts at inside that
  // quote (mdream's), and how far their number moved it.
  const open: { depth: number; column: number; delta: number }[] = [];
  // What the open items moved, per quote depth (kept as items open and close: one pass).
  const shifts: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    // The spaces before each quote's ">" and after the last one: an item's column is counted in
    // the spaces of its own quote depth.
    const quoted = QUOTES.exec(line) as RegExpExecArray;
    const spaces = (quoted[1] as string).split(">");
    spaces[spaces.length - 1] = quoted[2] as string;
    const depth = spaces.length - 1;
    const prefix = quoted[0].length;
    // A blank line ends no item; its spaces matter only before a quote's ">" (a blank line in a quote).
    const isBlank = prefix === line.length;
    if (isBlank && depth === 0) continue;
    while (!isBlank) {
      const top = open[open.length - 1];
      if (!top || (top.depth <= depth && (spaces[top.depth] as string).length >= top.column)) break;
      open.pop();
      shifts[top.depth] = (shifts[top.depth] ?? 0) - top.delta;
    }
    let rest = line.slice(prefix);
    const m = marked.exec(rest);
    if (m) {
      const [whole, old = "", delimiter = "", number = ""] = m;
      rest = `${number}${delimiter} ${escapeLineStart(rest.slice(whole.length))}`;
      const delta = number.length - old.length;
      open.push({ depth, column: (spaces[depth] as string).length + old.length + 2, delta });
      shifts[depth] = (shifts[depth] ?? 0) + delta;
    }
    if (m || shifts.some((s, d) => s !== 0 && d <= depth)) {
      // The marker's own line moves with the items outside it, not with its own number.
      const own = m ? (open[open.length - 1] as { delta: number }).delta : 0;
      const moved = spaces.map((run, d) => {
        const shift = (shifts[d] ?? 0) - (d === depth ? own : 0);
        return shift >= 0 ? run + " ".repeat(shift) : run.slice(Math.min(-shift, run.length));
      });
      lines[i] = moved.join(">") + rest;
    }
  }
  // A mark mdream did not write right after a marker goes whole, its digits with it: mdream's number stands.
  return lines
    .join("\n")
    .replace(new RegExp(`${mark}\\d+${mark}`, "g"), "")
    .replaceAll(mark, "");
}

const QUOTES = /^((?: *>)*)( *)/;
