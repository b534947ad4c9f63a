/**
 * Random pages for comparing html_clean's text mode with a browser (html-clean-browser.test.ts),
 * and the comparison itself. Words are numbered ("w7"; "t2c3w7" inside a table: table 2, cell 3,
 * "c0" its caption), so any word lost, added, glued to its neighbour or split in two shows, each
 * table's and cell's words can be told apart, and nothing a page says can pass for a marker or a
 * rule of text mode's layout.
 */

/** mulberry32: the same pages for the same seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Every kind of HTML whitespace, written and as entities, and the no-break space (a character).
const SPACES = [" ", "  ", "\t", "\n", "\r\n", " \n ", "&nbsp;", "\u00a0", "&#32;", "&#10;", "\f"];
// What can stand inside a word: nothing, a zero width space, a soft hyphen, entities, punctuation.
const JOINERS = [
  "",
  "",
  "\u200b",
  "&shy;",
  "&amp;",
  "&lt;",
  "&gt;",
  "&quot;",
  "&#65;",
  "&copy;",
  "$",
  "'",
  "-",
];
const INLINE =
  "span b i em strong a code kbd sup sub small mark q abbr bdi bdo s u label cite time data dfn var samp ins del font nobr".split(
    " ",
  );
const BLOCK =
  "p div h1 h3 h6 blockquote section article header footer nav aside address center main search hgroup".split(
    " ",
  );

/**
 * Inline styles: ones that hide an element, spelled as CSS allows (case, spaces, comments,
 * `!important`, the last valid declaration winning, `;` inside a string or `url()`), and ones that
 * do not. "SAME" stands for the element's own display (a display that changes the layout is not
 * read: the comparison would see the layout, not what is shown).
 */
const HIDING = [
  "display:none",
  "DISPLAY : None",
  "display:none !important",
  "display:none!IMPORTANT;display:SAME",
  "display:/* c */none",
  "color:red;display:none;",
  "display:SAME;display:none",
  "display:none;display:bogus",
  "display:none;display:SAME }",
  "display:none; x:'a;display:SAME'",
  "display:none; background:url(a;display:SAME)",
  "display:n\\one",
  "visibility:hidden",
  "visibility:collapse",
  "Visibility: HIDDEN !important",
  "visibility:visible;visibility:hidden",
  // Escaped !important, CR and FF ending a string or an escape, unquoted url( as one token.
  "display:none!\\69mportant",
  "display:none !\\important",
  "display:none!imp\\ortant",
  "display:SAME !important; display:none!\\69mportant",
  "visibility:hidden!\\69mportant;visibility:visible",
  "x:'\f; display:none",
  "x:'\r; display:none",
  "display:\\6e\r\none",
  "background:url(/*);display:none",
  "background:url( /*);display:none",
  "background:url(it's.png);display:none",
  "background:url(a&quot;b); display:none",
  "background:\\75rl(/*);display:none",
  "background:\\75 rl(/*);display:none",
  "display:none;x:'a;display:SAME;b'",
  "display:none;x:(a;display:SAME;b)",
  // Through custom properties (css-vars.ts): own, a fallback, a cycle's fallback, an empty value,
  // an escaped name, `initial`, a later invalid display after a var() one.
  "--d:none;display:var(--d)",
  "display:var(--x, none)",
  "--a:var(--b);--b:var(--a);display:var(--a,none)",
  "--d:;display:var(--d) none",
  "--\\64:none;display:var(--d)",
  "--d:initial;display:var(--d, none)",
  "--v:hidden;visibility:var(--v)",
  "display:VAR(--x,var(--y,none))",
  "--d:none;display:var(--d)!important;display:SAME",
  // A var() whose name is escaped or in capitals.
  "--d:none;display:v\\61r(--d)",
  "--e:none;--d:v\\61r(--e);display:var(--d)",
  "--d:none;display:\\56 AR(--d)",
  "--e:none;display:var(--x, v\\61r(--e))",
  "--v:hidden;visibility:v\\61r(--v)",
];
const NOT_HIDING = [
  "color:red",
  "display:SAME",
  "display:none;display:SAME",
  "display:nonex",
  "display:no/**/ne",
  "display:none !ie",
  "display:none none",
  "/* display:none */",
  "x:'display:none'",
  "visibility:hidden;visibility:visible",
  "visibility:visible",
  "visibility:inherit",
  // What a string or block holds, spaces CSS does not count as whitespace, a second !important.
  "display:SAME;x:'a;display:none'",
  "display:SAME;x:(a;display:none)",
  "display:SAME;x:[a;display:none]",
  "display:SAME;x:{a;display:none}",
  "display:SAME;x:'a;display:none;b'",
  "display:SAME;x:(a;display:none;b)",
  "display:SAME;x:[a;display:none;b]",
  "display:SAME;x:{a;display:none;b}",
  "display:SAME;background:url(a;display:none;b)",
  "display:none&nbsp;",
  "&nbsp;display:none",
  "display:\u00a0none",
  "display:none\ufeff",
  "display\u2003:none",
  "display:none !important!important",
  "background:xurl(/*);display:none",
  "background:-url(/*);display:none",
  "--d:SAME;display:var(--d)",
  "--d:none;--d:SAME;display:var(--d)",
  "display:var(--unset, SAME)",
  // Custom properties for what is inside (inherited), and what reads them there: hidden inside
  // an element declaring them, shown elsewhere.
  "--h:none;--v:hidden;display:SAME",
  "display:var(--h, SAME)",
  "visibility:var(--v, visible)",
];
/** Hiding by visibility, for a region that shows something again inside it. */
const INVISIBLE = ["visibility:hidden", "visibility:collapse", "Visibility: HIDDEN !important"];

