/**
 * What a log line, an answer or a published document may say of a credential-bearing value.
 * Lowest layer (config.ts reads it): no imports.
 */

/**
 * A URL for a log line: its scheme and host only. RPC and facilitator providers put their API key
 * in the path (`/v2/<key>`), the query (`?apikey=`) or the userinfo, so any of them becomes
 * `/<redacted>`; the origin stays, so the line still says which provider failed.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const more = u.username || u.password || u.pathname.length > 1 || u.search || u.hash;
    return more ? `${u.origin}/<redacted>` : u.origin;
  } catch {
    return "<redacted URL>";
  }
}

/**
 * A path segment that names an endpoint rather than carrying a key: a word (letters, hyphens) of at
 * most 15 characters, ending in at most 3 digits ("facilitator", "platform", "v2", "x402"). Keys are
 * longer or mix letters and digits (Alchemy's 32, a UUID's 36, "PATHKEY0123456789").
 */
const PLAIN_SEGMENT = /^(?=.{1,15}$)[A-Za-z][A-Za-z-]*\d{0,3}$/;
const plainPath = (pathname: string) => pathname.split("/").every((s) => s === "" || PLAIN_SEGMENT.test(s));

/**
 * A URL fit to publish (the facilitator in /api/partners): without userinfo, query or fragment,
 * where a provider's key rides, and with its path only when every segment is a plain word (the
 * known facilitators' `/facilitator`, `/platform/v2/x402`); otherwise the origin alone, as a key
 * in the path (`/v2/<key>`) is the only place one works for @x402/core (`${url}/verify`). Empty
 * when it is no URL.
 */
export function publishableUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!plainPath(u.pathname)) return u.origin;
    return `${u.origin}${u.pathname === "/" && !url.endsWith("/") ? "" : u.pathname}`;
  } catch {
    return "";
  }
}

/**
 * The parts of a URL that may be a provider's key, each to be hidden wherever an error text quotes
 * it (a facilitator's "Cannot GET /v2/<key>/supported"): userinfo, query values and path segments
 * that are not plain words, of 8 characters or more (shorter ones are no key, and would hide
 * ordinary words). Empty when it is no URL.
 */
export function keyPieces(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const pieces = [u.username, u.password, ...u.pathname.split("/"), ...[...u.searchParams].flat()];
  if (u.search) pieces.push(u.search.slice(1));
  return pieces.filter((p) => p.length >= 8 && !PLAIN_SEGMENT.test(p));
}

/** Whether publishing or logging the URL as it is would show a key (keyPieces, above). */
export const keyedUrl = (url: string) => {
  try {
    const u = new URL(url);
    return Boolean(u.username || u.password || u.search || u.hash) || !plainPath(u.pathname);
  } catch {
    return true;
  }
};

/**
 * A Checkout session id for a log line: its first 20 characters (`cs_live_` and 12 of its own).
 * The whole id is a bearer capability until the key is shown: the success page with it reveals
 * the pack's key once (payments/key-reveal.ts). The prefix still finds the row:
 * `SELECT id FROM checkout_sessions WHERE id LIKE '<prefix>%'`.
 */
export const sessionRef = (id: string) => (id.length > 20 ? `${id.slice(0, 20)}…` : id);
