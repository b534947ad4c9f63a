import { Parser } from "htmlparser2";

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
const VOID = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "source",
  "track",
  "wbr",
]);

/** What the audit reads from a page, collected in one pass of the parser. */
export interface Scan {
  lang: string | null;
  title: string | null;
  description: string | null;
  robots: string | null;
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

export function scan(html: string): Scan {
  const s: Scan = {
    lang: null,
    title: null,
    description: null,
    robots: null,
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
  const stack: string[] = [];
  const body: string[] = [];
  let capture: { kind: "title" | "heading" | "jsonld"; level: number; buf: string[] } | null = null;
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (!VOID.has(name)) stack.push(name);
        body.push(" ");
        if ("itemscope" in attrs) s.microdata++;
        switch (name) {
          case "html":
            if (attrs.lang?.trim()) s.lang ??= attrs.lang.trim();
            break;
          case "title":
            if (s.title === null && !stack.includes("svg")) capture = { kind: "title", level: 0, buf: [] };
            break;
          case "meta": {
            const key = (attrs.name ?? attrs.property ?? "").trim().toLowerCase();
            const content = (attrs.content ?? "").trim();
            if (key === "description") s.description ??= content;
            else if (key === "robots") s.robots ??= content.toLowerCase();
            else if (key === "viewport") s.viewport = true;
            else if (key.startsWith("og:")) s.og[key] ??= content;
            else if (key.startsWith("twitter:")) s.twitter[key] ??= content;
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
              capture = { kind: "jsonld", level: 0, buf: [] };
            break;
          default: {
            const m = /^h([1-6])$/.exec(name);
            if (m && !capture) capture = { kind: "heading", level: Number(m[1]), buf: [] };
          }
        }
      },
      ontext(text) {
        if (capture) capture.buf.push(text);
        if (!stack.some((t) => SKIP_TEXT.has(t))) body.push(text);
      },
      onclosetag(name) {
        if (!VOID.has(name)) {
          const at = stack.lastIndexOf(name);
          if (at >= 0) stack.length = at;
        }
        body.push(" ");
        if (!capture) return;
        const text = capture.buf.join("").replace(/\s+/g, " ").trim();
        if (capture.kind === "title" && name === "title") {
          s.title = text;
          capture = null;
        } else if (capture.kind === "jsonld" && name === "script") {
          s.jsonLd.push(capture.buf.join(""));
          capture = null;
        } else if (capture.kind === "heading" && name === `h${capture.level}`) {
          s.headings.push({ level: capture.level, text });
          capture = null;
        }
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  s.text = body.join("").replace(/\s+/g, " ").trim();
  return s;
}
