import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, scanJson } from "../http/json-text";
import { isRecord } from "../is-record";
import { bomEncoding, encodingOf, headerCharset } from "./charset";
import type { NetConfig } from "./config";
import { classifyHost, parseIPv4, parseIPv6, reservedIPv4, reservedIPv6 } from "./ip-ranges";
import { readCappedBytes } from "./read-capped";

/**
 * The one way out of the Worker. Two doors:
 *
 * - `fetchPublic` for URLs a caller supplied: http(s) only, no userinfo, no host that is or resolves
 *   to a reserved address (literal forms checked here, names resolved with DNS-over-HTTPS), every
 *   redirect hop checked again, capped hops, one deadline, a streamed size cap.
 * - `fetchApiJson` for the public APIs whose base URLs are operator configuration (Wikipedia,
 *   Wikidata): same deadline, size cap and user agent; not guarded, because no caller chooses them
 *   (which is also what lets tests point them at local fixture servers).
 *
 * The Workers runtime has no DNS API and resolves names itself when it fetches, so the DoH check is a
 * pre-flight: a name that answers differently a moment later (DNS rebinding) is a stated limit.
 */

/** A caller-supplied URL that may not be fetched; skills turn it into a 422 on their `url` field. */
export class UrlRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * An upstream service (Wikipedia, a fetched page) failed or timed out: the caller gets a 502 or
 * 504 with the reason, and a paid call is not settled (the answer is not 2xx).
 */
export class UpstreamError extends Error {
  constructor(
    readonly status: 502 | 504,
    message: string,
    /**
     * The fault is the caller's own target (the page it named, that page's DNS name), not a
     * service the marketplace relies on: the published reliability figures leave it out, so a
     * caller cannot set a skill's success rate by naming a failing page.
     */
    readonly target = false,
  ) {
    super(message);
  }
}

/**
 * A configured API (MediaWiki) refused what the caller typed, with HTTP 200 and `{"error": …}`: a
 * search its parser cannot read, or none at all. The fault is the caller's input: skills turn it
 * into a 422 on the field the text came from (not charged, not an upstream failure); one that is
 * not turned is still a 502 the published figures leave out (`target`).
 */
export class ApiRefusedInput extends UpstreamError {
  constructor(
    what: string,
    readonly code: string,
    readonly info: string,
  ) {
    super(502, `${what} refused the request: ${info}`, true);
  }
}

/**
 * The MediaWiki error codes a search's own text causes: an empty search (missingparam: the search
 * parameter is required and the caller's text is the only value we send empty), and CirrusSearch
 * unable to parse or run the query as written. Every other code is ours or the API's and stays a
 * 502 counted against us: badvalue, badinteger and the like name a parameter we chose (the search
 * text is a free string no value check refuses), and CirrusSearch's backend-error, too-busy-error,
 * regex-too-busy-error and query-too-long (research shortens a query to Wikipedia's 300
 * characters itself) are capacity or our own bound. CirrusSearch's other query notes (regex timed
 * out, a keyword with a bad value) are warnings beside a result, not errors.
 */
const SEARCH_TEXT_ERRORS = new Set([
  "missingparam",
  "cirrussearch-parse-error",
  "cirrussearch-regex-syntax-error",
  "cirrussearch-regex-too-complex-error",
]);
export const isSearchTextError = (code: string) => SEARCH_TEXT_ERRORS.has(code);

/**
 * The page answered with a content type its reader does not take: refused from the headers, its
 * body never read (a 3 MB PDF was downloaded to the size cap first). Skills turn it into a 422.
 */
export class ContentTypeRefused extends Error {
  constructor(readonly type: string) {
    super(`the URL serves ${type}`);
  }
}

class TooLarge extends Error {}

// Names that never denote a public host, and special-use / private-use suffixes (RFC 6761, 6762,
// 8375, 9476 and the de-facto internal ones).
const BLOCKED_NAMES = new Set(["localhost", "metadata", "instance-data", "metadata.google.internal"]);
const BLOCKED_SUFFIXES = [
  "localhost",
  "local",
  "localdomain",
  "internal",
  "intranet",
  "private",
  "corp",
  "home",
  "lan",
  "test",
  "invalid",
  "onion",
  "alt",
  "home.arpa",
  "arpa",
];

/** Parses a caller's URL: absolute, http(s), no credentials. */
export function parseTarget(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new UrlRefused("not a valid absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UrlRefused(`scheme ${url.protocol.replace(/:$/, "")} is not allowed; only http and https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new UrlRefused("URLs with credentials (userinfo before @) are not allowed");
  }
  return url;
}

