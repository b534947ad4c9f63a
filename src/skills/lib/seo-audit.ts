import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, scanJson } from "../../http/json-text";
import { codePointLength, shorten } from "../../text-cut";
import { checkKeywords, countBody, type KeywordsOf } from "./seo-keywords";
import { type Scan, scan } from "./seo-scan";
import type { WEIGHTS } from "./seo-weights";

// seo.ts turns a page too deep to read into a 422 on url; it loads this module only when it runs.
export { MAX_HTML_DEPTH } from "./html-depth";
export { PageTooDeep } from "./seo-scan";

/**
 * On-page SEO audit of one HTML document: pure logic, no network. Weights in docs/ANALYTIC_SKILLS.md.
 * One parse (seo-scan.ts), then one named check per line of the score breakdown; each sets its
 * points and adds its advice, so `recommendations` follow the order of the checks.
 */

type Check = keyof typeof WEIGHTS;

const TITLE = [30, 60] as const;
const DESCRIPTION = [70, 160] as const;
const MIN_WORDS = 300;

// Cut off a surrogate pair: a heading or URL of emoji left half of one in the advice.
const short = (s: string, n = 60) => shorten(s, n);

/** What the checks write: points per check and advice, in the order the checks run. */
interface Findings {
  points: Record<Check, number>;
  recs: string[];
}

function checkTitle(s: Scan, f: Findings) {
  const length = s.title ? codePointLength(s.title) : 0;
  if (!s.title) {
    f.points.title = 0;
    f.recs.push(`Add a <title> of ${TITLE[0]}-${TITLE[1]} characters that names the page's topic.`);
  } else if (length > TITLE[1]) {
    f.points.title = 6;
    f.recs.push(
      `Shorten the title to ${TITLE[1]} characters or fewer (it has ${length}); search results cut it.`,
    );
  } else if (length < TITLE[0]) {
    f.points.title = 6;
    f.recs.push(
      `Lengthen the title to at least ${TITLE[0]} characters (it has ${length}): "${short(s.title)}".`,
    );
  } else f.points.title = 10;
  return { text: s.title, length };
}

function checkDescription(s: Scan, f: Findings) {
  const length = s.description ? codePointLength(s.description) : 0;
  if (!s.description) {
    f.points.meta_description = 0;
    f.recs.push(
      `Add a meta description of ${DESCRIPTION[0]}-${DESCRIPTION[1]} characters summarising the page.`,
    );
  } else if (length > DESCRIPTION[1] || length < DESCRIPTION[0]) {
    f.points.meta_description = 6;
    f.recs.push(
      `${length > DESCRIPTION[1] ? "Shorten" : "Lengthen"} the meta description to ${DESCRIPTION[0]}-${DESCRIPTION[1]} characters (it has ${length}).`,
    );
  } else f.points.meta_description = 10;
  return { text: s.description, length };
}

function checkH1(s: Scan, f: Findings) {
  const h1s = s.headings.filter((h) => h.level === 1);
  if (h1s.length === 1 && h1s[0]?.text) f.points.h1 = 8;
  else if (h1s.length === 0) {
    f.points.h1 = 0;
    f.recs.push("Add one <h1> that states the page's main topic.");
  } else if (h1s.length > 1) {
    f.points.h1 = 4;
    // Three named, as the image and heading-order advice name three: a page of 160,000 <h1>s
    // made this one line 1.5 million characters.
    const named = h1s.slice(0, 3).map((h) => `"${short(h.text, 30)}"`);
    if (h1s.length > 3) named.push(`${h1s.length - 3} more`);
    f.recs.push(`Use exactly one <h1> (found ${h1s.length}: ${named.join(", ")}); make the others <h2>.`);
  } else {
    f.points.h1 = 4;
    f.recs.push("Give the <h1> visible text.");
  }
  return h1s;
}

