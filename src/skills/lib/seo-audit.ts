import { Parser } from "htmlparser2";
import { extractKeywords } from "../keyword-extract";
import { wordsOf } from "./text-stats";

/** On-page SEO audit of one HTML document: pure logic, no network. Weights in docs/ANALYTIC_SKILLS.md. */

export const WEIGHTS = {
  title: 10,
  meta_description: 10,
  h1: 8,
  heading_order: 4,
  canonical: 5,
  robots: 8,
  lang: 4,
  viewport: 3,
  open_graph: 6,
  twitter_card: 3,
  image_alt: 8,
  structured_data: 5,
  word_count: 10,
  links: 6,
  keywords: 10,
} as const;
type Check = keyof typeof WEIGHTS;

const TITLE = [30, 60] as const;
const DESCRIPTION = [70, 160] as const;
const MIN_WORDS = 300;
const DENSITY = [0.5, 3] as const;
const MAX_KEYWORDS = 20;
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

interface Scan {
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

function scan(html: string): Scan {
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

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
function occurrences(phrase: string, text: string) {
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRe(phrase)}(?![\\p{L}\\p{N}])`, "giu");
  return text.match(re)?.length ?? 0;
}
const short = (s: string, n = 60) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export interface KeywordReport {
  keyword: string;
  in_title: boolean;
  in_h1: boolean;
  in_description: boolean;
  body_count: number;
  density_percent: number;
}

export function audit(html: string, pageUrl: string, given: string[] | null) {
  const s = scan(html);
  const base = new URL(pageUrl);
  const points = {} as Record<Check, number>;
  const recs: string[] = [];
  const words = wordsOf(s.text).length;

  // Title
  const titleLen = s.title ? [...s.title].length : 0;
  if (!s.title) {
    points.title = 0;
    recs.push(`Add a <title> of ${TITLE[0]}-${TITLE[1]} characters that names the page's topic.`);
  } else if (titleLen > TITLE[1]) {
    points.title = 6;
    recs.push(
      `Shorten the title to ${TITLE[1]} characters or fewer (it has ${titleLen}); search results cut it.`,
    );
  } else if (titleLen < TITLE[0]) {
    points.title = 6;
    recs.push(
      `Lengthen the title to at least ${TITLE[0]} characters (it has ${titleLen}): "${short(s.title)}".`,
    );
  } else points.title = 10;

  // Meta description
  const descLen = s.description ? [...s.description].length : 0;
  if (!s.description) {
    points.meta_description = 0;
    recs.push(
      `Add a meta description of ${DESCRIPTION[0]}-${DESCRIPTION[1]} characters summarising the page.`,
    );
  } else if (descLen > DESCRIPTION[1] || descLen < DESCRIPTION[0]) {
    points.meta_description = 6;
    recs.push(
      `${descLen > DESCRIPTION[1] ? "Shorten" : "Lengthen"} the meta description to ${DESCRIPTION[0]}-${DESCRIPTION[1]} characters (it has ${descLen}).`,
    );
  } else points.meta_description = 10;

  // Headings
  const h1s = s.headings.filter((h) => h.level === 1);
  if (h1s.length === 1 && h1s[0]?.text) points.h1 = 8;
  else if (h1s.length === 0) {
    points.h1 = 0;
    recs.push("Add one <h1> that states the page's main topic.");
  } else if (h1s.length > 1) {
    points.h1 = 4;
    recs.push(
      `Use exactly one <h1> (found ${h1s.length}: ${h1s.map((h) => `"${short(h.text, 30)}"`).join(", ")}); make the others <h2>.`,
    );
  } else {
    points.h1 = 4;
    recs.push("Give the <h1> visible text.");
  }
  const orderProblems: string[] = [];
  s.headings.forEach((h, i) => {
    const prev = s.headings[i - 1];
    if (i === 0 && h.level !== 1)
      orderProblems.push(`the first heading is <h${h.level}> "${short(h.text, 30)}", not <h1>`);
    if (prev && h.level > prev.level + 1)
      orderProblems.push(`<h${h.level}> "${short(h.text, 30)}" follows <h${prev.level}> (skips a level)`);
  });
  points.heading_order = s.headings.length > 0 && orderProblems.length === 0 ? 4 : 0;
  if (orderProblems.length > 0) recs.push(`Fix the heading order: ${orderProblems.slice(0, 3).join("; ")}.`);

