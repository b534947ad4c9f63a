import type { Context } from "hono";
import { accepts } from "hono/accepts";

/**
 * Whether the client asks for an HTML page rather than JSON: Hono's Accept parser, so q-values and
 * case count (RFC 9110 12.5.1, 8.3.1): `TEXT/HTML` is HTML, `text/html;q=0` is not, and
 * `application/json, text/html;q=0.1` prefers JSON. A bare or missing Accept (`*\/*`, curl's) is
 * JSON, as is a tie broken by the header's order in favour of JSON. A substring test of
 * "text/html" read all three of those the other way.
 */
export const wantsHtml = (c: Context): boolean =>
  accepts(c, {
    header: "Accept",
    supports: ["text/html", "application/json"],
    default: "application/json",
  }) === "text/html";