const isAllowListed = (url: URL, cfg: NetConfig) =>
  cfg.allowHosts.size > 0 && cfg.allowHosts.has(url.host.toLowerCase());

/** Why the host of an already parsed URL is refused without any lookup, or null. */
export function literalRefusal(url: URL, cfg: NetConfig): string | null {
  if (isAllowListed(url, cfg)) return null;
  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  if (host === "") return "empty host";
  const ip = classifyHost(host);
  if (ip) return ip.reason ? `host ${ip.ip} is a ${ip.reason} address` : null;
  if (BLOCKED_NAMES.has(host)) return `host ${host} is a local or metadata name`;
  const suffix = BLOCKED_SUFFIXES.find((s) => host === s || host.endsWith(`.${s}`));
  if (suffix) return `host ${host} is under the non-public .${suffix} domain`;
  if (!host.includes(".")) return `host ${host} is a single-label name, not a public host`;
  return null;
}

interface DohAnswer {
  Status?: number;
  Answer?: { type?: number; data?: string }[];
}

/** Resolves a name with DNS-over-HTTPS (A and AAAA) and says why it is refused, or null. */
export async function dnsRefusal(host: string, cfg: NetConfig, signal: AbortSignal): Promise<string | null> {
  if (!cfg.doh) return null;
  const name = host.replace(/\.+$/, "");
  const lookups = await Promise.all(
    [1, 28].map(async (type) => {
      const url = new URL(cfg.doh as string);
      url.searchParams.set("name", name);
      url.searchParams.set("type", type === 1 ? "A" : "AAAA");
      let res: Response;
      try {
        res = await fetch(url.href, {
          headers: { accept: "application/dns-json", "user-agent": cfg.userAgent },
          redirect: "manual",
          signal,
        });
      } catch (e) {
        throw upstreamFrom(e, "the DNS-over-HTTPS resolver", cfg);
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new UpstreamError(502, `the DNS-over-HTTPS resolver answered HTTP ${res.status}`);
      }
      const text = await readText(res, 256 * 1024, "the DNS-over-HTTPS answer", cfg);
      try {
        return JSON.parse(text) as DohAnswer;
      } catch {
        throw new UpstreamError(502, "the DNS-over-HTTPS resolver answered something that is not JSON");
      }
    }),
  );
  const addresses: string[] = [];
  for (const answer of lookups) {
    if (answer.Status === 3) return `host ${name} does not resolve (NXDOMAIN)`;
    if (answer.Status !== 0) {
      // SERVFAIL: the name's own servers failed (broken delegation, DNSSEC): the caller's target.
      // Any other code (REFUSED, FORMERR, NOTIMP) is our resolver's doing.
      throw new UpstreamError(
        502,
        `could not check the addresses of ${name} (DNS status ${answer.Status})`,
        answer.Status === 2,
      );
    }
    for (const record of answer.Answer ?? []) {
      if ((record.type === 1 || record.type === 28) && typeof record.data === "string")
        addresses.push(record.data);
    }
  }
  if (addresses.length === 0) return `host ${name} has no A or AAAA record`;
  for (const address of addresses) {
    let reason: string | null;
    if (address.includes(":")) {
      const g = parseIPv6(address);
      reason = g ? reservedIPv6(g) : "a malformed IPv6 answer";
    } else {
      const ip = parseIPv4(address);
      reason = ip === null ? "a malformed IPv4 answer" : reservedIPv4(ip);
    }
    if (reason) return `host ${name} resolves to ${address}, a ${reason} address`;
  }
  return null;
}

/** Checks one hop: literal rules, then (for names) DNS. Throws UrlRefused. */
export async function guardUrl(url: URL, cfg: NetConfig, signal: AbortSignal): Promise<void> {
  const literal = literalRefusal(url, cfg);
  if (literal) throw new UrlRefused(literal);
  if (isAllowListed(url, cfg) || classifyHost(url.hostname)) return;
  const dns = await dnsRefusal(url.hostname.toLowerCase(), cfg, signal);
  if (dns) throw new UrlRefused(dns);
}

