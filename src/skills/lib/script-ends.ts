import { Tokenizer, type TokenizerCallbacks } from "htmlparser2";

/**
 * Where a <script> ends, as a browser ends it. htmlparser2 ends one at the first `</script` (then
 * `>` or a space); a browser's tokenizer follows the HTML standard's script data states
 * (https://html.spec.whatwg.org/multipage/parsing.html#script-data-state): after `<!--`, a nested
 * `<script>` makes the next `</script>` part of the script, and `</script/>` ends one too. So
 * `<script><!-- document.write("<script src=a.js></script>"); //--></script><p>Hi</p>` came out as
 * `"); //-->` and "Hi" from html_clean, ai_detector and seo, where a browser shows "Hi" alone.
 *
 * `scriptsEnded` rewrites a page so that htmlparser2 (every parser html_clean, ai_detector and seo
 * run is one) ends each script where a browser does: within a script's real body, each "<" that
 * htmlparser2 would read as the script's end becomes "_", and the "/" of a real end `</script/` a
 * space. Nothing else changes and no character moves: every offset, length and count the
 * converters' prepass takes of the page is the same, and a script's own text is the page's between
 * the same offsets (seo reads JSON-LD from there).
 *
 * Where a script starts is for htmlparser2's own tokenizer to say (the markup before a script reads
 * the same to it in both pages): each script body is read once by it and once by the states below,
 * so the whole is linear (no regular expression, no going back). A `<script/>` is left as
 * htmlparser2 reads it, an element whose content is markup (a browser ignores the "/" in HTML and
 * closes the element in SVG; htmlparser2's tree, which knows which, drops or shows what follows as
 * before). A script inside `noscript`, `iframe`, `noembed`, `noframes`, `svg` or `math` is read
 * with these states too, where a browser reads that content as raw text or foreign markup: there a
 * `<!--<script>` can hide what follows the container. Following those containers needs
 * htmlparser2's implied closes (`</div>` ends an open `<svg>`); counting them by name without
 * those let every later script leak, which is worse.
 */

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const DASH = 0x2d;
const SCRIPT = "script";