/** One page: a few blocks, each holding inline elements nested up to four deep. */
export function makePage(r: () => number): string {
  let n = 0;
  let tables = 0;
  // The table and cell the words being made are in ("t2c3"), or none.
  let cell = "";
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)] as T;
  const word = () => `${cell}w${n++}`;
  // Hidden from a browser (`hidden`), or shown (until-found: inline, or found on a block).
  const hidden = () => (r() < 0.5 ? " hidden" : ' hidden="until-found"');
  // A style attribute for an element whose own display is `own`: hiding it half the time.
  const style = (own: string) => ` style="${pick(r() < 0.5 ? HIDING : NOT_HIDING).replaceAll("SAME", own)}"`;
  // Something a hidden region shows again (`visibility: visible`), with what stays hidden around it.
  const reshown = (tag: string, inner: () => string) =>
    `<${tag} style="${pick(INVISIBLE)}">${inner()}<${tag} style="visibility:visible">${inner()}</${tag}>${inner()}</${tag}>`;
  const space = () => pick(SPACES);
  const text = () => {
    let t = r() < 0.3 ? space() : "";
    const k = 1 + Math.floor(r() * 3);
    for (let i = 0; i < k; i++) {
      t += word();
      if (r() < 0.25) t += pick(JOINERS) + word();
      t += i < k - 1 || r() < 0.5 ? space() : "";
    }
    return t;
  };
  const inline = (d: number): string => {
    const parts: string[] = [];
    const k = 1 + Math.floor(r() * 3);
    for (let i = 0; i < k; i++) {
      const x = r();
      if (d > 3 || x < 0.4) parts.push(text());
      else if (x < 0.75) {
        const tag = pick(INLINE);
        const attr = tag === "a" ? ' href="/x"' : tag === "bdo" ? ' dir="rtl"' : "";
        parts.push(`<${tag}${attr}>${inline(d + 1)}</${tag}>`);
      } else if (x < 0.82) parts.push(pick(["<br>", "<br/>", "<wbr>", "<br>\n"]));
      else if (x < 0.83) parts.push(`<span${hidden()}>${text()}</span>`);
      else if (x < 0.86) {
        // `hidden` undone by a display its style sets, or a style (inside, another may undo it).
        const y = r();
        if (y < 0.3) parts.push(reshown("span", () => inline(d + 1)));
        else {
          const attrs = y < 0.45 ? ' hidden style="display:inline"' : style("inline");
          parts.push(`<span${attrs}>${inline(d + 1)}</span>`);
        }
      } else if (x < 0.89) parts.push(`<ruby>${word()}<rp>(</rp><rt>${word()}</rt><rp>)</rp></ruby>`);
      else if (x < 0.91) parts.push(`<input value="${word()}">`);
      else if (x < 0.93)
        parts.push(`<select><option>${word()}</option><option selected>${word()}</option></select>`);
      else if (x < 0.95) parts.push(`<img alt="${word()}" src="/i.png">`);
      else if (x < 0.97) parts.push(`<template>${text()}</template>`);
      else parts.push(`<!-- ${word()} -->`);
    }
    return parts.join(r() < 0.5 ? space() : "");
  };
  const list = (d: number): string => {
    const ordered = r() < 0.5;
    const start = ordered && r() < 0.4 ? ` start="${Math.floor(r() * 20) - 3}"` : "";
    const type = ordered && r() < 0.3 ? ` type="${pick(["a", "A", "i", "I", "1"])}"` : "";
    const tag = ordered ? "ol" : "ul";
    let items = "";
    const k = 1 + Math.floor(r() * 3);
    for (let i = 0; i < k; i++) {
      const inner =
        d < 3 && r() < 0.3
          ? inline(d + 1) + list(d + 1)
          : r() < 0.2
            ? `<p>${inline(d + 1)}</p>`
            : inline(d + 1);
      const attrs = r() < 0.1 ? hidden() : r() < 0.1 ? style("list-item") : "";
      items += `<li${attrs}>${inner}</li>${r() < 0.3 ? "\n" : ""}`;
    }
    return `<${tag}${start}${type}>${items}</${tag}>`;
  };
  const table = (d: number): string => {
    const t = tables++;
    let cells = 0;
    let rows = "";
    const cols = 1 + Math.floor(r() * 3);
    const k = 1 + Math.floor(r() * 3);
    // Hidden parts, rarely: a browser leaves them out, the grid must too (no cells' columns shift).
    const part = (own: string) => (r() < 0.08 ? hidden() : r() < 0.06 ? style(own) : "");
    for (let i = 0; i < k; i++) {
      let row = "";
      for (let j = 0; j < cols; j++) {
        const c = i === 0 && r() < 0.5 ? "th" : "td";
        cell = `t${t}c${++cells}`;
        row += `<${c}${part("table-cell")}>${inline(d + 1)}</${c}>`;
      }
      rows += `<tr${part("table-row")}>${row}</tr>\n`;
    }
    cell = `t${t}c0`;
    const caption = r() < 0.3 ? `<caption${part("table-caption")}>${inline(d + 1)}</caption>` : "";
    cell = "";
    return `<table>${caption}${rows}</table>`;
  };
  // Blocks, the elements a browser lays out as blocks, and those it hides or draws as boxes.
  const rare = (d: number): string => {
    const y = r();
    const i = () => inline(d + 1);
    if (y < 0.05) return `<xmp>${word()} <b>${word()}</b>\n${word()}</xmp>`;
    if (y < 0.09) return `<listing>\n${word()}  ${word()}\n${word()}</listing>`;
    if (y < 0.15) return `<dialog${r() < 0.5 ? " open" : ""}>${i()}</dialog>`;
    if (y < 0.19) return `<li>${i()}</li>`;
    if (y < 0.24) return `<span>${i()}<div>${i()}</div>${i()}</span>`;
    if (y < 0.28) return `<video>${i()}</video>`;
    if (y < 0.31) return `<audio><source src="/a.mp3">${i()}</audio>`;
    if (y < 0.34) return `<title>${word()}</title>`;
    if (y < 0.37) return `<datalist><option value="${word()}">${word()}</option></datalist>`;
    if (y < 0.4) return `<meter value="1">${word()}</meter><progress>${word()}</progress>`;
    if (y < 0.44) return `<button>${i()}</button>`;
    if (y < 0.48) return `<a href="/h"><h4>${i()}</h4>${i()}</a>`;
    if (y < 0.52) return `<p>${i()}<div>${i()}</div>`;
    if (y < 0.56) return `<ul><li>${i()}<pre>${word()}\n${word()}</pre>${i()}</li></ul>`;
    if (y < 0.6) return `<ul><li><h3>${i()}</h3><p>${i()}</p>${i()}</li></ul>`;
    if (y < 0.64) return `<p>${space()}<br>${space()}${i()}${space()}<br>${space()}</p>`;
    if (y < 0.68) return `<blockquote>${i()}<blockquote><p>${i()}</p></blockquote>${i()}</blockquote>`;
    if (y < 0.74)
      return pick([
        "<table></table>",
        "<table><tr><td><img src=/i.png></td></tr></table>",
        "<ul></ul>",
        "<ol>\n</ol>",
      ]);
    if (y < 0.79) return `<b>${i()}<p>${i()}</p>${i()}</b>`;
    if (y < 0.84)
      return `<ol start="${Math.floor(r() * 5)}" type="i"><li>${i()}<ol type="a"><li>${i()}</li></ol></li><li>${i()}</li></ol>`;
    if (y < 0.88) return `<p><code>${word()}\n  ${word()}</code> ${i()}</p>`;
    if (y < 0.92) return `<div>${space()}<br><br>${space()}<br>${i()}</div>`;
    if (y < 0.95) return `<section>${space()}</section>`;
    cell = `t${tables++}c1`;
    const inCell = i();
    cell = "";
    return `<ul><li>${i()}<table><tr><td>${inCell}</td></tr></table></li></ul>`;
  };
  const block = (d: number): string => {
    const x = r();
    const i = () => inline(d + 1);
    if (d > 3 || x < 0.3) {
      const tag = pick(BLOCK);
      return `<${tag}>${i()}</${tag}>`;
    }
    if (x < 0.45) {
      const tag = pick(["div", "section", "blockquote", "article"]);
      let inner = "";
      const k = 1 + Math.floor(r() * 3);
      for (let j = 0; j < k; j++) inner += (r() < 0.4 ? i() : "") + block(d + 1);
      return `<${tag}>${inner}</${tag}>`;
    }
    if (x < 0.55) return list(d);
    if (x < 0.62) return table(d);
    if (x < 0.67)
      return `<pre>${pick(["", "\n", "\n\n"])}${word()}  ${word()}\n  ${word()}${pick(["", "\n"])}</pre>`;
    if (x < 0.7) return `<pre><code>${word()}\n${word()}</code></pre>`;
    if (x < 0.74) return `<dl><dt>${i()}</dt><dd>${i()}</dd></dl>`;
    if (x < 0.78) return `<details${r() < 0.5 ? " open" : ""}><summary>${i()}</summary>${i()}</details>`;
    if (x < 0.8) return `<figure>${i()}<figcaption>${i()}</figcaption></figure>`;
    if (x < 0.82) return `<fieldset><legend>${i()}</legend>${i()}</fieldset>`;
    if (x < 0.84) return "<hr>";
    if (x < 0.85) return `<div${hidden()}>${i()}</div>`;
    if (x < 0.86) {
      // A styled region holding inline text, or blocks (lists and quotes among them), or a
      // hidden one showing a part again.
      const y = r();
      if (y < 0.25) return reshown("div", () => (r() < 0.5 ? i() : block(d + 1)));
      const inner = y < 0.6 ? block(d + 1) : i();
      return `<div${y < 0.7 ? ' hidden style="display:block"' : style("block")}>${inner}</div>`;
    }
    if (x < 0.88) return `<textarea>${word()} ${word()}</textarea>`;
    if (x < 0.9) return `<p>${i()}<br></p>`;
    if (x < 0.92) return "<p></p>";
    if (x < 0.94) return `<noscript>${text()}</noscript>`;
    if (x < 0.96) return `<menu><li>${i()}</li><li>${i()}</li></menu>`;
    if (x < 0.97) return `<h2>${i()}</h2>`;
    return rare(d);
  };
  let html = "";
  const k = 1 + Math.floor(r() * 5);
  for (let j = 0; j < k; j++) html += (r() < 0.3 ? inline(0) : "") + block(0) + (r() < 0.3 ? space() : "");
  return html;
}