function checkHeadingOrder(s: Scan, f: Findings) {
  const problems: string[] = [];
  s.headings.forEach((h, i) => {
    const prev = s.headings[i - 1];
    if (i === 0 && h.level !== 1)
      problems.push(`the first heading is <h${h.level}> "${short(h.text, 30)}", not <h1>`);
    if (prev && h.level > prev.level + 1)
      problems.push(`<h${h.level}> "${short(h.text, 30)}" follows <h${prev.level}> (skips a level)`);
  });
  f.points.heading_order = s.headings.length > 0 && problems.length === 0 ? 4 : 0;
  if (problems.length > 0) f.recs.push(`Fix the heading order: ${problems.slice(0, 3).join("; ")}.`);
}

/** The canonical URL resolved against the page, or null when missing or not http(s). */
function checkCanonical(s: Scan, base: URL, f: Findings) {
  let canonical: string | null = null;
  if (s.canonical) {
    try {
      const c = new URL(s.canonical, base);
      if (c.protocol === "http:" || c.protocol === "https:") canonical = c.href;
    } catch {}
  }
  f.points.canonical = canonical ? 5 : 0;
  if (!canonical)
    f.recs.push(
      s.canonical
        ? `Fix the canonical link: "${short(s.canonical)}" is not a valid http(s) URL.`
        : `Add <link rel="canonical" href="${base.origin}${base.pathname}"> to name the preferred URL.`,
    );
  return canonical;
}

/**
 * The robots meta tag's directives, lowercased: its comma-separated items, each whole. An item
 * with a ":" is a directive with a value (`max-image-preview:none`, `unavailable_after: …`), whose
 * value is no directive; a word test read that "none" as noindex. Words of an item without one are
 * taken apart (`noindex nofollow`, a common slip crawlers read as both).
 */
function robotsDirectives(content: string): Set<string> {
  const directives = new Set<string>();
  for (const item of content.toLowerCase().split(",")) {
    const colon = item.indexOf(":");
    if (colon >= 0) directives.add(item.slice(0, colon).trim());
    else for (const word of item.trim().split(/\s+/)) directives.add(word);
  }
  return directives;
}

/**
 * Directives with a value, whose name before the ":" is no crawler's: any other `name:` in an
 * X-Robots-Tag names the user agent the rules after it are for (`googlebot: noindex`).
 */
const VALUED_DIRECTIVES = new Set([
  "max-snippet",
  "max-image-preview",
  "max-video-preview",
  "unavailable_after",
]);

/**
 * The items of an X-Robots-Tag value (repeated headers arrive joined with ", ") that every
 * crawler is given: those before any user agent, and those after `robots:`. Rules after another
 * agent's name (`googlebot: noindex, nofollow`) are that crawler's until the next name, and are
 * left out as a `<meta name="googlebot">` is: the audit scores what applies to all search engines.
 */
function robotsHeaderForAll(value: string): string {
  const kept: string[] = [];
  let forAll = true;
  for (const raw of value.toLowerCase().split(",")) {
    let item = raw.trim();
    const named = /^([a-z0-9_.-]+)\s*:\s*(.*)$/.exec(item);
    if (named?.[1] !== undefined && !VALUED_DIRECTIVES.has(named[1])) {
      forAll = named[1] === "robots";
      item = named[2] ?? "";
    }
    if (forAll && item !== "") kept.push(item);
  }
  return kept.join(", ");
}

/** Cut for the advice and checks: a page can hold any number of robots metas. */
const MAX_ROBOTS_CHARS = 500;

/**
 * noindex/nofollow from the page's robots metas (all of them) and its X-Robots-Tag header
 * together: crawlers combine every source, and the most restrictive applies.
 */
