/**
 * The security headers of every response the Worker makes: pages, JSON, text, the HTML 402 page
 * x402 shows browsers, errors, 404/405, redirects, preflights. The values are helmet's
 * (hono/secure-headers) defaults with the pages' strict CSP (same-origin scripts, styles, images
 * and requests; nothing inline or external; never framed), written out so the per-request work is
 * one list of header sets. Which of them an answer carries depends on what a browser does with it
 * (docs/WEB.md, "Security headers"): a document gets all of them; an answer no browser renders as
 * a document (JSON, plain text, an event stream) only those that act on any answer, since each
 * header sent costs every answer CPU (docs/PERFORMANCE.md, "Stop 37: headers").
 */
type Header = readonly [string, string];

/** Act on any answer, whatever it holds: every answer carries them. */
const ANY_ANSWER: readonly Header[] = [
  ["Strict-Transport-Security", "max-age=15552000; includeSubDomains"],
  // 422 bodies echo input: a browser must never sniff JSON or text as HTML or script.
  ["X-Content-Type-Options", "nosniff"],
  // DENY matches frame-ancestors 'none' for browsers that only read X-Frame-Options.
  ["X-Frame-Options", "DENY"],
  // One policy for every answer: the full one costs what frame-ancestors 'none' alone does (stop
  // 37), and a JSON or text answer a browser shows as a document runs under it too.
  [
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  ],
];

/**
 * A redirect's Referrer-Policy sets the referrer policy of the request it leads to (Fetch: "set
 * request's referrer policy on redirect"), so a 3xx keeps it whatever its body; checkout URLs
 * carry session ids.
 */
const REFERRER_POLICY: Header = ["Referrer-Policy", "no-referrer"];

/** Act only on a document (a page and what it loads, links, opens or frames). */
const DOCUMENT_ONLY: readonly Header[] = [
  ["Cross-Origin-Opener-Policy", "same-origin"],
  ["Origin-Agent-Cluster", "?1"],
  REFERRER_POLICY,
  ["X-DNS-Prefetch-Control", "off"],
  ["X-Download-Options", "noopen"],
  ["X-Permitted-Cross-Domain-Policies", "none"],
  ["X-XSS-Protection", "0"],
  // No page needs a camera, microphone, location or payment-request API (the wallet is EIP-1193).
  ["Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()"],
];

/**
 * Media types a browser never renders as an HTML, XML or SVG document (it shows them as text, reads
 * them as data or downloads them): the ones the app sends. Anything else, no Content-Type included,
 * is treated as a document.
 */
export const NON_DOCUMENT_TYPES: ReadonlySet<string> = new Set([
  "application/json",
  "application/did+json",
  "text/plain",
  "text/event-stream",
  "text/csv",
]);

/** What other origins may read by CORS must not be refused to their no-cors loads either. */
const corp = (cors: boolean): Header => [
  "Cross-Origin-Resource-Policy",
  cors ? "cross-origin" : "same-origin",
];

const sets = (cors: boolean) => ({
  document: [corp(cors), ...ANY_ANSWER, ...DOCUMENT_ONLY],
  data: [corp(cors), ...ANY_ANSWER],
  redirect: [corp(cors), ...ANY_ANSWER, REFERRER_POLICY],
});
const SAME_ORIGIN = sets(false);
const CROSS_ORIGIN = sets(true);

/** The names of the headers only a document carries (for tests and docs). */
export const DOCUMENT_ONLY_HEADERS: readonly string[] = DOCUMENT_ONLY.filter(
  (h) => h !== REFERRER_POLICY,
).map(([name]) => name);

/** Whether an answer of this Content-Type is one no browser renders as a document. */
export function isNonDocument(contentType: string | null): boolean {
  // A browser reads a comma-separated value by its last valid type (Fetch, "extract a MIME type"):
  // `application/json, text/html` is HTML to it.
  if (!contentType || contentType.includes(",")) return false;
  const semi = contentType.indexOf(";");
  return NON_DOCUMENT_TYPES.has((semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase());
}

/** The security headers of an answer, by its final status and Content-Type and whether its path is CORS. */
export function securityHeaders(
  status: number,
  contentType: string | null,
  cors: boolean,
): readonly Header[] {
  const set = cors ? CROSS_ORIGIN : SAME_ORIGIN;
  if (!isNonDocument(contentType)) return set.document;
  return status >= 300 && status < 400 ? set.redirect : set.data;
}