export interface FetchedDoc {
  /** The URL of the final hop. */
  url: string;
  status: number;
  contentType: string;
  /**
   * The X-Robots-Tag header, every value (repeated headers joined with ", "), or null: a page's
   * indexing rules may be sent there instead of (or beside) its robots meta tag.
   */
  robotsTag: string | null;
  text: string;
  redirects: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Longest delay of a meta refresh followed as a redirect: a longer one is a page meant to be read. */
const REFRESH_MAX_SECONDS = 5;

// A comment, a head element whose content is no markup (a <meta> in it is text: for <noscript>,
// to a browser that runs scripts; a <template>'s is inert), or a tag. `[^<>]` keeps every try
// to the next "<", so a page of unclosed "<a" is read in linear time; a tag's attributes start
// with a space or "/", which its name cannot hold, so one long unclosed name ("<a" and 2 MB of
// letters) has one way to be split, not one per letter (that was quadratic: 80 k letters 1.5 s).
const HEAD_TOKEN =
  /<!--[\s\S]*?(?:-->|$)|<(script|style|noscript|template|title)\b[^<>]*>[\s\S]*?(?:<\/\1\s*>|$)|<(\/?)([a-z][^\s/<>]*)((?:[\s/][^<>]*)?)>/giy;
// The other start tags the head holds; any tag else (<body>, <h1>, </head>) ends it.
const HEAD_TAGS = new Set(["html", "head", "meta", "link", "base", "basefont", "bgsound"]);

// The two attributes a refresh is read from, compiled once: the scan runs on every page fetched.
const attributePattern = (name: string) =>
  new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, "i");
const ATTRIBUTES = { "http-equiv": attributePattern("http-equiv"), content: attributePattern("content") };
const attribute = (attrs: string, name: keyof typeof ATTRIBUTES) => {
  const m = ATTRIBUTES[name].exec(attrs);
  return m ? decodeAttribute(m[1] ?? m[2] ?? m[3] ?? "") : null;
};

/** The character references a URL in an attribute usually holds (`&amp;` most of all). */
const decodeAttribute = (v: string) =>
  v.replace(/&(?:amp|quot|apos|lt|gt|#(\d+)|#x([\da-f]+));?/gi, (ref, dec, hex) => {
    if (dec || hex) {
      const code = dec ? Number(dec) : Number.parseInt(hex, 16);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ref;
    }
    const named: Record<string, string> = { amp: "&", quot: '"', apos: "'", lt: "<", gt: ">" };
    return named[ref.slice(1).replace(/;$/, "").toLowerCase()] ?? ref;
  });

/**
 * The URL an HTML page's head sends the reader to with `<meta http-equiv="refresh" content="N;
 * url=…">` within REFRESH_MAX_SECONDS, or null. Only a meta of the head as parsed counts: not one
 * in a comment, a script's text or <noscript>, nor one past the head. The content is read as the
 * HTML standard's declarative refresh reads it (`0.5, URL = '…'` too); no URL is a refresh of the
 * page itself, no redirect.
 */
export function metaRefresh(html: string): string | null {
  for (let i = html.indexOf("<"); i >= 0 && i < html.length; i = html.indexOf("<", i)) {
    HEAD_TOKEN.lastIndex = i;
    const m = HEAD_TOKEN.exec(html);
    if (!m) {
      i++;
      continue;
    }
    i = HEAD_TOKEN.lastIndex;
    const [, raw, close, tag, attrs] = m;
    if (raw !== undefined || tag === undefined) continue;
    const name = tag.toLowerCase();
    if (close) {
      if (name === "head") return null;
      continue;
    }
    if (!HEAD_TAGS.has(name)) return null;
    if (
      name !== "meta" ||
      attribute(attrs ?? "", "http-equiv")
        ?.trim()
        .toLowerCase() !== "refresh"
    )
      continue;
    const content = attribute(attrs ?? "", "content");
    if (content === null) continue;
    const r = /^\s*(\d*)(\.[\d.]*)?(?:[\s;,]+(?:url\s*=\s*)?(.*))?$/is.exec(content);
    if (!r || (r[1] === "" && r[2] === undefined) || Number(r[1] || 0) > REFRESH_MAX_SECONDS) return null;
    let target = (r[3] ?? "").trim();
    const quote = target[0];
    if (quote === '"' || quote === "'") {
      const end = target.indexOf(quote, 1);
      target = target.slice(1, end < 0 ? undefined : end);
    }
    return target === "" ? null : target;
  }
  return null;
}

/**
 * Fetches a caller-supplied URL under the SSRF policy. Throws UrlRefused or UpstreamError, or
 * ContentTypeRefused when the answer names a type (its essence, lowercased) `reads` does not take.
 */
