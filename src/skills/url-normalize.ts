import * as z from "zod";
import { InputError } from "../http/validation";
import { sortByCodePoints } from "./lib/code-points";
import { isTrackingParam } from "./lib/tracking-params";
import { defineSkill } from "./types";

const HAS_SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
/**
 * Text that reaches "://" before any "/", "?" or "#" meant a scheme: when that scheme is not one
 * ("\u200bhttp://a.b/", "h\u00adttp://a.b/", "1http://a.b/"), putting https:// in front read the
 * would-be scheme as the host (the IDNA mapping drops the invisible characters): host "http", path
 * "//a.b/". WHATWG refuses such text (a relative URL with no base), and so does this skill.
 */
const MEANT_A_SCHEME = /^[^/?#:]*:\/\//;

export function trimTrailingDots(host: string): string {
  let end = host.length;
  while (end > 0 && host.charCodeAt(end - 1) === 0x2e) end--;
  return host.slice(0, end);
}

/**
 * One set, stripped from both ends in any order: what WHATWG strips (C0 controls and space) and what
 * trim() strips (the Unicode spaces, line separators and U+FEFF: a BOM or no-break space pasted
 * along with a URL). Running trim() first and then the C0 loop made the answer depend on the order:
 * "\u0001\u00a0http://a.b/" was refused and "\u00a0\u0001http://a.b/" was not. /\s/ is exactly
 * trim()'s set (ECMA-262 WhiteSpace and LineTerminator).
 */
const isEdgeSpace = (text: string, i: number) => text.charCodeAt(i) <= 0x20 || /\s/.test(text[i] as string);

/**
 * WHATWG's first step, done before the scheme is looked for: strip the edges (isEdgeSpace) and drop
 * every tab and newline. Otherwise "ht\ttp://a.b/" had no scheme to our test and became
 * https://ht%09tp//a.b/, host "http". Loops, not /\s+$/ (quadratic on a long run of spaces followed
 * by something else).
 */
function preprocess(input: string): string {
  let start = 0;
  let end = input.length;
  while (start < end && isEdgeSpace(input, start)) start++;
  while (end > start && isEdgeSpace(input, end - 1)) end--;
  return input.slice(start, end).replace(/[\t\n\r]/g, "");
}

function parse(input: string): URL {
  const trimmed = preprocess(input);
  // The WHATWG parser writes a lone surrogate (JSON allows "\ud800") as %EF%BF%BD, the escape of
  // U+FFFD: the canonical URL would name a resource the caller did not, silently. Refused as
  // sha256 refuses text UTF-8 cannot encode.
  if (!trimmed.isWellFormed()) {
    const error = "lone surrogate, which UTF-8 cannot encode";
    throw InputError.at(["url"], `Input should be a valid URL, ${error}`, input, "url_parsing", { error });
  }
  if (!HAS_SCHEME.test(trimmed) && MEANT_A_SCHEME.test(trimmed)) {
    const error = "relative URL without a base";
    throw InputError.at(["url"], `Input should be a valid URL, ${error}`, input, "url_parsing", { error });
  }
  // "example.com/path" is what people paste; read it as a web address rather than refuse it.
  // "localhost:8080/x" is a host and port, not a scheme; "http:1.2.3.4/x" is http (as pydantic reads it).
  const candidate =
    HAS_SCHEME.test(trimmed) && (/^https?:/i.test(trimmed) || !/^[^:/]+:\d/.test(trimmed))
      ? trimmed
      : `https://${trimmed}`;
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    const error = whyUnparsable(candidate);
    throw InputError.at(["url"], `Input should be a valid URL, ${error}`, input, "url_parsing", { error });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw InputError.at(["url"], "URL scheme should be 'http' or 'https'", input, "url_scheme", {
      expected_schemes: "'http' or 'https'",
    });
  }
  // Every trailing dot, so normalizing the result again changes nothing. A loop, not /\.+$/:
  // that regex retries from every dot of "a....b" and is quadratic (8,000 dots took 57 ms).
  const host = trimTrailingDots(url.hostname);
  // A host of dots only ("http://.../") has nothing left once its trailing dots are trimmed.
  if (!host) {
    throw InputError.at(["url"], "Input should be a valid URL, empty host", input, "url_parsing", {
      error: "empty host",
    });
  }
  // "1.2.3.256.." is a domain to WHATWG (its last label is empty), but trimmed it ends in a number
  // and is read as an IPv4 address that does not parse: the setter would silently keep the dots,
  // and the canonical URL would keep what the docs say is dropped. Refused as "http://1.2.3.256/" is.
  if (!URL.canParse(`http://${host}/`)) {
    const error = whyUnparsable(`http://${host}/`);
    throw InputError.at(["url"], `Input should be a valid URL, ${error}`, input, "url_parsing", { error });
  }
  url.hostname = host;
  return url;
}

/**
 * Why the WHATWG parser refused a URL, in the words pydantic's parser (Rust's `url` crate) uses for
 * the same input (checked against pydantic 2.13), so a client reads "invalid port number" for
 * `:99999` rather than a generic parse failure. Its text is already preprocessed (tabs and
 * newlines dropped, as both parsers do). Both skip any run of slashes after an http(s) scheme, and
 * report an empty host, then the host's fault, then the port's.
 */