const isAlpha = (c: number) => (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
// The standard's tag-name whitespace (tab, LF, FF, space; its input stream has made every CR a
// LF), which are also htmlparser2's.
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;
/** Letters of "script" a tag name has matched after one more letter, or -1 once it cannot be it. */
const step = (matched: number, c: number) =>
  matched >= 0 && matched < SCRIPT.length && (c | 0x20) === SCRIPT.charCodeAt(matched) ? matched + 1 : -1;

// The standard's script data states (the ones that change the script's end), by their names.
enum S {
  Data,
  LessThan,
  EndTagOpen,
  EndTagName,
  EscapeStart,
  EscapeStartDash,
  Escaped,
  EscapedDash,
  EscapedDashDash,
  EscapedLessThan,
  EscapedEndTagOpen,
  EscapedEndTagName,
  DoubleEscapeStart,
  DoubleEscaped,
  DoubleEscapedDash,
  DoubleEscapedDashDash,
  DoubleEscapedLessThan,
  DoubleEscapeEnd,
}

/**
 * Where the script whose body starts at `from` ends: the index of the "<" of its end tag
 * (`</script` then a space, "/" or ">", case-insensitive), or the page's length when none ends it.
 */
export function scriptDataEnd(html: string, from: number): number {
  let state: S = S.Data;
  // The "<" of the end tag being read, and how much of "script" its name (or a nested start
  // tag's, for the double-escape states) has matched: the standard's temporary buffer, as a count.
  let tagAt = from;
  let matched = 0;
  for (let i = from; i < html.length; i++) {
    const c = html.charCodeAt(i);
    switch (state) {
      case S.Data:
        if (c === LT) {
          state = S.LessThan;
          tagAt = i;
        }
        break;
      case S.LessThan:
        if (c === SLASH) state = S.EndTagOpen;
        else if (c === BANG) state = S.EscapeStart;
        else {
          state = S.Data;
          i--;
        }
        break;
      case S.EscapeStart:
      case S.EscapeStartDash:
        if (c === DASH) state = state === S.EscapeStart ? S.EscapeStartDash : S.EscapedDashDash;
        else {
          state = S.Data;
          i--;
        }
        break;
      case S.EndTagOpen:
      case S.EscapedEndTagOpen:
        if (isAlpha(c)) {
          state = state === S.EndTagOpen ? S.EndTagName : S.EscapedEndTagName;
          matched = 0;
        } else state = state === S.EndTagOpen ? S.Data : S.Escaped;
        i--;
        break;
      case S.EndTagName:
      case S.EscapedEndTagName:
        if (isAlpha(c)) matched = step(matched, c);
        else if (matched === SCRIPT.length && (isSpace(c) || c === SLASH || c === GT)) return tagAt;
        else {
          state = state === S.EndTagName ? S.Data : S.Escaped;
          i--;
        }
        break;
      case S.Escaped:
      case S.EscapedDash:
      case S.EscapedDashDash:
        if (c === DASH) state = state === S.Escaped ? S.EscapedDash : S.EscapedDashDash;
        else if (c === LT) {
          state = S.EscapedLessThan;
          tagAt = i;
        } else if (c === GT && state === S.EscapedDashDash) state = S.Data;
        else state = S.Escaped;
        break;
      case S.EscapedLessThan:
        if (c === SLASH) state = S.EscapedEndTagOpen;
        else {
          state = isAlpha(c) ? S.DoubleEscapeStart : S.Escaped;
          matched = 0;
          i--;
        }
        break;
      case S.DoubleEscapeStart:
      case S.DoubleEscapeEnd: {
        const starting: boolean = state === S.DoubleEscapeStart;
        if (isSpace(c) || c === SLASH || c === GT) {
          const script = matched === SCRIPT.length;
          state = starting === script ? S.DoubleEscaped : S.Escaped;
        } else if (isAlpha(c)) matched = step(matched, c);
        else {
          state = starting ? S.Escaped : S.DoubleEscaped;
          i--;
        }
        break;
      }
      case S.DoubleEscaped:
      case S.DoubleEscapedDash:
      case S.DoubleEscapedDashDash:
        if (c === DASH) state = state === S.DoubleEscaped ? S.DoubleEscapedDash : S.DoubleEscapedDashDash;
        else if (c === LT) state = S.DoubleEscapedLessThan;
        else if (c === GT && state === S.DoubleEscapedDashDash) state = S.Data;
        else state = S.DoubleEscaped;
        break;
      case S.DoubleEscapedLessThan:
        if (c === SLASH) {
          state = S.DoubleEscapeEnd;
          matched = 0;
        } else {
          state = S.DoubleEscaped;
          i--;
        }
        break;
    }
  }
  return html.length;
}

/** Whether htmlparser2 reads `</script` at `at` as a script's end: `</script` then ">" or a space. */
function endsForHtmlparser2(html: string, at: number): boolean {
  if (html.charCodeAt(at + 1) !== SLASH) return false;
  for (let k = 0; k < SCRIPT.length; k++)
    if ((html.charCodeAt(at + 2 + k) | 0x20) !== SCRIPT.charCodeAt(k)) return false;
  const next = html.charCodeAt(at + 2 + SCRIPT.length);
  return next === GT || isSpace(next);
}

/**
 * Where the next script body htmlparser2's tokenizer opens starts (after the start tag's ">"),
 * reading the page from `from` (in the data state: where a script's end tag starts, as it is
 * there). The tokenizer stops at the body: that it may end too early.
 */
function nextScriptBody(html: string, from: number): number | undefined {
  let script = false;
  let body: number | undefined;
  const none = () => {};
  const callbacks: TokenizerCallbacks = {
    onopentagname(start, endIndex) {
      script =
        endIndex - start === SCRIPT.length &&
        html.slice(from + start, from + endIndex).toLowerCase() === SCRIPT;
    },
    onopentagend(endIndex) {
      if (!script) return;
      body = from + endIndex + 1;
      tokenizer.pause();
    },
    onselfclosingtag: none,
    onattribdata: none,
    onattribentity: none,
    onattribend: none,
    onattribname: none,
    oncdata: none,
    onclosetag: none,
    oncomment: none,
    ondeclaration: none,
    onend: none,
    onprocessinginstruction: none,
    ontext: none,
    ontextentity: none,
  };
  const tokenizer = new Tokenizer({ xmlMode: false, decodeEntities: true }, callbacks);
  tokenizer.write(from === 0 ? html : html.slice(from));
  return body;
}

/** The page with every script ending where a browser ends it, to htmlparser2 (above). */
export function scriptsEnded(html: string): string {
  // Most inputs hold no script at all: nothing to read twice.
  if (!/<script/i.test(html)) return html;
  // What changes, in order: the "<" of an end htmlparser2 would take too early becomes "_" (no
  // space: a space there could finish a "</script" just before it into an end of its own), the
  // "/" of a real `</script/` a space.
  const changes: [at: number, to: string][] = [];
  // From each script's real end, htmlparser2's tokenizer reads on as it will read the rewritten
  // page: there, its end tag is the one that ends the script.
  for (let body = nextScriptBody(html, 0); body !== undefined; ) {
    const end = scriptDataEnd(html, body);
    for (let at = html.indexOf("</", body); at >= 0 && at < end; at = html.indexOf("</", at + 2))
      if (endsForHtmlparser2(html, at)) changes.push([at, "_"]);
    if (end === html.length) break;
    if (html.charCodeAt(end + 2 + SCRIPT.length) === SLASH) changes.push([end + 2 + SCRIPT.length, " "]);
    body = nextScriptBody(html, end);
  }
  if (changes.length === 0) return html;
  let out = "";
  let last = 0;
  for (const [at, to] of changes) {
    out += html.slice(last, at) + to;
    last = at + 1;
  }
  return out + html.slice(last);
}