  // Canonical
  let canonical: string | null = null;
  if (s.canonical) {
    try {
      const c = new URL(s.canonical, base);
      if (c.protocol === "http:" || c.protocol === "https:") canonical = c.href;
    } catch {}
  }
  points.canonical = canonical ? 5 : 0;
  if (!canonical)
    recs.push(
      s.canonical
        ? `Fix the canonical link: "${short(s.canonical)}" is not a valid http(s) URL.`
        : `Add <link rel="canonical" href="${base.origin}${base.pathname}"> to name the preferred URL.`,
    );

  // Robots
  const robots = s.robots ?? "";
  const noindex = /\b(noindex|none)\b/.test(robots);
  const nofollow = /\b(nofollow|none)\b/.test(robots);
  points.robots = noindex ? 0 : nofollow ? 5 : 8;
  if (noindex)
    recs.push(
      `Remove "noindex" from the robots meta tag ("${robots}") if this page should appear in search results.`,
    );
  else if (nofollow)
    recs.push(`Remove "nofollow" from the robots meta tag so search engines follow this page's links.`);

  // Language, viewport
  points.lang = s.lang ? 4 : 0;
  if (!s.lang) recs.push('Declare the page language on the root element, e.g. <html lang="en">.');
  points.viewport = s.viewport ? 3 : 0;
  if (!s.viewport)
    recs.push(
      'Add <meta name="viewport" content="width=device-width, initial-scale=1"> for mobile rendering.',
    );

  // Social tags
  const ogWanted = ["og:title", "og:description", "og:image"];
  const ogMissing = ogWanted.filter((k) => !s.og[k]);
  points.open_graph = 2 * (ogWanted.length - ogMissing.length);
  if (ogMissing.length > 0) recs.push(`Add Open Graph tags for link previews: ${ogMissing.join(", ")}.`);
  points.twitter_card = s.twitter["twitter:card"] ? 3 : 0;
  if (!s.twitter["twitter:card"]) recs.push('Add <meta name="twitter:card" content="summary_large_image">.');

  // Images
  const noAlt = s.images.filter((i) => i.alt === null);
  const altCoverage = s.images.length === 0 ? 1 : (s.images.length - noAlt.length) / s.images.length;
  points.image_alt = Math.round(8 * altCoverage * 10) / 10;
  if (noAlt.length > 0)
    recs.push(
      `Add alt text to ${noAlt.length} of ${s.images.length} images (${noAlt
        .slice(0, 3)
        .map((i) => short(i.src || "(no src)", 40))
        .join(", ")}); use alt="" only for decorative ones.`,
    );

  // Structured data
  const types: string[] = [];
  let invalidJsonLd = 0;
  for (const block of s.jsonLd) {
    try {
      const data = JSON.parse(block) as unknown;
      const items = Array.isArray(data) ? data : [data];
      for (const item of items) {
        const graph = (item as { "@graph"?: unknown })?.["@graph"];
        for (const node of Array.isArray(graph) ? graph : [item]) {
          const t = (node as { "@type"?: unknown })?.["@type"];
          for (const x of Array.isArray(t) ? t : [t]) if (typeof x === "string") types.push(x);
        }
      }
    } catch {
      invalidJsonLd++;
    }
  }
  const validBlocks = s.jsonLd.length - invalidJsonLd;
  points.structured_data = validBlocks > 0 || s.microdata > 0 ? 5 : 0;
  if (invalidJsonLd > 0)
    recs.push(`Fix ${invalidJsonLd} JSON-LD block(s) that are not valid JSON; search engines ignore them.`);
  else if (points.structured_data === 0)
    recs.push(
      "Add schema.org structured data (JSON-LD) describing the page, e.g. Article, Product or Organization.",
    );

  // Content length
  points.word_count = Math.round(10 * Math.min(1, words / MIN_WORDS) * 10) / 10;
  if (words < MIN_WORDS)
    recs.push(`Expand the main content: ${words} words of text; aim for at least ${MIN_WORDS}.`);