function whyUnparsable(text: string): string {
  const scheme = HAS_SCHEME.exec(text);
  const special = scheme && /^https?$/i.test(scheme[1] ?? "");
  const rest = scheme ? text.slice(scheme[0].length) : text;
  const afterSlashes = special ? rest.replace(/^[/\\]*/, "") : /^\/\//.test(rest) ? rest.slice(2) : undefined;
  if (afterSlashes === undefined) return "relative URL without a base";
  const authority = /^[^/?#\\]*/.exec(afterSlashes)?.[0] ?? "";
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  if (hostPort.startsWith("[")) {
    const ipv6 = /^\[[^\]]*\](?::(.*))?$/.exec(hostPort);
    if (!ipv6 || !URL.canParse(`http://${hostPort.slice(0, hostPort.indexOf("]") + 1)}/`))
      return "invalid IPv6 address";
    return ipv6[1] !== undefined && !validPort(ipv6[1]) ? "invalid port number" : "invalid IPv6 address";
  }
  const colon = hostPort.indexOf(":");
  const host = colon < 0 ? hostPort : hostPort.slice(0, colon);
  if (!host) return "empty host";
  if (!URL.canParse(`http://${host}/`)) {
    // A forbidden code point makes it a bad domain whatever its labels; otherwise a host whose
    // last label is a number is read as an IPv4 address (WHATWG and the url crate).
    if (forbiddenInHost(host)) return "invalid international domain name";
    const last = trimTrailingDots(host).split(".").pop() ?? "";
    return /^(?:\d+|0x[0-9a-f]*)$/i.test(last) ? "invalid IPv4 address" : "invalid international domain name";
  }
  if (colon >= 0 && !validPort(hostPort.slice(colon + 1))) return "invalid port number";
  return "invalid international domain name";
}

/** WHATWG's forbidden domain code points: controls, space, DEL and the URL delimiters. */
const forbiddenInHost = (host: string) => {
  for (let i = 0; i < host.length; i++) {
    const c = host.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f || "#%/:<>?@[\\]^|".includes(host[i] as string)) return true;
  }
  return false;
};

const validPort = (port: string) => port === "" || (/^\d+$/.test(port) && Number(port) <= 65535);

function decodesCleanly(component: string): boolean {
  try {
    decodeURIComponent(component.replaceAll("+", " "));
    return true;
  } catch {
    return false;
  }
}

export function normalizeUrl(input: string) {
  const url = parse(input);
  // WHATWG parsing already dropped http's :80; switching to https drops :443. An explicit :80 on
  // an https URL names another server and stays.
  url.protocol = "https:";
  url.hash = "";

  // Each parameter is re-encoded as application/x-www-form-urlencoded, except one whose escapes do
  // not decode (%F0%9F, an incomplete UTF-8 sequence): decoding would turn them into U+FFFD and the
  // canonical URL would name another resource, so it is kept as written.
  const kept: { key: string; value: string; raw?: string }[] = [];
  let stripped = false;
  for (const raw of url.search.slice(1).split("&")) {
    if (raw === "") continue;
    // Read after a "&": URLSearchParams drops one leading "?" of the string it is given, so the
    // piece "?id=5" of "??id=5" would be the key "id" (WHATWG's searchParams reads "?id").
    const [[key, value] = ["", ""]] = new URLSearchParams(`&${raw}`);
    if (isTrackingParam(key)) stripped = true;
    else kept.push({ key, value, ...(decodesCleanly(raw) ? {} : { raw }) });
  }
  // Stable sort: repeated keys keep their relative order, which can carry meaning.
  sortByCodePoints(kept, (p) => p.key);
  const search = kept.map((p) => p.raw ?? new URLSearchParams([[p.key, p.value]]).toString()).join("&");
  // The setter drops one leading "?" as well: a first piece kept as written may start with one.
  url.search = search && `?${search}`;

  const query = new Map<string, string | string[]>();
  for (const { key: k, value: v } of kept) {
    const prev = query.get(k);
    query.set(k, prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v]);
  }
  return {
    canonical: url.href,
    scheme: "https",
    host: url.hostname,
    port: url.port ? Number(url.port) : null,
    path: url.pathname,
    query: Object.fromEntries(query),
    stripped_tracking: stripped,
  };
}

export const urlNormalize = defineSkill({
  id: "url_normalize",
  name: "URL normalize",
  category: "web_utils",
  price_usd: 0.005,
  kind: "utility",
  description:
    "Normalize a URL with WHATWG parsing: force https, lowercase the host, drop the default port and fragment, resolve dot segments, strip tracking parameters (utm_*, gclid, fbclid, ...) and sort the query. Returns the canonical URL and its components. Deterministic and offline.",
  input: () =>
    z.object({
      url: z
        .string()
        .min(1)
        .max(8000)
        .meta({ description: "URL to normalize; a missing scheme reads as https." }),
      options: z.looseObject({}).nullable().default(null).meta({ description: "Free-form; reserved." }),
    }),
  output: () =>
    z.object({
      canonical: z.string().meta({ description: "The normalized URL." }),
      scheme: z.literal("https"),
      host: z.string(),
      port: z.int().min(0).max(65535).nullable().meta({
        description: "Null for the default port (0 is a port WHATWG and the contract's reference accept).",
      }),
      path: z.string(),
      query: z
        .record(z.string(), z.union([z.string(), z.array(z.string())]))
        .meta({ description: "Kept parameters, sorted; a repeated name maps to its values in order." }),
      stripped_tracking: z.boolean().meta({ description: "Whether tracking parameters were removed." }),
    }),
  example_request: { url: "HTTP://Example.COM:80/a/../b/?utm_source=x&z=2&a=1#top" },
  example_response: {
    skill: "url_normalize",
    ok: true,
    canonical: "https://example.com/b/?a=1&z=2",
    scheme: "https",
    host: "example.com",
    port: null,
    path: "/b/",
    query: { a: "1", z: "2" },
    stripped_tracking: true,
  },
  run: ({ url }) => normalizeUrl(url),
});
