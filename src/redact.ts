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
 * A URL fit to publish (the facilitator in /api/partners): without userinfo, query or fragment,
 * where a provider's key rides; the path stays, as the endpoint needs it. Empty when it is no URL.
 */
export function publishableUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname === "/" && !url.endsWith("/") ? "" : u.pathname}`;
  } catch {
    return "";
  }
}

/**
 * A Checkout session id for a log line: its first 20 characters (`cs_live_` and 12 of its own).
 * The whole id is a bearer capability until the key is shown: the success page with it reveals
 * the pack's key once (payments/key-reveal.ts). The prefix still finds the row:
 * `SELECT id FROM checkout_sessions WHERE id LIKE '<prefix>%'`.
 */
export const sessionRef = (id: string) => (id.length > 20 ? `${id.slice(0, 20)}…` : id);
