import { decodeHTML } from "entities";
import MarkdownIt, { type Token } from "markdown-it";

/**
 * The checks on the Markdown html_clean answers, read as a renderer downstream will read it, with
 * nothing known of the HTML it came from or of mdream. Each review found another way the
 * converter's output could run script; these are the checks that do not depend on knowing which,
 * so they stand apart from the converter, where a change to how HTML is prepared cannot reach
 * them, and any Markdown can be put through them.
 */

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

/**
 * The last word: every pass before it (html-for-markdown.ts, neutralizeScriptLinks) answers one
 * way mdream's output was found to run script, and each review found another. So the output is
 * read as a renderer reads it (markdown-it, raw HTML on, its own link filter off) whenever it could
 * hold a tag at all, and if it holds raw HTML other than a line break (mdream's `<br>` in table
 * cells) or a script link, every "<" and "[" becomes a character reference: shown the same, and
 * nothing can open a tag, an autolink or a link.
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