/**
 * The browser's text of the page it holds (run in the page): `document.body.innerText`, after
 * taking out what html_clean leaves out by design (`dropped`: html-prepass.ts's DROPPED), and
 * putting in what text mode keeps by documented choice: a closed <details>' content (README), a
 * <textarea>'s, a <button>'s, a <meter>'s or a <progress>'s text (the box a browser draws shows or
 * says it; innerText leaves boxes' text out), <rp>'s parentheses ("漢(kan)", what they are for).
 * A <wbr> becomes an empty <span>: Chromium drops the whitespace right after one ("a<wbr> b" is
 * "ab" there, "a b" in Firefox and here). `hidden="until-found"` is revealed, as find-in-page
 * reveals it (text mode keeps it, as it keeps a closed <details>' content). With the text, the
 * list items a browser shows with a marker (a <li> in a <ul> or <ol>, rendered and visible).
 */
export function browserText(dropped: string[]): { text: string; items: number } {
  for (const e of document.querySelectorAll(dropped.join(","))) e.remove();
  for (const d of document.querySelectorAll("details")) d.open = true;
  for (const e of document.querySelectorAll('[hidden="until-found"]')) e.removeAttribute("hidden");
  for (const t of document.querySelectorAll("textarea")) {
    const s = document.createElement("span");
    s.textContent = t.value;
    t.replaceWith(s);
  }
  for (const t of document.querySelectorAll("button,meter,progress")) {
    const s = document.createElement("span");
    s.append(...t.childNodes);
    t.replaceWith(s);
  }
  for (const rp of document.querySelectorAll<HTMLElement>("rp")) rp.style.display = "inline";
  for (const w of document.querySelectorAll("wbr")) w.replaceWith(document.createElement("span"));
  // What the browser does not show for its visibility (its computed style's call) keeps its boxes,
  // emptied: innerText drops their line breaks and lets their spaces collapse the visible one after
  // them ("a<div style=visibility:hidden>b</div>c" and "a<span style=visibility:hidden>b </span> c"
  // are both "ac"), where a reader sees "a", the hidden box's gap, and "c" (on another line after
  // a block). Text mode writes that ("a\nc", "a c"): so the texts are emptied, and the boxes shown.
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = texts.nextNode(); t; t = texts.nextNode()) {
    const parent = t.parentElement;
    if (parent && getComputedStyle(parent).visibility !== "visible") (t as Text).data = "";
  }
  const unseen = [...document.body.querySelectorAll<HTMLElement>("*")].filter(
    (e) => getComputedStyle(e).visibility !== "visible",
  );
  // Counted before the boxes are shown: a hidden item's marker is hidden too.
  const items = [...document.querySelectorAll("ul > li, ol > li")].filter((li) =>
    li.checkVisibility({ visibilityProperty: true }),
  ).length;
  for (const e of unseen) e.style.setProperty("visibility", "visible", "important");
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point.
  return { text: document.body.innerText, items };
}

