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
 * Whether a piece of a URL (a path segment, a query value) may be a provider's key. Keys are long
 * or mix letters and digits (Alchemy's 32, a UUID's 36, "PATHKEY0123456789"); what names an
 * endpoint or a network is words of at most 15 characters, each ending in at most 3 digits ("v2",
 * "x402-facilitator", "payment_facilitator", "eip155:8453"), or a number (a chain id, an amount,
 * a block number, up to 15 digits: hiding one would mangle every figure equal to it in a line).
 * Plain words joined into 16 or more letters and digits with 4 or more digits among them
 * ("ABCDEF-123456-abcdef") are a key too. Shorter than 8 characters is no key either, and would
 * hide ordinary words.
 */
const PLAIN_WORD = /^(?=.{0,15}$)[A-Za-z]*\d{0,3}$|^\d{1,15}$/;
const keyLike = (piece: string) =>
  piece.length >= 8 &&
  (!piece.split(/[-_.:~]/).every((w) => PLAIN_WORD.test(w)) ||
    (piece.replace(/[^A-Za-z0-9]/g, "").length >= 16 && piece.replace(/\D/g, "").length >= 4));
const plainPath = (pathname: string) => !pathname.split("/").some(keyLike);

/**
 * A URL fit to publish (the facilitator in /api/partners): without userinfo, query or fragment,
 * where a provider's key rides, and with its path only when no segment is key-like (the known
 * facilitators' `/facilitator`, `/platform/v2/x402`, a self-hosted `/x402-facilitator`); otherwise
 * the origin alone, as a key in the path (`/v2/<key>`) is the only place one works for @x402/core
 * (`${url}/verify`). Empty when it is no URL.
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

/** A query parameter whose value is a credential whatever it looks like (`apikey`, `access_token`). */
const CREDENTIAL_NAME = /key|token|secret|auth|pass|sig/i;

/**
 * The parts of a URL that may be a provider's key, each to be hidden wherever an error text quotes
 * it (a facilitator's "Cannot GET /v2/<key>/supported"): the userinfo, the values of credential
 * parameters, and any other query value, bare query name (`?<key>`) or path segment that is key-like
 * (above). Never the name of a parameter that has a value (a key sent as `?<key>=1` is missed) nor
 * the query string whole: those are words ("access_token", "chain_id") a line needs. Pieces
 * shorter than 8 characters are left: no key is, and they would hide ordinary words. Empty when it
 * is no URL.
 */
export function keyPieces(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const values = [...u.searchParams].map(([name, value]) => (CREDENTIAL_NAME.test(name) ? value : ""));
  const pieces = [u.username, u.password, ...values].filter((p) => p.length >= 8);
  // A bare query name (`?<key>`, `&<key>&`) is a value in all but name.
  const keyLikeValues = [...u.searchParams]
    .flatMap(([name, value]) => (value ? [value] : [name]))
    .filter(keyLike);
  return [...new Set([...pieces, ...keyLikeValues, ...u.pathname.split("/").filter(keyLike)])];
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
