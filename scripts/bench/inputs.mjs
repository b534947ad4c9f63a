// Deterministic benchmark inputs: ~1 KB bodies and the largest bodies the limits allow.
let seed = 42;
const rnd = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
// A few thousand distinct pseudo-words, so tokenizer merge caches do not flatter the figures.
const SYLLABLES = "ka lo mi ne ru ta vo shi pre tra con ex ing ment al ion er ly st or".split(" ");
const WORDS = Array.from({ length: 4000 }, () => {
  const n = 1 + Math.floor(rnd() * 4);
  return Array.from({ length: n }, () => SYLLABLES[Math.floor(rnd() * SYLLABLES.length)]).join("");
});
export function prose(chars) {
  let s = "";
  while (s.length < chars) {
    const n = 6 + Math.floor(rnd() * 14);
    const words = Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]);
    s += `${words.join(" ")}. `;
    if (rnd() < 0.2) s += "\n";
  }
  return s.slice(0, chars);
}
function randomLetters(chars) {
  let s = "";
  while (s.length < chars) s += String.fromCharCode(97 + Math.floor(rnd() * 26)) + (rnd() < 0.15 ? " " : "");
  return s.slice(0, chars);
}
function editPercent(text, percent) {
  const chars = [...text];
  const edits = Math.floor((chars.length * percent) / 100);
  for (let i = 0; i < edits; i++)
    chars[Math.floor(rnd() * chars.length)] = String.fromCharCode(65 + Math.floor(rnd() * 26));
  return chars.join("");
}
function nested(targetChars) {
  const root = {};
  let size = 2;
  let i = 0;
  while (size < targetChars) {
    const key = `k${i % 97}_${i}`;
    root[key] = {
      name: `item ${i}`,
      tags: ["a", "b", i],
      meta: { depth: { level: i % 5, ok: i % 2 === 0 } },
    };
    size += JSON.stringify(root[key]).length + key.length + 4;
    i++;
  }
  return root;
}
function html(chars) {
  let s = "";
  let i = 0;
  while (s.length < chars) {
    s += `<div class="c"><h2>Section ${i}</h2><p>Some <b>bold</b> &amp; <a href="/x/${i}">link</a> ${prose(80)}</p><ul><li>one</li><li>two ${i}</li></ul><script>var x=${i};</script><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></div>\n`;
    i++;
  }
  return s.slice(0, chars);
}
const schema = {
  type: "array",
  items: {
    type: "object",
    required: ["id", "name"],
    properties: {
      id: { type: "integer", minimum: 0 },
      name: { type: "string", maxLength: 50 },
      tags: { type: "array", items: { type: "string" } },
    },
  },
};
// Lines that share nothing, as many as fit under text_diff's per-block cap: the costliest input
// for the line and sentence levels (worst-case bisection on both, then word level refused).
function distinctLines(n, tag) {
  return Array.from({ length: n }, (_, i) => `${tag} ${i} ${prose(90).replaceAll("\n", " ")}\n`).join("");
}
// Keys sharing a long prefix, in a scrambled order: a comparator that walks the shared prefix unit
// by unit in JavaScript cost ~0.5 s for 2,400 keys of 2,000 characters (stop 36).
function prefixedKeys(n, prefix) {
  const data = {};
  for (let i = 0; i < n; i++) data[`${prefix}${(i * 7919) % n}`] = i;
  return data;
}
const items = (n) => Array.from({ length: n }, (_, i) => ({ id: i, name: `item ${i}`, tags: ["x", "y"] }));