/** Text mode's documented layout at a line's start: quotes' "> ", list markers ("*", "3.", "iv."). */
const PREFIX = /^[ \t]*(?:>|\*|[+-]?[0-9]+\.|[a-zA-Z]+\.)(?:[ \t]+|$)/;
/** Its rule for <hr>. */
const RULE = /^-{10,}$/;
const inCell = (w: string) => w.startsWith("t");
/** A table word's table ("t2") and cell ("t2c3"; "t2c0", its caption). */
const TABLE_WORD = /^(t\d+)(c\d+)w/;

/**
 * Words in order, each with its line's number; ours without the layout's prefixes and rules, and
 * the list markers among those prefixes counted.
 */
function placed(text: string, ours: boolean) {
  const words: string[] = [];
  const lines: number[] = [];
  let markers = 0;
  text.split("\n").forEach((line, i) => {
    let rest = line;
    if (ours) {
      for (let prefix = PREFIX.exec(rest); prefix; prefix = PREFIX.exec(rest)) {
        if (!prefix[0].trim().startsWith(">")) markers++;
        rest = rest.slice(prefix[0].length);
      }
      if (RULE.test(rest.trim())) rest = "";
    }
    for (const w of rest.split(/\s+/)) {
      if (!w) continue;
      words.push(w);
      lines.push(i);
    }
  });
  return { words, lines, markers };
}

