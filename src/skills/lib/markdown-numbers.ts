/**
 * The numbers html-for-markdown.ts marked (`MARK n MARK` right after mdream's own marker), written
 * in mdream's place: `3. ⟨n⟩` becomes `n. `. CommonMark renderers show only a list's first number
 * and count on from it, but the Markdown is read as text too, where each item's number is the page's.
 * An item's content lines sit at its marker's width: a wider or narrower number moves them with it
 * (a nested list or paragraph would otherwise fall out of the item). A mark not right after a
 * marker (an item opening with a block) is dropped, and mdream's number stands.
 *
 * One pass: the items a line is inside are a stack (by their content's column, in mdream's
 * indentation), each with what its number moved; scanning every item's lines apart was quadratic
 * in nesting (200 nested items over 20,000 deep lines: 25 s).
 */
export function writeNumbers(md: string, mark: string): string {
  const marked = new RegExp(`^( *)(\\d+)([.)]) ${mark}(\\d+)${mark}`);
  const lines = md.split("\n");
  // Open items: the column their content starts at (mdream's), and the shift there (theirs and outer ones').
  const open: { column: number; shift: number }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    let lead = 0;
    while (line.charCodeAt(lead) === 0x20) lead++;
    if (lead === line.length) continue; // blank: no item ends there, and its spaces do not matter
    while (open.length > 0 && (open[open.length - 1] as { column: number }).column > lead) open.pop();
    const shift = open.length > 0 ? (open[open.length - 1] as { shift: number }).shift : 0;
    let out = line;
    const m = marked.exec(line);
    if (m) {
      const [whole, indent = "", old = "", delimiter = "", number = ""] = m;
      out = `${indent}${number}${delimiter} ${line.slice(whole.length)}`;
      open.push({ column: indent.length + old.length + 2, shift: shift + number.length - old.length });
    }
    if (shift > 0) out = " ".repeat(shift) + out;
    else if (shift < 0) out = out.slice(Math.min(-shift, lead));
    lines[i] = out;
  }
  return lines.join("\n").replaceAll(mark, "");
}