  // Links
  let internal = 0;
  let external = 0;
  for (const href of s.links) {
    if (/^\s*(#|mailto:|tel:|javascript:)/i.test(href)) continue;
    try {
      const u = new URL(href, base);
      if (u.protocol !== "http:" && u.protocol !== "https:") continue;
      if (u.hostname.replace(/^www\./, "") === base.hostname.replace(/^www\./, "")) internal++;
      else external++;
    } catch {}
  }
  points.links = (internal > 0 ? 4 : 0) + (external > 0 ? 2 : 0);
  if (internal === 0)
    recs.push("Link to related pages of the same site so crawlers and readers can find them.");
  if (external === 0) recs.push("Cite at least one relevant external source with a link.");

  // Keywords
  const cleaned = (given ?? [])
    .map((k) => k.replace(/\s+/g, " ").trim().toLowerCase().slice(0, 100))
    .filter((k, i, all) => k !== "" && all.indexOf(k) === i)
    .slice(0, MAX_KEYWORDS);
  const extracted = cleaned.length === 0;
  const keywords = extracted
    ? extractKeywords(`${s.title ?? ""} ${s.text}`, 5).keywords.map((k) => k.term)
    : cleaned;
  const lower = {
    title: (s.title ?? "").toLowerCase(),
    h1: h1s
      .map((h) => h.text)
      .join(" ")
      .toLowerCase(),
    description: (s.description ?? "").toLowerCase(),
    body: s.text.toLowerCase(),
  };
  const reports: KeywordReport[] = keywords.map((keyword) => {
    const count = occurrences(keyword, lower.body);
    const span = Math.max(1, wordsOf(keyword).length);
    return {
      keyword,
      in_title: occurrences(keyword, lower.title) > 0,
      in_h1: occurrences(keyword, lower.h1) > 0,
      in_description: occurrences(keyword, lower.description) > 0,
      body_count: count,
      density_percent: words === 0 ? 0 : Math.round(((count * span) / words) * 10000) / 100,
    };
  });
  let kwPoints = 0;
  for (const r of reports) {
    const inRange = r.density_percent >= DENSITY[0] && r.density_percent <= DENSITY[1];
    kwPoints += (r.in_title ? 3 : 0) + (r.in_h1 ? 3 : 0) + (r.in_description ? 2 : 0) + (inRange ? 2 : 0);
    const missing = [
      !r.in_title && "the title",
      !r.in_h1 && "the <h1>",
      !r.in_description && "the meta description",
    ]
      .filter(Boolean)
      .join(", ");
    if (missing) recs.push(`Use the keyword "${r.keyword}" in ${missing}.`);
    if (r.body_count === 0)
      recs.push(`The keyword "${r.keyword}" does not occur in the body text; cover it.`);
    // Stuffing needs repetition: one or two mentions on a short page are not over-optimisation.
    else if (r.density_percent > DENSITY[1] && r.body_count >= 3)
      recs.push(
        `The keyword "${r.keyword}" makes up ${r.density_percent}% of the text; reduce repetition below ${DENSITY[1]}%.`,
      );
    else if (r.density_percent < DENSITY[0])
      recs.push(
        `The keyword "${r.keyword}" is ${r.density_percent}% of the text; mention it a little more (${DENSITY[0]}-${DENSITY[1]}%).`,
      );
  }
  points.keywords = reports.length === 0 ? 0 : Math.round((kwPoints / reports.length) * 10) / 10;

  const score = Math.round(Object.values(points).reduce((a, b) => a + b, 0));
  return {
    keywords,
    keywords_extracted: extracted,
    score,
    recommendations: recs,
    score_breakdown: points,
    checks: {
      title: { text: s.title, length: titleLen },
      meta_description: { text: s.description, length: descLen },
      headings: s.headings.slice(0, 30),
      h1_count: h1s.length,
      canonical,
      robots: s.robots,
      lang: s.lang,
      viewport: s.viewport,
      open_graph: s.og,
      twitter: s.twitter,
      images: {
        total: s.images.length,
        missing_alt: noAlt.length,
        alt_coverage: Math.round(altCoverage * 100) / 100,
      },
      structured_data: {
        json_ld_blocks: s.jsonLd.length,
        invalid_json_ld: invalidJsonLd,
        types,
        microdata_items: s.microdata,
      },
      word_count: words,
      links: { internal, external },
      keywords: reports,
    },
  };
}