/** Longest common subsequence of two word lists, as index pairs. */
function common(a: string[], b: string[]): [number, number][] {
  const m = a.length;
  const n = b.length;
  const len = Array.from({ length: m + 1 }, () => new Uint16Array(n + 1));
  for (let i = m - 1; i >= 0; i--)
    for (let j = n - 1; j >= 0; j--)
      (len[i] as Uint16Array)[j] =
        a[i] === b[j]
          ? ((len[i + 1] as Uint16Array)[j + 1] as number) + 1
          : Math.max((len[i + 1] as Uint16Array)[j] as number, (len[i] as Uint16Array)[j + 1] as number);
  const pairs: [number, number][] = [];
  for (let i = 0, j = 0; i < m && j < n; ) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (((len[i + 1] as Uint16Array)[j] as number) >= ((len[i] as Uint16Array)[j + 1] as number)) i++;
    else j++;
  }
  return pairs;
}

export type Difference =
  | "lost word"
  | "extra word"
  | "glued words"
  | "split word"
  | "changed words"
  | "order"
  | "cell words differ"
  | "cell order"
  | "table split"
  | "caption not first"
  | "list markers"
  | "line break lost"
  | "line break added";

/**
 * How text mode's text differs from the browser's, one entry per kind found:
 * - words (whitespace-split, outside tables) must be the same sequence. Each run where they differ
 *   is a word lost (only the browser's), an extra word (only ours), glued words (the same
 *   characters in fewer words), a split word (in more), or changed words (anything else, e.g. a
 *   hidden word glued onto a shown one); the same words in another order are "order".
 * - a table stands in that sequence as one anchor ("table t2"), where its first word stands; its
 *   words ("t…") must be each cell's (and caption's) words in the same order ("cell order" if only
 *   their order differs). Their lines are the grid's (cells side by side, each wrapped at 60
 *   columns), text mode's documented layout, so a word's line within a table is not compared.
 *   In ours a table's words must be contiguous ("table split": a word from outside it, e.g. a
 *   cell moved out, stands between its first and last), and its caption's words ("c0") come
 *   before every other cell's ("caption not first"). The order of cells among themselves is not
 *   compared: a grid may set a cell's words lower than a later cell's (a taller cell beside it).
 * - lines, for two words next to each other in both texts (outside tables): on one browser line,
 *   they must be on one of ours ("line break added"); on two, on two ("line break lost", the
 *   "Price$5"-on-one-line kind). Blank lines and indentation do not count (how many blank lines
 *   a browser shows is its margins' doing, which innerText writes only roughly); nor do list
 *   markers, quotes' "> " or the rule of an <hr> (removed above). A quote's "> " lines are not
 *   counted either.
 * - list markers: with `items` (the browser's visible items in a list), ours must write as many
 *   ("list markers": a marker for a hidden item, or a lost one).
 */