export async function fetchPublic(
  raw: string,
  cfg: NetConfig,
  accept: string,
  reads: (type: string) => boolean = () => true,
): Promise<FetchedDoc> {
  const signal = AbortSignal.timeout(cfg.timeoutMs);
  // Time the DNS-over-HTTPS checks took (our resolver, not the caller's page): a page that runs
  // out of the shared deadline after the resolver used half of it is not blamed on the caller.
  let resolverMs = 0;
  const pageFault = () => resolverMs < cfg.timeoutMs / 2;
  let url = parseTarget(raw);
  for (let hop = 0; ; hop++) {
    const checkStart = Date.now();
    try {
      await guardUrl(url, cfg, signal);
      resolverMs += Date.now() - checkStart;
    } catch (e) {
      if (e instanceof UrlRefused && hop > 0)
        throw new UrlRefused(`redirect to ${url.href} refused: ${e.reason}`);
      throw e;
    }
    let res: Response;
    try {
      res = await fetch(url.href, {
        method: "GET",
        redirect: "manual",
        headers: { "user-agent": cfg.userAgent, accept },
        signal,
      });
    } catch (e) {
      throw upstreamFrom(e, "the page", cfg, pageFault());
    }
    const location = res.headers.get("location");
    if (REDIRECTS.has(res.status) && location !== null) {
      await res.body?.cancel();
      url = nextHop(location, url, hop, cfg);
      continue;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new UpstreamError(502, `the page answered HTTP ${res.status}`, true);
    }
    const contentType = res.headers.get("content-type") ?? "";
    const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
    if (type !== "" && !reads(type)) {
      await res.body?.cancel();
      throw new ContentTypeRefused(type);
    }
    // HTML (or a page that names no type, which the skills read as HTML when it looks like it)
    // may declare its encoding in a <meta> tag; other types only in the header or a BOM.
    const markup: Markup =
      type === "" || type === "text/html"
        ? "html"
        : type === "text/xml" || type === "application/xml" || type.endsWith("+xml")
          ? "xml"
          : null;
    const text = await readText(res, cfg.maxBytes, "the page", cfg, pageFault(), markup);
    // A "Redirecting…" page sends a browser on at once: one more hop, checked and counted as a
    // Location is (and read only for HTML: the analysis of the shell would be of nothing).
    const refresh = markup === "html" ? refreshTarget(text, url) : null;
    if (refresh !== null) {
      url = nextHop(refresh, url, hop, cfg);
      continue;
    }
    const robotsTag = res.headers.get("x-robots-tag");
    return { url: url.href, status: res.status, contentType, robotsTag, text, redirects: hop };
  }
}

/** `location` resolved against the page at `url`, as the next hop (within cfg.maxRedirects). Throws UrlRefused. */
function nextHop(location: string, url: URL, hop: number, cfg: NetConfig): URL {
  if (hop >= cfg.maxRedirects) throw new UrlRefused(`more than ${cfg.maxRedirects} redirects`);
  let next: string;
  try {
    next = new URL(location, url).href;
  } catch {
    throw new UrlRefused("redirect to an invalid URL");
  }
  try {
    return parseTarget(next);
  } catch (e) {
    if (e instanceof UrlRefused) throw new UrlRefused(`redirect to ${next} refused: ${e.reason}`);
    throw e;
  }
}

/**
 * Where a meta refresh at `url` sends the reader, or null: none, a URL a browser cannot read (it
 * stays), or the page itself (a reload, fragment aside).
 */