function checkRobots(s: Scan, header: string | null, f: Findings) {
  const sources = [
    { where: "the robots meta tag", text: s.robots.join(", "), rules: s.robots.join(", ") },
    { where: "the X-Robots-Tag header", text: header ?? "", rules: robotsHeaderForAll(header ?? "") },
  ].map((src) => {
    const d = robotsDirectives(src.rules);
    return {
      ...src,
      noindex: d.has("noindex") || d.has("none"),
      nofollow: d.has("nofollow") || d.has("none"),
    };
  });
  const noindex = sources.filter((src) => src.noindex);
  const nofollow = sources.filter((src) => src.nofollow);
  f.points.robots = noindex.length > 0 ? 0 : nofollow.length > 0 ? 5 : 8;
  if (noindex.length > 0)
    for (const src of noindex)
      f.recs.push(
        `Remove "noindex" from ${src.where} ("${short(src.text, MAX_ROBOTS_CHARS)}") if this page should appear in search results.`,
      );
  else
    for (const src of nofollow)
      f.recs.push(`Remove "nofollow" from ${src.where} so search engines follow this page's links.`);
  return {
    robots: s.robots.length > 0 ? short(s.robots.join(", "), MAX_ROBOTS_CHARS) : null,
    x_robots_tag: header === null ? null : short(header, MAX_ROBOTS_CHARS),
  };
}

function checkLangAndViewport(s: Scan, f: Findings) {
  f.points.lang = s.lang ? 4 : 0;
  if (!s.lang) f.recs.push('Declare the page language on the root element, e.g. <html lang="en">.');
  f.points.viewport = s.viewport ? 3 : 0;
  if (!s.viewport)
    f.recs.push(
      'Add <meta name="viewport" content="width=device-width, initial-scale=1"> for mobile rendering.',
    );
}

function checkSocialTags(s: Scan, f: Findings) {
  const ogWanted = ["og:title", "og:description", "og:image"];
  const ogMissing = ogWanted.filter((k) => !s.og[k]);
  f.points.open_graph = 2 * (ogWanted.length - ogMissing.length);
  if (ogMissing.length > 0) f.recs.push(`Add Open Graph tags for link previews: ${ogMissing.join(", ")}.`);
  f.points.twitter_card = s.twitter["twitter:card"] ? 3 : 0;
  if (!s.twitter["twitter:card"])
    f.recs.push('Add <meta name="twitter:card" content="summary_large_image">.');
}

function checkImages(s: Scan, f: Findings) {
  const noAlt = s.images.filter((i) => i.alt === null);
  const altCoverage = s.images.length === 0 ? 1 : (s.images.length - noAlt.length) / s.images.length;
  f.points.image_alt = Math.round(8 * altCoverage * 10) / 10;
  if (noAlt.length > 0)
    f.recs.push(
      `Add alt text to ${noAlt.length} of ${s.images.length} images (${noAlt
        .slice(0, 3)
        .map((i) => short(i.src || "(no src)", 40))
        .join(", ")}); use alt="" only for decorative ones.`,
    );
  return {
    total: s.images.length,
    missing_alt: noAlt.length,
    alt_coverage: Math.round(altCoverage * 100) / 100,
  };
}

/**
 * JSON-LD `@type`s (inside `@graph` too), how many blocks are not read, and how many of those are
 * valid JSON past the bound: the one every JSON body has (scanJson), for the page's blocks
 * together. 2 MiB of `[{},{},…]` in one block parsed to ~47 MB; a block that would take the
 * containers read past MAX_JSON_CONTAINERS, or is nested deeper than MAX_JSON_DEPTH, is not parsed.
 */
/** Distinct schema.org types listed: a 2 MiB page can name ~140,000 of them, each a line of the answer. */
export const MAX_JSON_LD_TYPES = 50;

function readJsonLd(blocks: string[]) {
  const types = new Set<string>();
  let invalid = 0;
  let oversized = 0;
  let containers = 0;
  for (const block of blocks) {
    const shape = scanJson(block);
    if (shape.depth > MAX_JSON_DEPTH || containers + shape.containers > MAX_JSON_CONTAINERS) {
      invalid++;
      oversized++;
      continue;
    }
    try {
      const data = JSON.parse(block) as unknown;
      containers += shape.containers;
      for (const item of Array.isArray(data) ? data : [data]) {
        const graph = (item as { "@graph"?: unknown })?.["@graph"];
        for (const node of Array.isArray(graph) ? graph : [item]) {
          const t = (node as { "@type"?: unknown })?.["@type"];
          for (const x of Array.isArray(t) ? t : [t])
            if (typeof x === "string" && types.size < MAX_JSON_LD_TYPES) types.add(x);
        }
      }
    } catch {
      invalid++;
    }
  }
  return { types: [...types], invalid, oversized };
}