export function differences(browser: string, ours: string, items?: number): Difference[] {
  const b = placed(browser, false);
  const o = placed(ours, true);
  const found = new Set<Difference>();
  if (items !== undefined && items !== o.markers) found.add("list markers");
  const cells = (p: { words: string[] }) => {
    const byCell = new Map<string, string[]>();
    for (const w of p.words) {
      const m = TABLE_WORD.exec(w);
      const key = m ? `${m[1]}${m[2]}` : inCell(w) ? w : undefined;
      if (key !== undefined) byCell.set(key, [...(byCell.get(key) ?? []), w]);
    }
    return byCell;
  };
  const bc = cells(b);
  const oc = cells(o);
  for (const key of new Set([...bc.keys(), ...oc.keys()])) {
    const bs = bc.get(key) ?? [];
    const os = oc.get(key) ?? [];
    if (bs.join(" ") === os.join(" ")) continue;
    found.add([...bs].sort().join(" ") === [...os].sort().join(" ") ? "cell order" : "cell words differ");
  }
  // Each table's words in ours: one run, caption first.
  const tableOf = (w: string) => (inCell(w) ? (TABLE_WORD.exec(w)?.[1] ?? w) : undefined);
  const span = new Map<string, { first: number; last: number; lastCaption: number; firstCell: number }>();
  o.words.forEach((w, i) => {
    const table = tableOf(w);
    if (table === undefined) return;
    const s = span.get(table) ?? { first: i, last: i, lastCaption: -1, firstCell: Infinity };
    s.last = i;
    if (TABLE_WORD.exec(w)?.[2] === "c0") s.lastCaption = i;
    else s.firstCell = Math.min(s.firstCell, i);
    span.set(table, s);
  });
  for (const [table, s] of span) {
    if (o.words.slice(s.first, s.last + 1).some((w) => tableOf(w) !== table)) found.add("table split");
    if (s.lastCaption > s.firstCell) found.add("caption not first");
  }
  // Words outside tables, and each table as one anchor where its first word stands.
  const outside = (p: { words: string[]; lines: number[] }) => {
    const words: string[] = [];
    const lines: number[] = [];
    const seen = new Set<string>();
    p.words.forEach((w, i) => {
      let word = w;
      if (inCell(w)) {
        const table = TABLE_WORD.exec(w)?.[1] ?? w;
        if (seen.has(table)) return;
        seen.add(table);
        word = `table ${table}`;
      }
      words.push(word);
      lines.push(p.lines[i] as number);
    });
    return { words, lines };
  };
  const bw = outside(b);
  const ow = outside(o);
  if (
    [...bw.words].sort().join(" ") === [...ow.words].sort().join(" ") &&
    bw.words.join(" ") !== ow.words.join(" ")
  )
    found.add("order");
  const pairs = common(bw.words, ow.words);
  // The runs between matched words.
  let [pi, pj] = [-1, -1];
  for (const [i, j] of [...pairs, [bw.words.length, ow.words.length] as [number, number]]) {
    const lost = bw.words.slice(pi + 1, i);
    const extra = ow.words.slice(pj + 1, j);
    if (!found.has("order") && (lost.length > 0 || extra.length > 0)) {
      if (extra.length === 0) found.add("lost word");
      else if (lost.length === 0) found.add("extra word");
      else if (lost.join("") === extra.join(""))
        found.add(lost.length > extra.length ? "glued words" : "split word");
      else found.add("changed words");
    }
    [pi, pj] = [i, j];
  }
  for (let k = 0; k + 1 < pairs.length; k++) {
    const [i, j] = pairs[k] as [number, number];
    const [i2, j2] = pairs[k + 1] as [number, number];
    if (i2 !== i + 1 || j2 !== j + 1) continue;
    const oneBrowserLine = bw.lines[i] === bw.lines[i2];
    const oneLineOfOurs = ow.lines[j] === ow.lines[j2];
    if (oneBrowserLine && !oneLineOfOurs) found.add("line break added");
    if (!oneBrowserLine && oneLineOfOurs) found.add("line break lost");
  }
  return [...found];
}