/** [slug, label, body] rows. */
export function benchInputs() {
  const p200k = prose(200_000);
  // One text and its edit: two separate prose() calls would be unrelated texts, which the row
  // after this one measures on purpose. Drawn in the order the rows used to draw them (text,
  // text, edit), so every row after these gets the same input as before they were split.
  const p500 = prose(500);
  const other500 = prose(500);
  return [
    ["json-flatten", "1 KB", { data: nested(1000) }],
    ["json-flatten", "400 KB JSON", { data: nested(400_000) }],
    ["json-flatten", "4.5 MB JSON (body cap 5 MiB)", { data: nested(4_500_000) }],
    ["json-sort", "1 KB", { data: nested(1000) }],
    ["json-sort", "400 KB JSON", { data: nested(400_000) }],
    ["json-sort", "4.5 MB JSON (body cap 5 MiB)", { data: nested(4_500_000) }],
    [
      "json-sort",
      "2,400 keys sharing 2,000 characters (adversarial)",
      { data: prefixedKeys(2400, "a".repeat(2000)) },
    ],
    [
      "json-sort",
      "2,400 keys: an emoji, then 2,000 shared characters (adversarial)",
      { data: prefixedKeys(2400, `\u{1F600}${"a".repeat(2000)}`) },
    ],
    [
      "json-sort",
      "1,300 keys sharing 1,000 emoji (adversarial)",
      { data: prefixedKeys(1300, "\u{1F600}".repeat(1000)) },
    ],
    // Without a high surrogate in any key U+FFFF needs no sort key (~2x the old cost when it had one).
    [
      "json-sort",
      "2,400 keys sharing 690 U+FFFF (adversarial)",
      { data: prefixedKeys(2400, "\uffff".repeat(690)) },
    ],
    [
      "json-sort",
      "2,400 keys sharing 410 emoji-letter pairs (adversarial)",
      { data: prefixedKeys(2400, "\u{1F600}a".repeat(410)) },
    ],
    // One U+E000 key makes the set need sort keys: a run marked around every emoji.
    [
      "json-sort",
      "2,400 keys sharing 410 emoji-letter pairs, one U+E000 key (adversarial)",
      { data: { ...prefixedKeys(2400, "\u{1F600}a".repeat(410)), "\ue000": 0 } },
    ],
    // Short keys that all change are compared in place (sort keys cost ~3x there)...
    [
      "json-sort",
      "270,000 emoji keys and one U+FF01 key (adversarial)",
      { data: { ...prefixedKeys(270_000, "\u{1F600}"), "\uff01": 0 } },
    ],
    // ...long ones through sort keys, even when a key of each kind forces code-point order.
    [
      "json-sort",
      "2,400 keys sharing 2,000 characters plus one U+E000 key and one emoji key (adversarial)",
      { data: { ...prefixedKeys(2400, "a".repeat(2000)), "\ue000": 0, "\u{1F600}": 0 } },
    ],
    [
      "json-sort",
      "290,000 short keys and one emoji key (adversarial)",
      { data: { ...prefixedKeys(290_000, "k"), "\u{1F600}": 0 } },
    ],
    ["text-diff", "1 KB", { a: p500, b: editPercent(p500, 3) }],
    ["text-diff", "1 KB, unrelated texts", { a: p500, b: other500 }],
    ["text-diff", "2×200k, 1% edits", { a: p200k, b: editPercent(p200k, 1) }],
    ["text-diff", "2×200k, unrelated", { a: randomLetters(200_000), b: randomLetters(200_000) }],
    [
      "text-diff",
      "2×200k, unrelated prose, word",
      { a: prose(200_000), b: prose(200_000), options: { mode: "word" } },
    ],
    [
      "text-diff",
      "2×~200k, 1,990 distinct lines (adversarial)",
      { a: distinctLines(1990, "a"), b: distinctLines(1990, "b") },
    ],
    ["url-normalize", "1 KB", { url: `https://Example.com/a/../b?utm_source=x&${"q=1&".repeat(200)}z=2#f` }],
    [
      "url-normalize",
      "8000 chars",
      { url: `https://Example.com/a/../b?utm_source=x&${"q=1&".repeat(1985)}z=2#f` },
    ],
    ["html-clean", "1 KB text", { html: html(1000) }],
    ["html-clean", "400k text", { html: html(400_000) }],
    ["html-clean", "400k markdown", { html: html(400_000), mode: "markdown" }],
    // The markdown safety pass once asked every code element for its ancestors: 511 levels deep,
    // 400 KB of code cost over a second (a review's CPU-trap page).
    [
      "html-clean",
      "400k markdown, code 511 deep (adversarial)",
      { html: `${"<div>".repeat(510)}<a href=x>${"<code>&lt;</code>".repeat(23_000)}`, mode: "markdown" },
    ],
    [
      "html-clean",
      "400k markdown, tables with <br> and escaped tags (no last check)",
      {
        html: "<table><tr><th>a</th></tr><tr><td>x<br>y &lt;b&gt;</td></tr></table>\n".repeat(5_700),
        mode: "markdown",
      },
    ],
    [
      "html-clean",
      // Removing them one by one searched their parent's children each time: 1.6 s.
      "400k markdown, 57,000 comments in one element (adversarial)",
      { html: `<div>${"<!---->".repeat(57_000)}</div>`, mode: "markdown" },
    ],
    [
      "html-clean",
      // Code holding a tag: a "<" that could open one, so markdown-it reads the whole answer.
      "400k markdown, tables and code holding a tag (last check runs)",
      {
        html: "<table><tr><th>a</th></tr><tr><td>x<br>y</td></tr></table><pre>&lt;a&gt;</pre>\n".repeat(
          4_900,
        ),
        mode: "markdown",
      },
    ],
    // Quotes 500 deep around 48,000 paragraphs: ~1,000 characters of "> " a line, refused as too
    // large after 18 s; past 32 levels text mode writes plain blocks now.
    [
      "html-clean",
      "400k text, quotes 500 deep (adversarial)",
      { html: `${"<blockquote>".repeat(500)}${"<p>x</p>".repeat(48_000)}`.slice(0, 400_000) },
    ],
    // mdream's filter is quadratic in one element's attributes (925 ms); the first 256 are kept.
    [
      "html-clean",
      "349k markdown, 40,000 attributes on one element (adversarial)",
      {
        html: `<div ${Array.from({ length: 40_000 }, (_, i) => `a${i}=x`).join(" ")}>y</div>`,
        mode: "markdown",
      },
    ],
    // The bench page with its lists ordered: a second item ("2.") made the continuation pass read
    // every answer with markdown-it (now only a page that numbers a list itself is read).
    [
      "html-clean",
      "400k markdown, ordered lists",
      { html: html(400_000).replaceAll("ul>", "ol>"), mode: "markdown" },
    ],
    // A list that numbers itself (<ol start>) reaches the markdown-it pass (a smaller page: the
    // attribute makes it longer, and the body cap is 400k).
    [
      "html-clean",
      "397k markdown, ordered lists starting at 3",
      {
        html: html(385_000).replaceAll("<ul>", '<ol start="3">').replaceAll("</ul>", "</ol>"),
        mode: "markdown",
      },
    ],
    // Whitespace and <br>s moving out of inline elements: a trailing-space regex was quadratic
    // (9.4 s), and a nest 500 deep moved each run node by node at every level (11.6 s).
    [
      "html-clean",
      "80k markdown, 80,000 spaces inside a <span> (adversarial)",
      { html: `<p><span>a${" ".repeat(80_000)}b</span></p>`, mode: "markdown" },
    ],
    [
      "html-clean",
      "382k markdown, 500 nested spans each ending in 150 <br> (adversarial)",
      {
        html: `<p>${"<span>x".repeat(500)}${`${" <br>".repeat(150)}</span>`.repeat(500)}</p>`,
        mode: "markdown",
      },
    ],
    // The same nest with nothing in it but line breaks (unclosed spans, each opening a level).
    [
      "html-clean",
      "378k markdown, 500 nested spans each holding 150 ' <br>' (adversarial)",
      { html: `<span>${" <br>".repeat(150)}`.repeat(500), mode: "markdown" },
    ],
    [
      "html-clean",
      "383k markdown, 500 nested spans each holding 190 <br> (adversarial)",
      { html: `<span>${"<br>".repeat(190)}`.repeat(500), mode: "markdown" },
    ],
    [
      "html-clean",
      "393k markdown, 500 nested spans, then 390,000 spaces (adversarial)",
      { html: `<p>${"<span>".repeat(500)}x${" ".repeat(390_000)}</p>`, mode: "markdown" },
    ],
    // A run of backslashes before a link's mark: the regex that took the mark out was quadratic (7.6 s).
    [
      "html-clean",
      "40k markdown, 40,000 backslashes before a link (adversarial)",
      { html: `<p>${"\\".repeat(40_000)}x<a href=/u>l</a></p>`, mode: "markdown" },
    ],
    // Past the grid bounds (docs/LIMITS.md): written as blocks; the grid took 14 s.
    ["html-clean", "79k table cells, text", { html: `<table><tr>${"<td>c".repeat(79_000)}</tr></table>` }],
    ["json-schema-validate", "1 KB", { instance: items(20), schema }],
    ["json-schema-validate", "1,000 items", { instance: items(1000), schema }],
    ["json-schema-validate", "100,000 items (4.5 MB)", { instance: items(100_000), schema }],
    ["keyword-extract", "1 KB", { text: prose(1000) }],
    ["keyword-extract", "200k", { text: prose(200_000), limit: 50 }],
    // ~200,000 words of ~20,000 distinct: each was folded as it was met (~0.4 s in node, stop 36).
    [
      "keyword-extract",
      "200k CJK, 20,000 distinct characters (adversarial)",
      {
        text: Array.from({ length: 200_000 }, (_, i) =>
          String.fromCharCode(0x4e00 + ((i * 7919) % 20_000)),
        ).join(""),
      },
    ],
    [
      "keyword-extract",
      "200k Japanese",
      { text: "日本語の文章を分析しますカタカナとひらがな".repeat(10_000).slice(0, 200_000) },
    ],
    ["token-count", "1 KB cl100k", { text: prose(1000) }],
    ["token-count", "400k cl100k", { text: prose(400_000) }],
    ["token-count", "400k o200k", { text: prose(400_000), encoding: "o200k" }],
    // One BPE piece (no word boundary): gpt-tokenizer's own merge loop took 43 s and 270 s here.
    ["token-count", "400k, one piece ('a' × 400k)", { text: "a".repeat(400_000) }],
    ["token-count", "400k, one piece (CJK)", { text: "漢字".repeat(200_000) }],
    ["sha256", "1 KB", { text: prose(1000) }],
    ["sha256", "400k", { text: prose(400_000) }],
    ["uuid-mint", "1 id", { count: 1 }],
    ["uuid-mint", "32 ids v1", { count: 32, version: 1 }],
    ["slugify", "1 KB", { text: prose(1000), max_len: 200 }],
    ["slugify", "4000 chars", { text: prose(4000), max_len: 200 }],
  ];
}