function refreshTarget(html: string, url: URL): string | null {
  const refresh = metaRefresh(html);
  if (refresh === null) return null;
  let target: URL;
  try {
    target = new URL(refresh, url);
  } catch {
    return null;
  }
  // A scheme no browser follows as a refresh (javascript:, data:, mailto:): the page stays, as it
  // does for a reader; an http(s) target still goes through the redirect guard.
  if (target.protocol !== "http:" && target.protocol !== "https:") return null;
  const unhashed = (u: URL) => u.href.replace(/#.*$/, "");
  return unhashed(target) === unhashed(url) ? null : target.href;
}

/**
 * GETs a configured public API (not caller-chosen) and parses its JSON. Throws UpstreamError, or
 * ApiRefusedInput for a MediaWiki error whose code `callerFault` says the caller's text caused.
 */
export async function fetchApiJson(
  base: string,
  params: Record<string, string>,
  cfg: NetConfig,
  what: string,
  {
    callerFault,
    maxBytes = 8 * 1024 * 1024,
  }: { callerFault?: (code: string) => boolean; maxBytes?: number } = {},
): Promise<unknown> {
  const url = new URL(base);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  let res: Response;
  try {
    res = await fetch(url.href, {
      headers: { "user-agent": cfg.userAgent, accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(cfg.timeoutMs),
    });
  } catch (e) {
    throw upstreamFrom(e, what, cfg);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new UpstreamError(502, `${what} answered HTTP ${res.status}`);
  }
  const text = await readText(res, maxBytes, what, cfg);
  // The bound every JSON entry point has (scanJson) before anything is parsed: 8 MiB of `{}`
  // parse to far more memory than the isolate has, whoever serves them.
  const shape = scanJson(text);
  if (shape.depth > MAX_JSON_DEPTH || shape.containers > MAX_JSON_CONTAINERS)
    throw new UpstreamError(
      502,
      `${what} answered JSON nested deeper than ${MAX_JSON_DEPTH} levels or of more than ${MAX_JSON_CONTAINERS} arrays and objects`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UpstreamError(502, `${what} answered something that is not JSON`);
  }
  // Every API read through here answers a JSON object; anything else is a broken or hostile
  // upstream, and the skills' readers may then assume an object at the top.
  if (!isRecord(json)) throw new UpstreamError(502, `${what} answered JSON that is not an object`);
  // MediaWiki reports a refused request with HTTP 200 and an `error` object.
  if (json.error) {
    const error = isRecord(json.error) ? json.error : {};
    const code = typeof error.code === "string" ? error.code : "";
    const info = typeof error.info === "string" ? error.info : code || "unknown";
    if (code !== "" && callerFault?.(code)) throw new ApiRefusedInput(what, code, info);
    throw new UpstreamError(502, `${what} reported an error: ${info}`);
  }
  return json;
}

function upstreamFrom(e: unknown, what: string, cfg: NetConfig, target = false): Error {
  if (e instanceof UpstreamError || e instanceof UrlRefused) return e;
  const name = e instanceof Error ? e.name : "";
  if (name === "TimeoutError" || name === "AbortError") {
    return new UpstreamError(504, `${what} did not answer within ${cfg.timeoutMs} ms`, target);
  }
  if (e instanceof TooLarge) return new UpstreamError(502, e.message, target);
  return new UpstreamError(502, `${what} could not be reached`, target);
}

/** Reads a body as text (`decodeBody`), refusing more than `max` bytes while it streams. */
async function readText(
  res: Response,
  max: number,
  what: string,
  cfg: NetConfig,
  target = false,
  markup: Markup = null,
): Promise<string> {
  const tooLarge = () => new TooLarge(`${what} is larger than ${Math.round(max / 1024)} KiB`);
  try {
    const declared = Number(res.headers.get("content-length") ?? "");
    if (Number.isFinite(declared) && declared > max) {
      await res.body?.cancel();
      throw tooLarge();
    }
    const bytes = await readCappedBytes(res, max, tooLarge);
    return await decodeBody(bytes, res.headers.get("content-type") ?? "", markup);
  } catch (e) {
    throw upstreamFrom(e, what, cfg, target);
  }
}

/** How a body declares its encoding beyond a BOM and the header: HTML's <meta>, XML's declaration. */
export type Markup = "html" | "xml" | null;

/**
 * A body's text in the encoding a browser would pick: a byte order mark; else the Content-Type
 * charset, if it names an encoding; else, for HTML, a <meta> declaration in the first 1024 bytes
 * (WHATWG "prescan"), for XML its declaration; else UTF-8 (the spec leaves the last resort to the
 * locale: ours is UTF-8). A windows-1252 or Shift_JIS page that said so only in its <meta> was
 * read as broken UTF-8. The sniffing is jsdom's (html-encoding-sniffer); TextDecoder decodes.
 */
export async function decodeBody(bytes: Uint8Array, contentType: string, markup: Markup): Promise<string> {
  const header = headerCharset(contentType) ?? undefined;
  const encoding =
    markup === null
      ? (bomEncoding(bytes) ?? encodingOf(header) ?? "utf-8")
      : (encodingOf(
          (await sniffer())(bytes, {
            xml: markup === "xml",
            transportLayerEncodingLabel: header,
            defaultEncoding: "UTF-8",
          }),
        ) ?? "utf-8");
  // A decoder of the BOM's encoding drops the BOM itself.
  return new TextDecoder(encoding).decode(bytes);
}

/** The encoding an HTML page's first 1024 bytes declare in a <meta>, or null. */
export async function declaredInMeta(bytes: Uint8Array): Promise<string | null> {
  return encodingOf((await sniffer())(bytes, { defaultEncoding: "none" }));
}

// Loaded with the first page read, not at start-up (the fetcher is in the start-up graph).
const sniffer = async () => (await import("html-encoding-sniffer")).default;
