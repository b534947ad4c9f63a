/**
 * The numbers html-for-markdown.ts marked (`MARK n MARK` right after mdream's own marker), written
 * in mdream's place: `3. ⟨n⟩` becomes `n. `. CommonMark renderers show only a list's first number
 * and count on from it, but the Markdown is read as text too, where each item's number is the page's.
 * An item's content lines sit at its marker's width: a wider or narrower number moves them with it
 * (a nested list or paragraph would otherwise fall out of the item). A mark not right after a
 * marker (an item opening with a block) is dropped, and mdream's number stands.
 */
export function writeNumbers(md: string, mark: string): string {
  const marked = new RegExp(`^( *)(\\d+)([.)]) ${mark}(\\d+)${mark}`);
  const lines = md.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const m = marked.exec(line);
    if (!m) continue;
    const [whole, indent = "", old = "", delimiter = "", number = ""] = m;
    lines[i] = `${indent}${number}${delimiter} ${line.slice(whole.length)}`;
    const shift = number.length - old.length;
    if (shift === 0) continue;
    const column = indent.length + old.length + 2;
    for (let j = i + 1; j < lines.length; j++) {
      const next = lines[j] as string;
      if (next.trim() === "") continue;
      if (next.length - next.trimStart().length < column) break;
      lines[j] = shift > 0 ? " ".repeat(shift) + next : next.slice(-shift);
    }
  }
  return lines.join("\n").replaceAll(mark, "");
}