function checkStructuredData(s: Scan, f: Findings) {
  const { types, invalid, oversized } = readJsonLd(s.jsonLd);
  f.points.structured_data = s.jsonLd.length - invalid > 0 || s.microdata > 0 ? 5 : 0;
  if (invalid > oversized)
    f.recs.push(
      `Fix ${invalid - oversized} JSON-LD block(s) that are not valid JSON; search engines ignore them.`,
    );
  if (oversized > 0)
    f.recs.push(
      `Shrink ${oversized} JSON-LD block(s): this audit reads ${MAX_JSON_CONTAINERS.toLocaleString("en-US")} arrays and objects of a page's JSON-LD at most, nested ${MAX_JSON_DEPTH} levels at most, and did not read them.`,
    );
  if (invalid === 0 && f.points.structured_data === 0)
    f.recs.push(
      "Add schema.org structured data (JSON-LD) describing the page, e.g. Article, Product or Organization.",
    );
  return { json_ld_blocks: s.jsonLd.length, invalid_json_ld: invalid, types, microdata_items: s.microdata };
}

function checkWordCount(words: number, f: Findings) {
  f.points.word_count = Math.round(10 * Math.min(1, words / MIN_WORDS) * 10) / 10;
  if (words < MIN_WORDS)
    f.recs.push(`Expand the main content: ${words} words of text; aim for at least ${MIN_WORDS}.`);
}

/** http(s) links to this site (www. ignored) and to others; fragments, mailto: and the like skipped. */
function checkLinks(s: Scan, base: URL, f: Findings) {
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
  f.points.links = (internal > 0 ? 4 : 0) + (external > 0 ? 2 : 0);
  if (internal === 0)
    f.recs.push("Link to related pages of the same site so crawlers and readers can find them.");
  if (external === 0) f.recs.push("Cite at least one relevant external source with a link.");
  return { internal, external };
}

/**
 * `robotsHeader`: the page's X-Robots-Tag response header, every value (null when it sent none).
 * `keywordsOf`: how the page's keywords are extracted when `given` has none (seo-keywords.ts).
 */
export function audit(
  html: string,
  pageUrl: string,
  given: string[] | null,
  robotsHeader: string | null = null,
  keywordsOf?: KeywordsOf,
) {
  const s = scan(html);
  const base = new URL(pageUrl);
  const f: Findings = { points: {} as Record<Check, number>, recs: [] };
  const body = countBody(s.text);
  const words = body.estimate;
  const title = checkTitle(s, f);
  const meta_description = checkDescription(s, f);
  const h1s = checkH1(s, f);
  checkHeadingOrder(s, f);
  const canonical = checkCanonical(s, base, f);
  const robots = checkRobots(s, robotsHeader, f);
  checkLangAndViewport(s, f);
  checkSocialTags(s, f);
  const images = checkImages(s, f);
  const structured_data = checkStructuredData(s, f);
  checkWordCount(words, f);
  const links = checkLinks(s, base, f);
  const h1Text = h1s.map((h) => h.text).join(" ");
  const kw = checkKeywords(s, h1Text, body, given, f.recs, keywordsOf);
  f.points.keywords = kw.points;

  return {
    keywords: kw.keywords,
    keywords_extracted: kw.extracted,
    score: Math.round(Object.values(f.points).reduce((a, b) => a + b, 0)),
    recommendations: f.recs,
    score_breakdown: f.points,
    checks: {
      title,
      meta_description,
      headings: s.headings.slice(0, 30),
      h1_count: h1s.length,
      canonical,
      ...robots,
      lang: s.lang,
      viewport: s.viewport,
      open_graph: s.og,
      twitter: s.twitter,
      images,
      structured_data,
      word_count: words,
      links,
      keywords: kw.reports,
    },
  };
}
