import { Parser } from "htmlparser2";
import { cut } from "../../text-cut";
import { MAX_HTML_DEPTH } from "./html-depth";
import { scriptsEnded } from "./script-ends";

// seo-keywords.ts cuts the page text it counts with it too.
export { cut };

/** One streaming pass over an HTML document: the head tags, headings, images, links and body text an SEO audit checks. */

const SKIP_TEXT = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "head",
  "title",
  "iframe",
  "object",
]);

/**
 * A page nested deeper than MAX_HTML_DEPTH: scan() stops at the first element past it. htmlparser2
 * keeps its open elements in an array it `unshift`s at every open tag, so a deep page costs it
 * quadratic time (2 MiB of nested <b>: 117 s); only stopping the parse bounds that.
 */
export class PageTooDeep extends Error {
  constructor() {
    super(`the page is nested deeper than ${MAX_HTML_DEPTH} elements`);
  }
}

/**
 * Characters of a heading's text kept (whitespace collapsed): an <h1> that never closes captures
 * the rest of the page otherwise.
 */
export const MAX_HEADING_CHARS = 2000;

/**
 * Distinct og:* keys, and distinct twitter:* keys, kept: the page's first 50 of each (a page of
 * 60,000 made a 950 KB answer), and the ones the score reads wherever they stand.
 */
export const MAX_SOCIAL_KEYS = 50;
// The keys seo-audit.ts's checkSocialTags scores.
const SCORED_SOCIAL = new Set(["og:title", "og:description", "og:image", "twitter:card"]);

/** Records the first value of `key`, if it is scored or `tags` has room (MAX_SOCIAL_KEYS). */
function addSocial(tags: Record<string, string>, key: string, value: string) {
  if (key in tags) return;
  if (SCORED_SOCIAL.has(key) || Object.keys(tags).length < MAX_SOCIAL_KEYS) tags[key] = value;
}

const collapse = (parts: string[]) => parts.join("").replace(/\s+/g, " ").trim();

/** What the audit reads from a page, collected in one pass of the parser. */
export interface Scan {
  lang: string | null;
  title: string | null;
  description: string | null;
  /**
   * The content of every `<meta name="robots">`, lowercased, each distinct one once in page order:
   * crawlers combine them all (the most restrictive applies), not only the first.
   */
  robots: string[];
  viewport: boolean;
  canonical: string | null;
  og: Record<string, string>;
  twitter: Record<string, string>;
  headings: { level: number; text: string }[];
  images: { src: string; alt: string | null }[];
  jsonLd: string[];
  microdata: number;
  links: string[];
  text: string;
}

/** Reads the page; throws PageTooDeep, having stopped there, for one nested past MAX_HTML_DEPTH. */
export function scan(html: string): Scan {
  const s: Scan = {
    lang: null,
    title: null,
    description: null,
    robots: [],
    viewport: false,
    canonical: null,
    og: {},
    twitter: {},
    headings: [],
    images: [],
    jsonLd: [],
    microdata: 0,
    links: [],
    text: "",
  };
  // Open elements, and those of them whose text is not body text, or that are <svg>: counted,
  // not kept in a stack searched at every text node. htmlparser2 calls onopentagname whenever it
  // opens an element (a void one too) and onclosetag once for each, with the same name (implied
  // closes and the end of the document included), so the counts stay exact.
  let depth = 0;
  let skipping = 0;
  let inSvg = 0;
  const body: string[] = [];
  // The robots contents already in s.robots, looked up in a set: a page can hold 100,000 metas.
  const robots = new Set<string>();
  // What an open <title>, heading or JSON-LD script has read; `size` counts a heading's characters.
  let capture: {
    kind: "title" | "heading" | "jsonld";
    level: number;
    buf: string[];
    size: number;
  } | null = null;
  const parser = new Parser(
    {
      onopentagname(name) {
        // Thrown out of the parser: its own cost past here is the quadratic part.
        if (++depth > MAX_HTML_DEPTH) throw new PageTooDeep();
        if (SKIP_TEXT.has(name)) skipping++;
        if (name === "svg") inSvg++;
      },
      onopentag(name, attrs) {
        body.push(" ");
        if ("itemscope" in attrs) s.microdata++;
        switch (name) {
          case "html":
            if (attrs.lang?.trim()) s.lang ??= attrs.lang.trim();
            break;
          case "title":
            if (s.title === null && inSvg === 0) capture = { kind: "title", level: 0, buf: [], size: 0 };
            break;
          case "meta": {
            const key = (attrs.name ?? attrs.property ?? "").trim().toLowerCase();
            const content = (attrs.content ?? "").trim();
            if (key === "description") s.description ??= content;
            else if (key === "robots") {
              const value = content.toLowerCase();
              if (!robots.has(value)) {
                robots.add(value);
                s.robots.push(value);
              }
            } else if (key === "viewport") s.viewport = true;
            else if (key.startsWith("og:")) addSocial(s.og, key, content);
            else if (key.startsWith("twitter:")) addSocial(s.twitter, key, content);
            break;
          }
          case "link":
            if ((attrs.rel ?? "").toLowerCase().split(/\s+/).includes("canonical"))
              s.canonical ??= attrs.href ?? "";
            break;
          case "img":
            s.images.push({ src: attrs.src ?? "", alt: "alt" in attrs ? (attrs.alt ?? "") : null });
            break;
          case "a":
            if (attrs.href !== undefined) s.links.push(attrs.href);
            break;
          case "script":
            if ((attrs.type ?? "").toLowerCase().trim() === "application/ld+json")
              capture = { kind: "jsonld", level: 0, buf: [], size: 0 };
            break;
          default: {
            const m = /^h([1-6])$/.exec(name);
            if (m && !capture) capture = { kind: "heading", level: Number(m[1]), buf: [], size: 0 };
          }
        }
      },
      ontext(text) {
        if (capture?.kind === "heading") {
          // Collapsed as it comes, so the bound counts characters of the text it keeps.
          if (capture.size <= MAX_HEADING_CHARS) {
            const t = text.replace(/\s+/g, " ");
            capture.buf.push(t);
            capture.size += t.length;
          }
        } else if (capture?.kind === "jsonld") {
          // The page's own characters (a script's text is never decoded): the parser reads a
          // page whose false script ends are blanked out (scriptsEnded), at the same offsets.
          capture.buf.push(html.slice(parser.endIndex + 1 - text.length, parser.endIndex + 1));
        } else if (capture) capture.buf.push(text);
        if (skipping === 0) body.push(text);
      },
      onclosetag(name) {
        depth--;
        if (SKIP_TEXT.has(name)) skipping--;
        if (name === "svg") inSvg--;
        body.push(" ");
        // The text is built only by the tag that ends the capture: built at every close tag, an
        // open <h1> before 1 MiB of <i>a</i> took 49 s.
        if (!capture) return;
        if (capture.kind === "title" && name === "title") {
          s.title = collapse(capture.buf);
          capture = null;
        } else if (capture.kind === "jsonld" && name === "script") {
          s.jsonLd.push(capture.buf.join(""));
          capture = null;
        } else if (capture.kind === "heading" && name === `h${capture.level}`) {
          s.headings.push({
            level: capture.level,
            text: cut(collapse(capture.buf), MAX_HEADING_CHARS).trimEnd(),
          });
          capture = null;
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  // Scripts end where a browser ends them: htmlparser2 alone let the rest of
  // `<script><!--<script></script> … </script>` out as body text, links and headings.
  parser.end(scriptsEnded(html));
  s.text = body.join("").replace(/\s+/g, " ").trim();
  return s;
}
